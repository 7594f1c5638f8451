"""Benchmarks: `make bench` (or `python -m bench`). Medians of repeated runs, printed as a table.

Speed is measured here, never in timed unit tests.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_ms(fn, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    from core import catalog as catalog_mod
    from core import memory, params

    def cold_catalog():
        catalog_mod._load.cache_clear()
        catalog_mod.load_catalog()

    cat = catalog_mod.load_catalog()

    def all_counts():
        for m in cat.models.values():
            params.total_params(m)
            params.active_params(m)
            memory.kv_bytes_per_token(m)

    rows = [
        ("catalog load, cold (24 models, 15 GPUs)", median_ms(cold_catalog)),
        ("params + KV for every model", median_ms(all_counts)),
    ]

    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from streamlit.testing.v1 import AppTest

    pages = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]
    for page in pages:
        at = AppTest.from_file(str(ROOT / page), default_timeout=60)
        at.run()  # warm-up: imports and caches

        def rerun(at=at):
            at.run()

        rows.append((f"page script rerun: {page} (AppTest)", median_ms(rerun, repeat=5)))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  median (ms)")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:10.1f}")


if __name__ == "__main__":
    main()
