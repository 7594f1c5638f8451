"""How far the planner's model of the published frontiers is from them (issue 35, "Validation of whole curves"):
every published point's error, then the median and 90th percentile of the absolute errors per curve (one
deployment of a case), per case, per concurrency band, per accelerator, per serving stack, and overall.

A point's error is ``modelled / published - 1`` for its tokens/s per GPU (in the point's own kind, see
:class:`core.serving.frontier.PointGap`) and for its per-user output tokens/s (None where the source published no
per-user speed). Concurrency bands (:data:`BANDS`): low = 1-4 clients, mid = 5-63, high = 64 or more, and
"unstated" for peak figures published without their concurrency (modelled at the most clients the KV cache
holds). The P90 is the linear-interpolation 90th percentile of the sorted absolute errors (one point: itself).
The bands are given three times: over every point; over the current engine version of each curve only (``current_*``:
the deployments a case tags as measured on an older engine version, :attr:`PointError.older_version`, left out); and
over those without the cases the issue does not judge (``target_*``: a case whose ``not_in_target`` says why, e.g. a
trace the planner is given only one median length of), which the targets are judged on.
Pure arithmetic over already-modelled cases (:func:`core.serving.frontier.model_case`): the Validation page and
``python -m bench.frontier`` share it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.serving.frontier import CaseModel

__all__ = ["BANDS", "TARGET_BANDS", "TARGET_MEDIAN", "TARGET_P90", "FrontierGaps", "GapStats", "PointError"]
__all__ += ["concurrency_band", "frontier_gaps"]

# (name, fewest clients, most clients; None: no upper end)
BANDS: tuple[tuple[str, int, int | None], ...] = (("low", 1, 4), ("mid", 5, 63), ("high", 64, None))
UNSTATED = "unstated"
# issue 35's per-point target: at low and at high concurrency, median |error| <= 15% and P90 <= 35%, for tokens/s per
# GPU and for per-user speed
TARGET_BANDS = ("low", "high")
TARGET_MEDIAN, TARGET_P90 = 0.15, 0.35


def concurrency_band(concurrency: int | None) -> str:
    """The band of a point measured at ``concurrency`` clients: low (1-4), mid (5-63), high (64+); "unstated" for
    None (a peak published without its concurrency)."""
    if concurrency is None:
        return UNSTATED
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of clients >= 1 or None, got {concurrency!r}")
    for name, lo, hi in BANDS:
        if concurrency >= lo and (hi is None or concurrency <= hi):
            return name
    raise ValueError(f"no band holds {concurrency} clients")  # unreachable: the bands cover 1 and up


@dataclass(frozen=True)
class PointError:
    """One published point beside its model: the errors (modelled / published - 1) and what it is grouped by."""

    point_id: str
    case_id: str
    curve: str  # "case id: deployment label"
    gpu: str
    stack: str
    concurrency: int | None
    band: str
    published_tokens_per_s_per_gpu: float
    modelled_tokens_per_s_per_gpu: float
    throughput_kind: str
    published_tokens_per_s_per_user: float | None
    modelled_tokens_per_s_per_user: float
    throughput_error: float
    user_error: float | None
    source: str
    older_version: bool = False  # the curve was measured on an older engine version than the case's current one
    in_target: bool = True  # False: the case says why its points are not judged against the targets


@dataclass(frozen=True)
class GapStats:
    """One group's errors: how many points, the median and P90 of |error| and the median signed error (bias: above
    0 the planner is optimistic), for tokens/s per GPU and, over the points that publish one, per-user speed."""

    group: str
    points: int
    throughput_median: float
    throughput_p90: float
    throughput_bias: float
    user_points: int
    user_median: float | None
    user_p90: float | None
    user_bias: float | None

    @property
    def within_target(self) -> bool:
        """Median |error| <= :data:`TARGET_MEDIAN` and P90 <= :data:`TARGET_P90` for tokens/s per GPU and, where the
        group has per-user speeds, for them too (issue 35 sets it for the :data:`TARGET_BANDS`)."""
        pairs = [(self.throughput_median, self.throughput_p90)]
        pairs += [(self.user_median, self.user_p90)] if self.user_points else []
        return all(m <= TARGET_MEDIAN and p <= TARGET_P90 for m, p in pairs)


@dataclass(frozen=True)
class FrontierGaps:
    """Every point's error and its summaries per curve, case, concurrency band, accelerator, stack and overall;
    ``current_bands`` / ``current_overall``: the bands and overall over the current engine version of each curve only;
    ``target_*``: the same without the cases not judged against the targets."""

    points: tuple[PointError, ...]
    curves: tuple[GapStats, ...]
    cases: tuple[GapStats, ...]
    bands: tuple[GapStats, ...]
    gpus: tuple[GapStats, ...]
    stacks: tuple[GapStats, ...]
    overall: GapStats | None
    current_bands: tuple[GapStats, ...] = ()
    current_overall: GapStats | None = None
    target_bands: tuple[GapStats, ...] = ()  # current versions, cases not judged left out: the targets' points
    target_overall: GapStats | None = None

    @property
    def current_points(self) -> int:
        return self.current_overall.points if self.current_overall else 0

    @property
    def target_points(self) -> int:
        return self.target_overall.points if self.target_overall else 0

    def band_table(self, which: str) -> tuple[GapStats, ...]:
        """The bands then the overall row of ``which`` points: "every", "current" (versions) or "target" (judged)."""
        views = {
            "every": (self.bands, self.overall),
            "current": (self.current_bands, self.current_overall),
            "target": (self.target_bands, self.target_overall),
        }
        if which not in views:
            raise ValueError(f"which must be one of {', '.join(views)}, got {which!r}")
        bands, overall = views[which]
        return (*bands, *((overall,) if overall else ()))


def _p90(values: list[float]) -> float:
    s = sorted(values)
    at = 0.9 * (len(s) - 1)
    lo = math.floor(at)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (at - lo)


def _stats(group: str, rows: Sequence[PointError]) -> GapStats:
    t = [r.throughput_error for r in rows]
    u = [r.user_error for r in rows if r.user_error is not None]
    return GapStats(
        group=group,
        points=len(rows),
        throughput_median=statistics.median(abs(x) for x in t),
        throughput_p90=_p90([abs(x) for x in t]),
        throughput_bias=statistics.median(t),
        user_points=len(u),
        user_median=statistics.median(abs(x) for x in u) if u else None,
        user_p90=_p90([abs(x) for x in u]) if u else None,
        user_bias=statistics.median(u) if u else None,
    )


def _grouped(rows: Sequence[PointError], key: Callable[[PointError], str], order=None) -> tuple[GapStats, ...]:
    groups: dict[str, list[PointError]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    names = [n for n in order if n in groups] if order is not None else list(groups)
    return tuple(_stats(n, groups[n]) for n in names)


def _errors(m: CaseModel) -> list[PointError]:
    out = []
    for g in m.gaps:
        p = g.point
        out.append(
            PointError(
                point_id=p.id,
                case_id=m.case.id,
                curve=f"{m.case.id}: {g.deployment}",
                gpu=m.case.gpu,
                stack=m.case.stack,
                concurrency=p.concurrency,
                band=concurrency_band(p.concurrency),
                published_tokens_per_s_per_gpu=p.tokens_per_s_per_gpu,
                modelled_tokens_per_s_per_gpu=g.modelled_tokens_per_s_per_gpu,
                throughput_kind=p.throughput_kind,
                published_tokens_per_s_per_user=p.tokens_per_s_per_user,
                modelled_tokens_per_s_per_user=g.modelled.tokens_per_s_per_user,
                throughput_error=g.throughput_ratio - 1.0,
                user_error=None if g.user_ratio is None else g.user_ratio - 1.0,
                source=p.source,
                older_version=g.older_version,
                in_target=not m.case.not_in_target,
            )
        )
    return out


def frontier_gaps(models: Sequence[CaseModel]) -> FrontierGaps:
    """Every point of the modelled cases ``models`` with its errors, and the summaries (see the module docstring);
    the groups in the order first met (bands low, mid, high, unstated)."""
    if isinstance(models, (str, bytes)) or not isinstance(models, Sequence):
        raise TypeError(f"models must be a sequence of CaseModel, got {type(models).__name__}")
    for m in models:
        if not isinstance(m, CaseModel):
            raise TypeError(f"models must hold CaseModel, got {type(m).__name__}")
    rows = tuple(r for m in models for r in _errors(m))
    current = tuple(r for r in rows if not r.older_version)
    band_order = [*(b[0] for b in BANDS), UNSTATED]

    def banded(pts: Sequence[PointError]) -> tuple[tuple[GapStats, ...], GapStats | None]:
        return _grouped(pts, lambda r: r.band, band_order), (_stats("all", pts) if pts else None)

    (bands, overall), (cur_bands, cur_overall) = banded(rows), banded(current)
    tgt_bands, tgt_overall = banded(tuple(r for r in current if r.in_target))
    return FrontierGaps(
        points=rows,
        curves=_grouped(rows, lambda r: r.curve),
        cases=_grouped(rows, lambda r: r.case_id),
        bands=bands,
        gpus=_grouped(rows, lambda r: r.gpu),
        stacks=_grouped(rows, lambda r: r.stack),
        overall=overall,
        current_bands=cur_bands,
        current_overall=cur_overall,
        target_bands=tgt_bands,
        target_overall=tgt_overall,
    )
