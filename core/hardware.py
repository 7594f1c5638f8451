"""How a GPU executes a storage dtype: natively on its tensor cores, weight-only (dequantised in the GEMM)
or emulated. Used by the memory notes, the step-time model, the roofline and the single-box page."""

from __future__ import annotations

from dataclasses import dataclass

from core.specs import GGUF_DTYPES, GPUSpec

__all__ = ["PrecisionSupport", "precision_support"]


@dataclass(frozen=True)
class PrecisionSupport:
    """Whether a GPU runs a storage dtype natively, weight-only (dequantised) or emulated."""

    dtype: str
    status: str  # "native" | "weight_only" | "emulated"
    compute_dtype: str
    message: str

    @property
    def native(self) -> bool:
        return self.status == "native"


def precision_support(gpu: GPUSpec, dtype: str) -> PrecisionSupport:
    """How ``gpu`` executes weights stored as ``dtype``.

    fp8 needs Hopper/Ada/Blackwell/CDNA3 tensor cores; fp4 (nvfp4, mxfp4) needs Blackwell (NVIDIA) or
    MI355X (MXFP4 only). Without them the engines still run such checkpoints weight-only (e.g. vLLM's
    Marlin kernels dequantise FP8 / FP4 weights to bf16): the memory saving holds, the compute runs in
    bf16, and the app marks the cell "emulated". int4 (AWQ/GPTQ) is weight-only everywhere (W4A16).
    """
    half = "bf16" if gpu.supports("bf16") else "fp16"
    if dtype in ("fp32", "bf16", "fp16"):
        return PrecisionSupport(dtype, "native", half, f"{dtype} runs natively on {gpu.name}")
    if dtype in ("fp8", "int8"):
        if gpu.supports(dtype):
            return PrecisionSupport(dtype, "native", dtype, f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype,
            "emulated",
            half,
            f"{gpu.name} has no {dtype} tensor cores: {dtype} weights run weight-only (dequantised to {half}); "
            "memory is saved, compute is not",
        )
    if dtype == "int4":
        return PrecisionSupport(
            dtype, "weight_only", half, f"int4 (AWQ/GPTQ) is weight-only: dequantised to {half} in the GEMM (W4A16)"
        )
    if dtype in GGUF_DTYPES:
        return PrecisionSupport(
            dtype,
            "weight_only",
            half,
            f"{dtype} is a llama.cpp GGUF type: weight-only, dequantised in the kernel (llama.cpp, not vLLM/SGLang)",
        )
    if dtype in ("nvfp4", "mxfp4"):
        if gpu.supports("fp4") and (dtype == "mxfp4" or gpu.vendor == "nvidia"):
            return PrecisionSupport(dtype, "native", "fp4", f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype,
            "emulated",
            half,
            f"{gpu.name} has no native {dtype} tensor cores (Blackwell or, for mxfp4, MI355X): weight-only, "
            f"dequantised to {half}",
        )
    raise ValueError(
        f"unknown dtype {dtype!r}; allowed: fp32, bf16, fp16, fp8, int8, int4, nvfp4, mxfp4, " + ", ".join(GGUF_DTYPES)
    )
