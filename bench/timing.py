"""The one timing helper every benchmark uses: median wall time of repeated calls, in milliseconds."""

from __future__ import annotations

import statistics
import time


def median_ms(fn, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)
