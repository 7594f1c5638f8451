"""The dtypes the planner knows: storage dtypes of weights (incl. llama.cpp's GGUF block types), of a KV
cache and of the all-to-all dispatch, and the tensor-core math dtypes GPU datasheets quote peaks for."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ACTIVE_CONVENTIONS",
    "COMPUTE_DTYPES",
    "DISPATCH_DTYPES",
    "DTYPES",
    "GGUF_DTYPES",
    "KV_DTYPES",
    "LINEAR_STATE_DTYPES",
    "DispatchDtypeName",
    "DtypeName",
    "KVDtypeName",
    "LinearStateDtypeName",
]

# Storage dtypes a weight tensor can have. nvfp4 / mxfp4 are 4-bit floats with block scales,
# int4 is AWQ/GPTQ-style integer with group scales (their scale overhead lives in core.memory).
# llama.cpp GGUF types (block formats; bits per weight computed in core.memory from their block layouts)
GGUF_DTYPES: tuple[str, ...] = (
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "iq4_xs",
    "q3_k_m",
    "iq3_xxs",
    "q2_k",
    "iq2_xs",
    "iq2_xxs",
    "iq1_s",
)
DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4", *GGUF_DTYPES)
# Dtypes a KV cache is stored in by the serving engines we model (vLLM / SGLang / TRT-LLM).
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8")
# Tensor-core math a GPU datasheet quotes dense TFLOPS for.
COMPUTE_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "fp4")
# How a vendor's "active parameters" headline is counted (see catalogs/README.md).
ACTIVE_CONVENTIONS: tuple[str, ...] = ("incl_embedding_and_head", "excl_input_embedding", "non_embedding")
# Dtypes the tokens sent to the experts travel in (DeepEP dispatches FP8 with block scales; NVFP4 on Blackwell).
DISPATCH_DTYPES: tuple[str, ...] = ("bf16", "fp8", "nvfp4")
# Dtypes a linear-attention / SSM layer's recurrent state is stored in (the checkpoints' fp32, or the engines' bf16
# override: vLLM --mamba-ssm-cache-dtype, SGLang --mamba-ssm-dtype).
LINEAR_STATE_DTYPES: tuple[str, ...] = ("fp32", "bf16")

# The same names as types (pydantic validates a field against the tuple; one list, not two).
DtypeName = Literal[DTYPES]  # Literal of a tuple: the tuple's items
KVDtypeName = Literal[KV_DTYPES]
DispatchDtypeName = Literal[DISPATCH_DTYPES]
LinearStateDtypeName = Literal[LINEAR_STATE_DTYPES]
