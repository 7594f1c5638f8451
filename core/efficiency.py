"""Efficiency factors in force for one GPU: each kernel family's achieved fractions of the GPU's peaks and
its fixed floor, from the GPU's own profile in ``catalogs/efficiency.yaml`` or inherited from its closest
relative, and where each came from (the Validation page shows it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from core.validated import FROZEN, not_vanishing

__all__ = [
    "EFFICIENCY_FAMILIES",
    "IDEAL",
    "Efficiency",
    "EfficiencyProfile",
    "KernelFactors",
    "LinkFactors",
    "SystemFactors",
    "resolve_efficiency",
]


class KernelFactors(BaseModel):
    """Achieved fractions of a GPU's peaks for one kernel family, plus a fixed floor per call
    (launch, synchronisation, pipeline fill) that no amount of bandwidth removes."""

    model_config = FROZEN

    compute_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.6
    mem_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.8
    floor_us: Annotated[float, Field(ge=0, le=100_000)] = 0.0

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
    residual adds, their launches), the share of communication that two-batch overlap hides, and the
    micro-batches a pipeline keeps in flight per stage (a stated assumption: continuous batching in decode,
    prompt chunks in prefill)."""

    model_config = FROZEN

    layer_overhead_us: Annotated[float, Field(ge=0, le=100_000)] = 20.0
    overlap_eff: Annotated[float, Field(ge=0, le=1)] = 0.8
    decode_microbatches_per_stage: Annotated[float, Field(ge=1, le=1_000)] = 2.0
    prefill_microbatches_per_stage: Annotated[float, Field(ge=1, le=1_000)] = 8.0


EFFICIENCY_FAMILIES = (
    "grouped_gemm_decode",
    "grouped_gemm_prefill",
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
    inherits: str | None = None
    grouped_gemm_decode: KernelFactors | None = None
    grouped_gemm_prefill: KernelFactors | None = None
    dense_gemm: KernelFactors | None = None
    attention_decode: KernelFactors | None = None
    attention_prefill: KernelFactors | None = None
    alltoall_low_latency: LinkFactors | None = None
    alltoall_normal: LinkFactors | None = None
    allreduce: LinkFactors | None = None
    system: SystemFactors | None = None
    provenance: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


@dataclass(frozen=True)
class Efficiency:
    """Resolved factors for one GPU: each family with the profile (GPU, stack) it came from."""

    gpu: str
    factors: Mapping[str, KernelFactors | LinkFactors | SystemFactors]
    source: Mapping[str, str]

    def __getitem__(self, family: str):
        return self.factors[family]

    def describe(self) -> list[dict]:
        rows = []
        for fam in EFFICIENCY_FAMILIES:
            f = self.factors[fam]
            rows.append({"family": fam, "from": self.source[fam], **f.model_dump()})
        return rows


_DEFAULTS = {
    "grouped_gemm_decode": KernelFactors(),
    "grouped_gemm_prefill": KernelFactors(),
    "dense_gemm": KernelFactors(),
    "attention_decode": KernelFactors(),
    "attention_prefill": KernelFactors(),
    "alltoall_low_latency": LinkFactors(),
    "alltoall_normal": LinkFactors(),
    "allreduce": LinkFactors(),
    "system": SystemFactors(),
}


def resolve_efficiency(
    gpu_id: str,
    profiles: Mapping[str, EfficiencyProfile],
    overrides: Mapping[str, KernelFactors | LinkFactors | SystemFactors] | None = None,
) -> Efficiency:
    """Each family from the GPU's own profile, else from its ``inherits`` chain (closest relative),
    else the generic default (labelled as such). ``overrides`` replace families (used by calibration)."""
    factors, source = {}, {}
    for fam in EFFICIENCY_FAMILIES:
        pid, seen = gpu_id, set()
        while pid is not None and pid in profiles and pid not in seen:
            seen.add(pid)
            value = getattr(profiles[pid], fam)
            if value is not None:
                prof = profiles[pid]
                factors[fam] = value
                source[fam] = f"{pid} ({prof.stack})" + ("" if pid == gpu_id else f", inherited by {gpu_id}")
                break
            pid = profiles[pid].inherits
        else:
            factors[fam] = _DEFAULTS[fam]
            source[fam] = "generic default (no profile)"
    for fam, v in (overrides or {}).items():
        factors[fam] = v
        source[fam] = "calibration override"
    return Efficiency(gpu_id, factors, source)


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
