"""Efficiency factors in force for one GPU: each kernel family's achieved fractions of the GPU's peaks and
its fixed floor, from the GPU's own profile in ``catalogs/efficiency.yaml`` or inherited from its closest
relative, and where each came from (the Validation page shows it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.specs import EFFICIENCY_FAMILIES, EfficiencyProfile, KernelFactors, LinkFactors, SystemFactors

__all__ = ["IDEAL", "Efficiency", "resolve_efficiency"]


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
