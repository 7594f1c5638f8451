"""Collective communication (all-reduce, all-gather, reduce-scatter) timed from measurements.

``catalogs/collectives.csv`` holds measured latencies per GPU type, serving stack and kernel
(SGLang / vLLM / TensorRT-LLM custom all-reduce under CUDA graphs or eager, NCCL) by group size and
message size, extracted from NVIDIA aiconfigurator's perf database (``bench/extract_aic.py``).

A call is timed from the GPU's own table when it has one: log-log interpolation in the message size
(the flat latency floor below the smallest size measured, bandwidth-bound growth above the largest);
a group larger than the largest measured one inside the scale-up domain moves ``2 (n - 1) / n`` (all-reduce)
or ``(n - 1) / n`` (gather, scatter) of the message per GPU, so it is read at the message size that moves
the same bytes in the largest measured group. Where no table exists (a GPU without measurements, a group
across nodes) the call is ``latency + ring bytes / (link bandwidth x efficiency)`` with ONE latency per
call (the ``allreduce`` link factors), never one per ring hop.

Message sizes follow nccl-tests: an all-reduce's buffer; an all-gather's output (the gathered buffer);
a reduce-scatter's input (the full buffer before scattering).
"""

from __future__ import annotations

import bisect
import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core._util.checks import nonneg, whole
from core.hardware.efficiency import LinkFactors

__all__ = [
    "OPS",
    "STACKS",
    "CollectiveTable",
    "allreduce_curves",
    "collective_s",
    "load_collectives",
]

OPS = ("all_reduce", "all_gather", "reduce_scatter")
# serving stacks whose own all-reduce kernels the tables may hold; nccl is the fallback every stack has
STACKS = ("sglang", "vllm", "trtllm", "nccl")
_RING = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}
_RING["reduce_scatter"] = _RING["all_gather"]


@dataclass(frozen=True)
class _Curve:
    sizes: tuple[float, ...]  # message bytes, ascending
    latencies_s: tuple[float, ...]
    source: str
    kernel: str = ""  # "<stack> <kernel>" as measured, e.g. "sglang graph", "nccl nccl"

    def at(self, nbytes: float) -> float:
        s, t = self.sizes, self.latencies_s
        if nbytes <= s[0]:
            return t[0]
        if nbytes >= s[-1]:  # bandwidth-bound beyond the largest message measured
            return t[-1] * nbytes / s[-1]
        i = bisect.bisect_right(s, nbytes)
        x0, x1, y0, y1 = math.log(s[i - 1]), math.log(s[i]), math.log(t[i - 1]), math.log(t[i])
        return math.exp(y0 + (y1 - y0) * (math.log(nbytes) - x0) / (x1 - x0))


@dataclass(frozen=True)
class CollectiveTable:
    """One GPU type's measured collectives: ``(stack, kernel, op, group size) -> curve``."""

    gpu: str
    curves: Mapping[tuple[str, str, str, int], _Curve] = field(default_factory=dict)
    _found: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # curve() answers, memoised

    def kernels(self) -> list[tuple[str, str, str, int]]:
        return sorted(self.curves)

    def curve(self, op: str, stack: str, graph: bool, n: int) -> tuple[_Curve, int] | None:
        """The curve for ``op`` in ``stack`` (its CUDA-graph or eager kernel first, else the stack's own, e.g.
        TensorRT-LLM's), else NCCL's; the group size measured closest to ``n`` from below (its own when
        measured)."""
        key = (op, stack, graph, n)
        if key not in self._found:
            self._found[key] = self._curve(op, stack, graph, n)
        return self._found[key]

    def _curve(self, op: str, stack: str, graph: bool, n: int) -> tuple[_Curve, int] | None:
        kernels = ("graph", "eager") if graph else ("eager", "graph")
        own = sorted({k for (s, k, o, _) in self.curves if s == stack and o == op} - set(kernels))
        for st, kn in [(stack, k) for k in (*kernels, *own)] + [("nccl", "nccl")]:
            sizes = sorted(g for (s, k, o, g) in self.curves if (s, k, o) == (st, kn, op))
            below = [g for g in sizes if g <= n]
            if below:
                g = below[-1]
                return self.curves[(st, kn, op, g)], g
        return None


def load_collectives(path: Path | str) -> dict[str, CollectiveTable]:
    """``catalogs/collectives.csv`` (``#`` lines are provenance): GPU id -> its table; {} when the file is
    absent; ValueError naming the row for a malformed one."""
    try:
        path = Path(path)
        if not path.is_file():
            return {}
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, TypeError) as e:
        raise ValueError(f"{str(path)[:200]}: not a readable collectives table ({type(e).__name__})") from None
    rows: dict[tuple[str, str, str, str, int], list[tuple[float, float, str]]] = {}
    reader = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    for i, row in enumerate(reader, start=2):
        try:
            key = (row["gpu"], row["stack"], row["kernel"], row["op"], int(row["num_gpus"]))
            point = (float(row["message_bytes"]), float(row["latency_us"]) * 1e-6, row.get("source") or "")
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{str(path)[:200]}: row {i}: needs gpu, stack, kernel, op, num_gpus, message_bytes, "
                f"latency_us ({type(e).__name__}: {e})"
            ) from None
        if not (key[4] >= 1 and math.isfinite(point[0]) and math.isfinite(point[1])):
            raise ValueError(f"{str(path)[:200]}: row {i}: num_gpus >= 1 and finite sizes and latencies needed")
        rows.setdefault(key, []).append(point)
    tables: dict[str, dict] = {}
    for (gpu, stack, kernel, op, n), pts in rows.items():
        pts.sort()
        sizes, lats = zip(*((b, t) for b, t, _ in pts), strict=True)
        if any(b <= 0 or not t > 0 for b, t in zip(sizes, lats, strict=True)):
            raise ValueError(f"{path}: {gpu} {stack} {kernel} {op} n={n}: sizes and latencies must be > 0")
        tables.setdefault(gpu, {})[(stack, kernel, op, n)] = _Curve(
            tuple(sizes), tuple(lats), pts[0][2], f"{stack} {kernel}"
        )
    return {gpu: CollectiveTable(gpu, curves) for gpu, curves in tables.items()}


def collective_s(
    op: str,
    nbytes: float,
    n: int,
    *,
    table: CollectiveTable | None,
    stack: str,
    graph: bool,
    scale_up_gbps: float,
    scale_out_gbps: float,
    domain_gpus: int,
    link: LinkFactors,
) -> float:
    """Seconds of one ``op`` of ``nbytes`` over ``n`` GPUs (0 for one GPU): measured when the GPU's table
    covers it (see the module docstring), else one call latency plus the ring bytes over the link."""
    if op not in OPS:
        raise ValueError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
    n, domain_gpus = whole("group size", n, 1, 100_000), whole("domain_gpus", domain_gpus, 1, 100_000)
    return collective_s_unchecked(
        op,
        nonneg("message bytes", nbytes),
        n,
        table=table,
        stack=stack,
        graph=graph,
        scale_up_gbps=scale_up_gbps,
        scale_out_gbps=scale_out_gbps,
        domain_gpus=domain_gpus,
        link=link,
    )


def collective_s_unchecked(
    op: str,
    nbytes: float,
    n: int,
    *,
    table: CollectiveTable | None,
    stack: str,
    graph: bool,
    scale_up_gbps: float,
    scale_out_gbps: float,
    domain_gpus: int,
    link: LinkFactors,
) -> float:
    """:func:`collective_s`, unchecked: for callers with validated inputs (an op of :data:`OPS`, a deployment's
    group sizes and domain, a step's bytes)."""
    if n == 1 or nbytes == 0:
        return 0.0
    ring = _RING[op]
    found = table.curve(op, stack, graph, n) if table is not None and n <= domain_gpus else None
    if found is not None:
        curve, g = found
        return curve.at(nbytes * ring(n) / ring(g)) if g != n else curve.at(nbytes)
    inside = n <= domain_gpus
    bw, eff = (scale_up_gbps, link.scale_up_eff) if inside else (scale_out_gbps, link.scale_out_eff)
    return link.latency_us * 1e-6 + nbytes * ring(n) / (bw * 1e9 * eff)


def allreduce_curves(
    table: CollectiveTable | None,
    stack: str,
    *,
    scale_up_gbps: float,
    scale_out_gbps: float,
    domain_gpus: int,
    link: LinkFactors,
    group_sizes: tuple[int, ...] = (2, 4, 8),
    sizes_bytes: tuple[float, ...] = tuple(2.0**k for k in range(10, 29)),
) -> list[dict]:
    """All-reduce latency (µs) by message size for each group size, as the step model times it: the
    stack's kernel under CUDA graphs (decode) and eager (prefill), and NCCL; one row per point, each
    series named by the kernel measured (or "link model" where no table covers it)."""
    rows = []
    for n in group_sizes:
        seen = set()
        for st, graph in ((stack, True), (stack, False), ("nccl", True)):
            found = table.curve("all_reduce", st, graph, n) if table is not None and n <= domain_gpus else None
            label = found[0].kernel if found else "link model (no measurement)"
            if label in seen:
                continue
            seen.add(label)
            for b in sizes_bytes:
                t = collective_s(
                    "all_reduce",
                    b,
                    n,
                    table=table,
                    stack=st,
                    graph=graph,
                    scale_up_gbps=scale_up_gbps,
                    scale_out_gbps=scale_out_gbps,
                    domain_gpus=domain_gpus,
                    link=link,
                )
                rows.append({"message_bytes": b, "latency_us": t * 1e6, "series": f"{n} GPUs · {label}", "gpus": n})
    return rows
