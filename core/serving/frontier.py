"""Published throughput-vs-interactivity points, and the planner's model of each (issue 23).

``catalogs/frontier_points.yaml`` holds what InferenceX, vLLM, LMSYS and NVIDIA published: per GPU throughput (its
kind, ``output``, ``total`` = prompt + output tokens, or ``computed`` = the prompt tokens an engine computed +
output, as the source counts it), per-user output tokens/s, the
concurrency, the deployment in the source's words, each with its source and confidence.
``catalogs/frontier_cases.yaml`` groups the points the planner models into cases (one model, GPU, weight format and
length), each deployment with its layout in the planner's terms and our reading of the source's.

:func:`model_case` runs every deployment through the serving model (:mod:`core.serving`: colocated with chunked
prefill, or disaggregated prefill and decode pools) at each point's concurrency and over a sweep, and pairs every
published point with its modelled one: the gap is the ratio, modelled / published.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from core._util.checks import file_stamp, read_yaml_list
from core._util.memo import by_identity
from core._util.validated import FROZEN, validate_entries
from core.deployment import bundle
from core.deployment.calibration import ServedCalibration
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, SpecDecodeConfig, Workload
from core.hardware.efficiency import KERNEL_PATHS
from core.hardware.served_step import served_step_for
from core.model.dtypes import LinearStateDtypeName
from core.serving import closed_loop as serving
from core.serving.operating_point import layout_label

if TYPE_CHECKING:
    from core.catalog import Catalog

__all__ = ["CASES_PATH", "POINTS_PATH", "CaseModel", "Deployment", "FrontierCase", "FrontierPoint", "PointGap"]
__all__ += ["PoolSpec", "load_frontier_cases", "load_frontier_points", "model_case"]

POINTS_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "frontier_points.yaml"
CASES_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "frontier_cases.yaml"
_Pos = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=1, le=10_000_000)]


class FrontierPoint(BaseModel):
    """One published measurement (see the module docstring)."""

    model_config = FROZEN

    id: str = Field(min_length=1, max_length=120)
    model: str = Field(max_length=120)
    gpu: str = Field(max_length=60)
    gpus: _Count | None = None
    engine: str | None = Field(None, max_length=60)
    layout: str = Field("", max_length=400)
    precision: str = Field(max_length=20)
    disaggregated: bool | None = None
    isl: _Count | None = None
    osl: _Count | None = None
    concurrency: _Count | None = None
    tokens_per_s_per_gpu: _Pos
    throughput_kind: Literal["output", "total", "computed"]
    tokens_per_s_per_user: _Pos | None = None
    source: str = Field(max_length=600)
    url: str = Field("", max_length=600)
    confidence: str = Field(max_length=120)
    note: str = Field("", max_length=2000)


class PoolSpec(BaseModel):
    """A layout in the case file's terms: attention TP x attention-DP ranks, EP (expert TP fills the rest of the
    stage), DCP, and how many identical replicas."""

    model_config = FROZEN

    tp: Annotated[int, Field(ge=1, le=1024)] = 1
    dp_attention: Annotated[int, Field(ge=1, le=1024)] = 1
    ep: Annotated[int, Field(ge=1, le=1024)] = 1
    dcp: Annotated[int, Field(ge=1, le=1024)] = 1
    replicas: Annotated[int, Field(ge=1, le=10_000)] = 1

    @model_validator(mode="after")
    def _splits(self) -> PoolSpec:
        if (self.tp * self.dp_attention) % self.ep:
            raise ValueError(
                f"ep {self.ep} must divide the stage's tp x dp_attention = {self.tp * self.dp_attention} GPUs"
            )
        self.layout()  # ParallelLayout's own checks (DCP divides TP)
        return self

    def layout(self) -> ParallelLayout:
        stage = self.tp * self.dp_attention
        return ParallelLayout(
            attention_tp=self.tp, attention_dp=self.dp_attention, ep=self.ep, expert_tp=stage // self.ep, dcp=self.dcp
        )


class Speculation(BaseModel):
    model_config = FROZEN

    method: Literal["mtp", "eagle3", "dspark"] = "mtp"  # the drafting mode whose served cost the stack pays
    draft_tokens: Annotated[int, Field(ge=1, le=16)]
    accepted_length: Annotated[float, Field(ge=1, le=17)]
    draft_cost: Annotated[float, Field(ge=0, le=2)] = 0.0
    source: str = Field(max_length=1000)


# a deployment's tag marks a curve measured on an older engine version than the one the served step describes
OLDER_VERSION_TAG = "(older"


class Deployment(BaseModel):
    """The points one deployment produced: colocated, or a prefill and a decode pool; lengths and dtypes the case
    sets unless given here."""

    model_config = FROZEN

    points: tuple[str, ...] = Field(min_length=1, max_length=100)
    colocated: PoolSpec | None = None
    prefill: PoolSpec | None = None
    decode: PoolSpec | None = None
    isl: _Count | None = None
    osl: _Count | None = None
    weights: str | None = None
    kv_cache: str | None = None
    tag: str = Field("", max_length=80)  # what tells apart deployments of one layout (an engine version)
    # where this deployment's recipe differs from the case's: its drafting, and its cap on running requests per decode
    # (or colocated) replica (TensorRT-LLM's max_batch_size x attention-DP ranks)
    speculative: Speculation | None = None
    max_running_requests: Annotated[int, Field(ge=1, le=100_000)] | None = None

    @property
    def older_version(self) -> bool:
        """Whether the source measured this deployment on an older engine version than the case's current one: its
        tag says so with :data:`OLDER_VERSION_TAG` (e.g. "SGLang v0.5.10rc0 (older; the served step holds for
        v0.5.12)")."""
        return OLDER_VERSION_TAG in self.tag

    @model_validator(mode="after")
    def _one_kind(self) -> Deployment:
        if self.colocated is not None and (self.prefill or self.decode):
            raise ValueError("a colocated deployment has no separate prefill or decode pool")
        if self.colocated is None and (self.prefill is None or self.decode is None):
            raise ValueError("a deployment is either colocated, or has both a prefill and a decode pool")
        return self

    def label(self, dense: bool = False) -> str:
        if self.colocated is not None:
            lay = self.colocated
            text = f"{lay.replicas} x " * (lay.replicas > 1) + layout_label(lay.layout(), dense) + " (colocated)"
        else:
            p, d = self.prefill, self.decode
            text = f"{p.replicas} x {layout_label(p.layout(), dense)} prefill + {d.replicas} x {layout_label(d.layout(), dense)} decode"
        return f"{text}, {self.tag}" if self.tag else text


class FrontierCase(BaseModel):
    """A model, GPU, weight format and lengths, and the deployments whose published points are modelled."""

    model_config = FROZEN

    id: str = Field(min_length=1, max_length=80)
    title: str = Field(max_length=300)
    model: str = Field(max_length=120)
    gpu: str = Field(max_length=60)
    weights: str = Field(max_length=20)
    kv_cache: str = Field(max_length=20)
    experts: str | None = Field(None, max_length=20)  # the routed experts' dtype where it differs from the weights'
    stack: Literal["vllm", "sglang", "trtllm"]
    isl: _Count
    osl: _Count
    prefix_reuse: Annotated[float, Field(ge=0, lt=1)] = 0.0
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    # the recipe's tokens per step (vLLM max-num-batched-tokens, SGLang chunked-prefill-size; None: the default) and
    # its cap on running requests per replica (None: the KV cache's; SGLang sets 48 with speculation unless told)
    max_num_batched_tokens: Annotated[int, Field(ge=256, le=1_000_000)] | None = None
    max_running_requests: Annotated[int, Field(ge=1, le=100_000)] | None = None
    moe_kernel: Literal[KERNEL_PATHS] | None = None  # the MoE path the engine ran where not the stack's for the layout
    linear_state: LinearStateDtypeName | None = None  # the engine's recurrent-state dtype (Precision.linear_state)
    speculative: Speculation | None = None
    reading: str = Field("", max_length=2000)
    not_in_target: str = Field("", max_length=600)  # why its points are shown but not judged against the targets
    deployments: tuple[Deployment, ...] = Field(min_length=1, max_length=50)


@functools.lru_cache(maxsize=8)
def _points(path: Path, mtime_ns: int, size: int) -> dict[str, FrontierPoint]:
    return {
        p.id: p
        for p in validate_entries(
            read_yaml_list(path, "points", "frontier points file"), FrontierPoint, path.name, "point"
        )
    }


@functools.lru_cache(maxsize=8)
def _cases(path: Path, mtime_ns: int, size: int) -> tuple[FrontierCase, ...]:
    return validate_entries(read_yaml_list(path, "cases", "frontier cases file"), FrontierCase, path.name, "case")


def load_frontier_points(path: str | Path | None = None) -> dict[str, FrontierPoint]:
    """Every published point by id (default file: ``catalogs/frontier_points.yaml``)."""
    return _points(*file_stamp(path, POINTS_PATH, "frontier points file"))


def load_frontier_cases(
    path: str | Path | None = None, points_path: str | Path | None = None
) -> tuple[FrontierCase, ...]:
    """Every modelled case (default file: ``catalogs/frontier_cases.yaml``); each point it names must exist."""
    cases, points = _cases(*file_stamp(path, CASES_PATH, "frontier cases file")), load_frontier_points(points_path)
    for c in cases:
        missing = [p for d in c.deployments for p in d.points if p not in points]
        if missing:
            raise ValueError(f"case {c.id!r} names unknown point(s): {', '.join(missing[:5])}")
    return cases


@dataclass(frozen=True)
class PointGap:
    """A published point beside the planner's model of it at the same deployment and concurrency."""

    point: FrontierPoint
    deployment: str
    modelled: serving.ServingPoint
    prefill_ceiling_tokens_per_s: float | None = None  # the deployment's prompt tokens/s doing nothing else
    prefix_reuse: float = 0.0  # the case's prefix-cache hit fraction
    older_version: bool = False  # measured on an older engine version than the case's current one (Deployment's tag)

    @property
    def implied_prompt_tokens_per_s(self) -> float | None:
        """The fewest prompt tokens per second (whole deployment, cache hits excluded) the engine must have computed
        to publish the point: c clients streaming u tokens/s each take at most c x u output tokens/s, the rest of
        its throughput x GPUs is prompt (for kind "total", (1 - prefix reuse) of it was computed). None for points
        that count output only or lack their concurrency, per-user speed or GPU count."""
        p = self.point
        if p.throughput_kind == "output" or not (p.concurrency and p.tokens_per_s_per_user and p.gpus):
            return None
        prompt = max(0.0, p.tokens_per_s_per_gpu * p.gpus - p.concurrency * p.tokens_per_s_per_user)
        return prompt if p.throughput_kind == "computed" else prompt * (1.0 - self.prefix_reuse)

    @property
    def beyond_prefill_ceiling(self) -> bool:
        """The point needs more computed prompt tokens/s than the modelled deployment prefills doing nothing else:
        no decode-side change can close its gap."""
        need, ceiling = self.implied_prompt_tokens_per_s, self.prefill_ceiling_tokens_per_s
        return need is not None and ceiling is not None and need > ceiling

    @property
    def modelled_tokens_per_s_per_gpu(self) -> float:
        """In the point's own kind (output; prompt + output tokens; computed prompt + output tokens)."""
        m, kind = self.modelled, self.point.throughput_kind
        if kind == "output":
            return m.output_tokens_per_s_per_gpu
        return m.total_tokens_per_s_per_gpu if kind == "total" else m.computed_tokens_per_s_per_gpu

    @property
    def throughput_ratio(self) -> float:
        return self.modelled_tokens_per_s_per_gpu / self.point.tokens_per_s_per_gpu

    @property
    def user_ratio(self) -> float | None:
        u = self.point.tokens_per_s_per_user
        return None if u is None else self.modelled.tokens_per_s_per_user / u


@dataclass(frozen=True)
class CaseModel:
    """A case modelled: each deployment's sweep (label, points) and every published point's gap."""

    case: FrontierCase
    curves: tuple[tuple[str, tuple[serving.ServingPoint, ...]], ...]
    gaps: tuple[PointGap, ...]
    kind: str  # the throughput kind the case's points count ("output", "total", "computed"; "mixed")

    def median_ratio(self, which: Literal["throughput", "user"]) -> float | None:
        vals = [g.throughput_ratio if which == "throughput" else g.user_ratio for g in self.gaps]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None


def _deployment_model(case: FrontierCase, dep: Deployment, points: Mapping[str, FrontierPoint], catalog, cal=None):
    model, gpu = catalog.model(case.model), catalog.gpu(case.gpu)
    prec = Precision(
        weights=dep.weights or case.weights,
        kv_cache=dep.kv_cache or case.kv_cache,
        routed_experts=case.experts,
        linear_state=case.linear_state,
    )
    wl = Workload(input_len=dep.isl or case.isl, output_len=dep.osl or case.osl, prefix_reuse=case.prefix_reuse)
    eff = catalog.efficiency_for(case.gpu, case.stack)
    tokens = {"max_num_batched_tokens": case.max_num_batched_tokens} if case.max_num_batched_tokens else {}
    a = MemoryAssumptions(gpu_memory_utilization=case.gpu_memory_utilization, **tokens)
    spec = dep.speculative or case.speculative
    # the case's deployment on one GPU; each pool's layout in its place (the GPU's own scale-up domain). It pays the
    # stack's served step as the pages' deployments do (core.serving.layout): the drafting mode's where the case
    # drafts and the stack has that mode fitted, else the plain CUDA-graph step's
    base = bundle.Deployment(
        model,
        gpu,
        ParallelLayout(),
        prec,
        eff,
        workload=wl,
        assumptions=a,
        redundant_experts=0,
        spec=SpecDecodeConfig(method=spec.method, num_speculative_tokens=spec.draft_tokens)
        if spec
        else SpecDecodeConfig(),
        served_step=served_step_for(case.stack, spec.method if spec is not None else "none"),
        calibration=cal,
        kernel_path=case.moe_kernel,
    )
    extra = {k: getattr(spec, k) for k in ("draft_tokens", "accepted_length", "draft_cost")} if spec else {}

    def costs(pool: PoolSpec, speculate: bool) -> serving.ReplicaCosts:
        lay = pool.layout()
        n_exp = model.moe.n_routed_experts if model.moe is not None else 0
        red = (-n_exp) % lay.ep if n_exp else 0  # EPLB's slots where EP does not divide the experts
        c = serving.replica_costs(base.with_layout(lay, red), **(extra if speculate else {}))
        cap = (speculate and dep.max_running_requests) or case.max_running_requests  # the engine admits no more
        return dataclasses.replace(c, kv_capacity=min(c.kv_capacity, cap)) if cap else c

    if dep.colocated is not None:
        c = costs(dep.colocated, True)
        reps = dep.colocated.replicas

        def at(conc: int) -> serving.ServingPoint:
            return serving.serve_closed_loop(c, wl, max(1, math.ceil(conc / reps)))

        cap = c.kv_capacity * reps
        ceiling = reps / c.prefill_s_per_token
    else:
        d, p = costs(dep.decode, True), costs(dep.prefill, False)

        def at(conc: int) -> serving.ServingPoint:
            return serving.serve_disaggregated(d, dep.decode.replicas, p, dep.prefill.replicas, wl, conc)

        cap = d.kv_capacity * dep.decode.replicas
        ceiling = dep.prefill.replicas / p.prefill_s_per_token
    wanted = [points[i].concurrency for i in dep.points]
    top = max([cap, *(w for w in wanted if w)])
    grid = sorted({*(x for x in serving.CONCURRENCIES if x <= top), *(w for w in wanted if w)})
    curve = tuple(at(x) for x in grid)
    gaps = tuple(
        PointGap(
            points[i],
            dep.label(model.moe is None),
            at(points[i].concurrency or cap),
            ceiling,
            case.prefix_reuse,
            dep.older_version,
        )
        for i in dep.points
    )
    return curve, gaps


def model_case(case: FrontierCase | str, catalog: Catalog, calibration: ServedCalibration | None = None) -> CaseModel:
    """Every deployment of ``case`` (or its id) through the serving model, the models and GPUs from ``catalog``; see
    the module docstring. A case named by its id is modelled once per process and catalog (the results depend on
    nothing else). ``calibration``: step-time scales every deployment carries (a what-if, e.g. prefill x 2)."""
    if not isinstance(case, (FrontierCase, str)):
        raise TypeError(f"case must be a FrontierCase or a case id, got {type(case).__name__}")
    if calibration is not None:
        if not isinstance(calibration, ServedCalibration):
            raise TypeError(f"calibration must be a ServedCalibration or None, got {type(calibration).__name__}")
        return _model_case(case, catalog, calibration)
    if isinstance(case, str):
        stamp = file_stamp(None, CASES_PATH, "frontier cases file"), file_stamp(None, POINTS_PATH, "frontier points")
        return _shipped_case(catalog, case, stamp)
    return _model_case(case, catalog)


@by_identity(32)
def _shipped_case(catalog, case_id: str, stamp: tuple) -> CaseModel:  # the files' stamps: an edited file models again
    return _model_case(case_id, catalog)


def _model_case(case: FrontierCase | str, catalog, cal: ServedCalibration | None = None) -> CaseModel:
    if isinstance(case, str):
        found = {c.id: c for c in load_frontier_cases()}
        if case not in found:
            raise ValueError(f"unknown frontier case {case[:60]!r}; one of {', '.join(found)}")
        case = found[case]
    points = load_frontier_points()
    model = catalog.model(case.model)
    curves, gaps = [], []
    for dep in case.deployments:
        curve, g = _deployment_model(case, dep, points, catalog, cal)
        curves.append((dep.label(model.moe is None), curve))
        gaps.extend(g)
    kinds = {g.point.throughput_kind for g in gaps}
    return CaseModel(case, tuple(curves), tuple(gaps), kinds.pop() if len(kinds) == 1 else "mixed")
