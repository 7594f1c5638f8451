"""A kernel call's work and its time (the two things every step sums): :class:`Work` holds one call's FLOPs at the
peak of the dtype it computes in, the weight and cache bytes it reads from HBM and the kernel family whose factors
time it (``catalogs/efficiency.yaml``); :func:`kernel_s` times it under a family's factors. The works of a whole
pass are :mod:`core.perf.kernels`'."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core._util.memo import by_identity
from core.hardware import GPUSpec, precision_support
from core.hardware.efficiency import KernelFactors

__all__ = ["Work", "half_peak_flops", "kernel_s", "peak_flops"]


@dataclass(frozen=True)
class Work:
    """One kernel call on one GPU."""

    flops: float
    weight_bytes: float
    cache_bytes: float
    peak_flops: float  # FLOP/s of the dtype the kernel computes in
    family: str  # the efficiency family that times it
    path: str | None = None  # the MoE kernel path (grouped GEMMs; None: the family's base factors)
    experts: float = 0.0  # local experts a grouped GEMM touches, in whole-expert equivalents (per-expert floor)
    half: bool = False  # computes in bf16 / fp16 (``compute_eff_16bit`` applies)
    rows: float = 0.0  # attention decode: query rows per K/V stream (``tile_rows`` applies)
    row_elems: float = 0.0  # grouped GEMMs: activation elements of the layer's tokens (``row_bytes`` each)
    pair_elems: float = 0.0  # and of the local token-expert pairs (``pair_bytes`` each), at HBM bandwidth

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.cache_bytes


def kernel_s(w: Work, bw_bytes: float, f: KernelFactors) -> float:
    """``floor + max(FLOPs / (peak x compute_eff), bytes / (HBM bandwidth x mem_eff))``; 0 for no work.
    The floor is ``floor_us`` plus ``per_expert_us`` per local expert touched (grouped GEMMs); a 16-bit
    kernel uses ``compute_eff_16bit`` where the family sets one; with ``tile_rows``, ``rows`` query rows fill
    that share of the tensor-core tile (attention decode); a grouped GEMM adds its activations' traffic, which
    does not overlap the GEMMs: ``(row_elems x row_bytes + pair_elems x pair_bytes) / HBM bandwidth``."""
    if w.flops <= 0 and w.bytes <= 0:
        return 0.0
    try:
        ce = f.compute_eff_16bit if w.half and f.compute_eff_16bit else f.compute_eff
        if f.tile_rows and w.rows:
            ce *= min(1.0, w.rows / f.tile_rows)
        s = (f.floor_us + f.per_expert_us * w.experts) * 1e-6 + max(
            w.flops / (w.peak_flops * ce), w.bytes / (bw_bytes * f.mem_eff)
        )
        s += (w.row_elems * f.row_bytes + w.pair_elems * f.pair_bytes) / bw_bytes
    except (TypeError, ZeroDivisionError):
        s = math.nan
    if not 0 <= s < math.inf:  # a record built from out-of-range numbers (the model's own are always finite)
        raise ValueError(f"kernel time is not a finite number of seconds: {w!r} at {bw_bytes!r} B/s")
    return s


@by_identity(256)
def peak_flops(gpu: GPUSpec, dtype: str) -> float:
    """FLOP/s of ``gpu`` in the dtype ``dtype`` computes in (FP8 on FP8 tensor cores; weight-only formats in bf16)."""
    return gpu.tflops(precision_support(gpu, dtype).compute_dtype) * 1e12


@by_identity(256)
def half_peak_flops(gpu: GPUSpec) -> float:
    """FLOP/s of ``gpu`` in bf16 (fp16 where it has no bf16)."""
    return gpu.tflops("bf16" if gpu.supports("bf16") else "fp16") * 1e12
