"""Efficiency factors in force for one GPU: each kernel family's achieved fractions of the GPU's peaks and
its fixed floor, from the GPU's own profile in ``catalogs/efficiency.yaml`` or inherited from its closest
relative, and where each came from (the Validation page shows it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from core._util.validated import FROZEN, not_vanishing

if TYPE_CHECKING:  # the measured tables (core.hardware.collectives imports LinkFactors from here)
    from core.hardware.collectives import CollectiveTable

__all__ = [
    "EFFICIENCY_FAMILIES",
    "IDEAL",
    "KERNEL_PATHS",
    "PATH_FAMILIES",
    "SERVING_STACKS",
    "STACK_NAMES",
    "Efficiency",
    "EfficiencyProfile",
    "KernelFactors",
    "LinkFactors",
    "SystemFactors",
    "kernel_path",
    "resolve_efficiency",
]

# Serving stacks a scenario can name, and the MoE kernel path each runs for a layout (``kernel_path``).
SERVING_STACKS = {
    "sglang": "SGLang: DeepEP + DeepGEMM for attention-DP x EP (wide EP), fused Triton MoE otherwise",
    "vllm": "vLLM: DeepEP + DeepGEMM for data-parallel attention x EP, fused Triton MoE otherwise",
    "trtllm": "TensorRT-LLM: its CUTLASS MoE kernels (and its own all-to-all for wide EP)",
}
STACK_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "trtllm": "TensorRT-LLM"}
# Grouped-GEMM kernel paths: deepep = DeepGEMM grouped GEMM behind DeepEP (the GPU's base profile holds
# it); fused = a fused Triton MoE kernel (SGLang / vLLM with TP or EP inside the attention group);
# trtllm = TensorRT-LLM's CUTLASS MoE; marlin = Marlin W4A16 kernels for int4 experts (SGLang / vLLM);
# deepgemm = DeepGEMM's contiguous grouped GEMM without a dispatch that counts each expert's tokens on the host (vLLM's
# DeepGemmExperts without DeepEP: its buffer sized for the worst case, core.perf.kernels), timed with the contiguous
# layout's measured factors (the base profile's grouped_gemm_prefill). No stack picks it for a layout (kernel_path): a
# deployment names it where its engine ran it (the MiniMax-M3 day-0 vLLM image on Blackwell).
# Each may be calibrated per GPU as the profile ``<gpu>@<path>``; a GPU may time one path as another
# (``path_alias``: on Blackwell SGLang and vLLM run FlashInfer's CUTLASS / TRT-LLM-gen MoE, not Triton).
KERNEL_PATHS = ("deepep", "fused", "trtllm", "marlin", "deepgemm")
# ... and the low-latency all-to-all: TensorRT-LLM's wide EP runs its own NVLink all-to-all kernels, not DeepEP's
PATH_FAMILIES = ("grouped_gemm_decode", "grouped_gemm_prefill", "grouped_gemm_weight_only", "alltoall_low_latency")


def kernel_path(stack: str, attention_dp: int, ep: int, expert_tp: int, expert_dtype: str = "") -> str:
    """The MoE kernel path ``stack`` runs for a layout: TensorRT-LLM its own; SGLang and vLLM Marlin for int4
    (W4A16) experts, DeepEP + DeepGEMM when attention is data-parallel and experts are spread by EP alone,
    fused Triton otherwise."""
    if stack not in SERVING_STACKS:
        raise ValueError(f"unknown serving stack {stack!r}; known: {', '.join(SERVING_STACKS)}")
    if stack == "trtllm":
        return "trtllm"
    if expert_dtype == "int4":
        return "marlin"
    return "deepep" if attention_dp > 1 and ep > 1 and expert_tp == 1 else "fused"


class KernelFactors(BaseModel):
    """Achieved fractions of a GPU's peaks for one kernel family, plus a fixed floor per call
    (launch, synchronisation, pipeline fill) that no amount of bandwidth removes."""

    model_config = FROZEN

    compute_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.6
    mem_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.8
    floor_us: Annotated[float, Field(ge=0, le=100_000)] = 0.0
    # grouped GEMMs: extra floor per local expert the call touches (tile scheduling per expert), the
    # shape dependence one fixed floor misses (one local expert at EP256 vs 32 at EP8)
    per_expert_us: Annotated[float, Field(ge=0, le=10_000)] = 0.0
    # the compute efficiency of 16-bit (bf16 / fp16) kernels where it differs from the 8/4-bit ones'
    # (measured MoE kernels reach a different fraction of the bf16 peak than of the fp8 peak); None: compute_eff
    compute_eff_16bit: Annotated[float, Field(gt=0, le=1.2)] | None = None
    # attention decode: the tensor-core tile height (MMA M) the query rows of one K/V stream fill; with fewer
    # rows (MLA at 16 heads per GPU: 16 of Hopper's 64) the compute efficiency falls in proportion; 0 = none
    tile_rows: Annotated[float, Field(ge=0, le=1024)] = 0.0
    # grouped GEMM prefill: bytes moved at HBM bandwidth, outside the GEMMs' overlap, per activation element of
    # each token entering the layer (gather / scatter of the batch's rows) and of each token-expert pair (the
    # permuted input, the gate / up output, the activated intermediate, the expert output); 0 = none
    row_bytes: Annotated[float, Field(ge=0, le=1000)] = 0.0
    pair_bytes: Annotated[float, Field(ge=0, le=1000)] = 0.0

    _divisors = field_validator("compute_eff", "mem_eff")(not_vanishing)


class LinkFactors(BaseModel):
    """Achieved fraction of the scale-up and scale-out bandwidth, and the fixed latency per call."""

    model_config = FROZEN

    scale_up_eff: Annotated[float, Field(gt=0, le=1.5)] = 0.8
    scale_out_eff: Annotated[float, Field(gt=0, le=1.5)] = 0.8
    latency_us: Annotated[float, Field(ge=0, le=100_000)] = 10.0

    _divisors = field_validator("scale_up_eff", "scale_out_eff")(not_vanishing)


class SystemFactors(BaseModel):
    """Whole-step effects: fixed time per layer outside the big kernels (norms, RoPE, router top-k,
    residual adds, their launches) and the share of communication that two-batch overlap hides. (A
    pipeline's micro-batches follow from the batch: :func:`core.perf.step_time`.)"""

    model_config = FROZEN

    # per layer: launch gaps and the small kernels between the big ones at any batch (an assumption: ~3 us of
    # add-norm kernels per layer at batch 1 in aiconfigurator's measurements, plus launch gaps)
    layer_overhead_us: Annotated[float, Field(ge=0, le=100_000)] = 5.0
    # per token per layer, in proportion to the hidden width: work outside the big kernels that grows with the
    # batch and the width (norms, activation quantisation, residual adds, routing permutations), picoseconds
    # per token per hidden channel per layer (72.6 ps x 7,168 channels = 521 ns per token per layer)
    token_overhead_ps_per_channel: Annotated[float, Field(ge=0, le=1_000_000)] = 0.0
    overlap_eff: Annotated[float, Field(ge=0, le=1)] = 0.8


EFFICIENCY_FAMILIES = (
    "grouped_gemm_decode",
    "grouped_gemm_prefill",
    "grouped_gemm_weight_only",
    "dense_gemm",
    "attention_decode",
    "attention_prefill",
    "alltoall_low_latency",
    "alltoall_normal",
    "allreduce",
    "system",
)


class EfficiencyProfile(BaseModel):
    """Efficiency factors of one GPU type under one serving stack (``catalogs/efficiency.yaml``).
    A family left out is inherited from ``inherits`` (the closest relative), and said so."""

    model_config = FROZEN

    gpu: str
    stack: str
    path: Literal[KERNEL_PATHS] | None = None  # a kernel path's grouped-GEMM factors for ``gpu``
    path_alias: dict[Literal[KERNEL_PATHS], Literal[KERNEL_PATHS]] = Field(default_factory=dict)
    inherits: str | None = None
    grouped_gemm_decode: KernelFactors | None = None
    grouped_gemm_prefill: KernelFactors | None = None
    grouped_gemm_weight_only: KernelFactors | None = None
    dense_gemm: KernelFactors | None = None
    attention_decode: KernelFactors | None = None
    attention_prefill: KernelFactors | None = None
    alltoall_low_latency: LinkFactors | None = None
    alltoall_normal: LinkFactors | None = None
    allreduce: LinkFactors | None = None
    system: SystemFactors | None = None
    provenance: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    @property
    def key(self) -> str:
        """``gpu``, or ``gpu@path`` for a kernel path's profile."""
        return self.gpu if self.path is None else f"{self.gpu}@{self.path}"


@dataclass(frozen=True)
class Efficiency:
    """Resolved factors for one GPU under one serving stack: each family with the profile (GPU, stack) it
    came from; the grouped-GEMM families per kernel path; the GPU's measured collectives (if any)."""

    gpu: str
    factors: Mapping[str, KernelFactors | LinkFactors | SystemFactors]
    source: Mapping[str, str]
    stack: str = "sglang"
    path_factors: Mapping[str, Mapping[str, KernelFactors | LinkFactors]] = field(default_factory=dict)
    path_source: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    collectives: CollectiveTable | None = None

    def __getitem__(self, family: str):
        return self.factors[family]

    def kernel(self, family: str, path: str | None) -> KernelFactors | LinkFactors:
        """``family``'s factors on kernel ``path`` (the base profile's where the path has none)."""
        return self.path_factors.get(path or "", {}).get(family) or self.factors[family]

    def path(self, attention_dp: int, ep: int, expert_tp: int, expert_dtype: str = "") -> str:
        return kernel_path(self.stack, attention_dp, ep, expert_tp, expert_dtype)

    def owner_of(self, family: str, path: str | None = None) -> str:
        """The profile id ``family``'s factors come from (``h200``, ``h100@fused``, ``default``), on kernel
        ``path`` where the path has its own; the source label without the stack and inheritance note."""
        return _profile_id(self.path_source.get(path or "", {}).get(family) or self.source[family])

    def owner_gpu(self, family: str, path: str | None = None) -> str:
        """The GPU (or ``default``) whose profile ``family`` comes from, kernel path dropped."""
        return self.owner_of(family, path).split("@")[0]

    def describe(self) -> list[dict]:
        rows = []
        for fam in EFFICIENCY_FAMILIES:
            f = self.factors[fam]
            path = "deepep" if fam in PATH_FAMILIES else "any"
            rows.append(
                {"family": fam, "path": path, "from": self.source[fam], "owner": self.owner_of(fam), **f.model_dump()}
            )
        for path, fams in self.path_factors.items():
            for fam, f in fams.items():
                src = self.path_source[path][fam]
                rows.append({"family": fam, "path": path, "from": src, "owner": _profile_id(src), **f.model_dump()})
        return rows


_DEFAULTS = {
    "grouped_gemm_decode": KernelFactors(),
    "grouped_gemm_prefill": KernelFactors(),
    "grouped_gemm_weight_only": KernelFactors(),
    "dense_gemm": KernelFactors(),
    "attention_decode": KernelFactors(),
    "attention_prefill": KernelFactors(),
    "alltoall_low_latency": LinkFactors(),
    "alltoall_normal": LinkFactors(),
    "allreduce": LinkFactors(),
    "system": SystemFactors(),
}


def _chain(gpu_id: str, profiles: Mapping[str, EfficiencyProfile]) -> list[str]:
    """``gpu_id`` and its ``inherits`` relatives, closest first."""
    out: list[str] = []
    pid = gpu_id
    while pid is not None and pid in profiles and pid not in out:
        out.append(pid)
        pid = profiles[pid].inherits
    return out


def _profile_id(label: str) -> str:
    """``h100@fused (vllm), inherited by h20`` -> ``h100@fused``: the id a source label (``_label``) names."""
    return label.split(" ")[0]


def _label(pid: str, profiles: Mapping[str, EfficiencyProfile], gpu_id: str) -> str:
    return f"{pid} ({profiles[pid].stack})" + ("" if pid.split("@")[0] == gpu_id else f", inherited by {gpu_id}")


def resolve_efficiency(
    gpu_id: str,
    profiles: Mapping[str, EfficiencyProfile],
    overrides: Mapping[str, KernelFactors | LinkFactors | SystemFactors] | None = None,
    *,
    stack: str = "sglang",
    collectives: CollectiveTable | None = None,
) -> Efficiency:
    """Each family from the GPU's own profile, else from its ``inherits`` chain (closest relative),
    else the generic default (labelled as such). A kernel path's grouped-GEMM families come from the
    closest profile ``<relative>@<path>``; a path no relative has falls back to the base families
    (DeepGEMM's). ``overrides`` replace families (used by calibration). ``collectives``: the GPU's
    measured collective table (``Catalog.collectives``); without one, collectives use the link factors."""
    if stack not in SERVING_STACKS:
        raise ValueError(f"unknown serving stack {stack!r}; known: {', '.join(SERVING_STACKS)}")
    chain = _chain(gpu_id, profiles)
    factors, source = {}, {}
    for fam in EFFICIENCY_FAMILIES:
        for pid in chain:
            value = getattr(profiles[pid], fam)
            if value is not None:
                factors[fam], source[fam] = value, _label(pid, profiles, gpu_id)
                break
        else:
            factors[fam] = _DEFAULTS[fam]
            source[fam] = "generic default (no profile)"
    path_factors: dict[str, dict[str, KernelFactors | LinkFactors]] = {}
    path_source: dict[str, dict[str, str]] = {}
    for path in KERNEL_PATHS:
        # the path this GPU's kernels for ``path`` are timed as (the closest relative's alias, else itself)
        target = next((profiles[p].path_alias[path] for p in chain if path in profiles[p].path_alias), path)
        for fam in PATH_FAMILIES:
            for pid in (f"{p}@{target}" for p in chain):
                value = getattr(profiles[pid], fam) if pid in profiles else None
                if value is not None:
                    path_factors.setdefault(path, {})[fam] = value
                    path_source.setdefault(path, {})[fam] = _label(pid, profiles, gpu_id)
                    break
    for fam, v in (overrides or {}).items():
        factors[fam] = v
        source[fam] = "calibration override"
    return Efficiency(gpu_id, factors, source, stack, path_factors, path_source, collectives)


_ONE = KernelFactors(compute_eff=1.0, mem_eff=1.0, floor_us=0.0)
_WIRE = LinkFactors(scale_up_eff=1.0, scale_out_eff=1.0, latency_us=0.0)
IDEAL = Efficiency(
    "ideal",
    {
        fam: (
            _WIRE
            if fam.startswith(("alltoall", "allreduce"))
            else SystemFactors(layer_overhead_us=0.0, overlap_eff=1.0)
            if fam == "system"
            else _ONE
        )
        for fam in EFFICIENCY_FAMILIES
    },
    dict.fromkeys(EFFICIENCY_FAMILIES, "ideal: every peak reached, no floors, no overheads (the roofline)"),
)
