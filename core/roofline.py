"""Roofline arithmetic: GEMM FLOPs, bytes and intensity; ridge points; attainable FLOP/s; time bounds.

A GEMM here is ``[m, k] x [k, n]``: ``m`` tokens, ``k`` input features, ``n`` output features, with
the weight ``[k, n]``. Every operand is read or written once (no cache reuse across GEMMs), which is
the roofline's lower bound on traffic. Vectorised: every argument may be a numpy array.
"""

from __future__ import annotations

import numpy as np

from core._util.checks import no_overflow, nonneg
from core.hardware import GPUSpec
from core.model.dtypes import COMPUTE_DTYPES

__all__ = [
    "attainable_tflops",
    "gemm_bytes",
    "gemm_flops",
    "gemm_intensity",
    "gpu_arrays",
    "ridge_point",
    "time_lower_bound_s",
]


def _gpu(gpu: GPUSpec | str) -> GPUSpec:
    if isinstance(gpu, GPUSpec):
        return gpu
    from core.catalog import load_catalog

    return load_catalog().gpu(gpu)


def gemm_flops(m, k, n):
    """``2 m k n``: one multiply and one add per weight per token."""
    m, k, n = nonneg("m", m), nonneg("k", k), nonneg("n", n)
    with np.errstate(over="ignore", invalid="ignore"):
        return no_overflow("GEMM FLOPs", 2.0 * m * k * n)


def gemm_bytes(m, k, n, *, weight_bytes=2.0, act_bytes=2.0, out_bytes=2.0):
    """Bytes moved: the weight ``k n`` once, the input ``m k`` once, the output ``m n`` once."""
    m, k, n = nonneg("m", m), nonneg("k", k), nonneg("n", n)
    wb, ab, ob = nonneg("weight_bytes", weight_bytes), nonneg("act_bytes", act_bytes), nonneg("out_bytes", out_bytes)
    with np.errstate(over="ignore", invalid="ignore"):
        return no_overflow("GEMM bytes", k * n * wb + m * k * ab + m * n * ob)


def gemm_intensity(m, k, n, bytes_per_elem=2.0, *, weight_bytes=None, act_bytes=None, out_bytes=None):
    """Arithmetic intensity (FLOP per byte) of ``[m, k] x [k, n]``: ``2 m k n / (k n w + m k a + m n o)``.

    ``bytes_per_elem`` sets all three element sizes; ``weight_bytes`` / ``act_bytes`` / ``out_bytes``
    override one each (e.g. an FP8 weight with block scales, bf16 activations). For ``m << k, n`` in
    bf16 it is about ``m``: a decode GEMM over 8 tokens does ~8 FLOP per byte.
    """
    wb = bytes_per_elem if weight_bytes is None else weight_bytes
    ab = bytes_per_elem if act_bytes is None else act_bytes
    ob = bytes_per_elem if out_bytes is None else out_bytes
    flops = gemm_flops(m, k, n)
    moved = gemm_bytes(m, k, n, weight_bytes=wb, act_bytes=ab, out_bytes=ob)
    if np.any(moved <= 0):
        raise ValueError("a GEMM must move some bytes (k x n > 0)")
    with np.errstate(over="ignore", invalid="ignore"):
        out = no_overflow("GEMM intensity", flops / moved)
    return float(out) if np.ndim(out) == 0 else out


def ridge_point(gpu: GPUSpec | str, dtype: str = "bf16") -> float:
    """Dense FLOP/s over HBM bytes/s (FLOP per byte): GEMMs below it are memory-bound.
    ``gpu`` is a GPUSpec or a catalog id; ``dtype`` a compute dtype the GPU runs natively."""
    return _gpu(gpu).ridge_point_flop_per_byte(dtype)


def gpu_arrays(gpus: list[GPUSpec], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(peak dense TFLOPS, HBM TB/s) per GPU for ``dtype``, NaN where the GPU lacks native support,
    shaped ``[len(gpus), 1]`` to broadcast against a row of intensities or batches."""
    if dtype not in COMPUTE_DTYPES:
        raise ValueError(f"unknown compute dtype {dtype!r}; allowed: {', '.join(COMPUTE_DTYPES)}")
    peak = np.array([g.dense_tflops.get(dtype, np.nan) for g in gpus], dtype=np.float64)[:, None]
    bw = np.array([g.hbm_bandwidth_gbps / 1000.0 for g in gpus], dtype=np.float64)[:, None]
    return peak, bw


def attainable_tflops(peak_tflops, hbm_tbps, intensity):
    """The roofline: ``min(peak, intensity x bandwidth)`` in TFLOP/s (TB/s x FLOP/byte = TFLOP/s).
    Broadcasts: ``[gpus, 1]`` peaks against ``[1, points]`` intensities give a ``[gpus, points]`` grid.
    A NaN peak (:func:`gpu_arrays`' mark for a dtype the GPU does not run natively) gives NaN there."""
    peak = np.asarray(peak_tflops, dtype=np.float64)
    if np.any(np.isinf(peak)) or np.any(peak < 0):
        raise ValueError("peak_tflops must be finite and >= 0 (NaN marks a GPU without the dtype)")
    bw = nonneg("hbm_tbps", hbm_tbps)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.minimum(peak, no_overflow("intensity x bandwidth", nonneg("intensity", intensity) * bw))


def time_lower_bound_s(flops, bytes_moved, gpu: GPUSpec | str, dtype: str = "bf16"):
    """Roofline time bound: ``max(FLOPs / peak, bytes / bandwidth)`` in seconds."""
    g = _gpu(gpu)
    compute = nonneg("flops", flops) / (g.tflops(dtype) * 1e12)
    memory = nonneg("bytes_moved", bytes_moved) / g.hbm_bytes_per_s
    with np.errstate(invalid="ignore"):
        out = np.maximum(compute, memory)
    return float(out) if np.ndim(out) == 0 else out
