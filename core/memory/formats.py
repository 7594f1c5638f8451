"""Weight storage formats: bytes per element of each dtype, and per weight with its block / group scales
(the quantised schemes engines load), including llama.cpp's GGUF block types."""

from __future__ import annotations

from dataclasses import dataclass

from core.model.dtypes import GGUF_DTYPES

__all__ = [
    "DTYPE_BYTES",
    "GGUF_BLOCKS",
    "WEIGHT_FORMATS",
    "WeightFormat",
    "bytes_per_param",
    "dtype_bytes",
    "gguf_bits_per_weight",
]

# Bytes per element of the payload, without block/group scales.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nvfp4": 0.5,
    "mxfp4": 0.5,
}


@dataclass(frozen=True)
class WeightFormat:
    """How a weight dtype is stored: payload bits plus the scale bytes it needs per weight."""

    dtype: str
    payload_bits: float
    scale_bytes_per_param: float
    scales: str

    @property
    def bytes_per_param(self) -> float:
        return self.payload_bits / 8 + self.scale_bytes_per_param

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes_per_param


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    f.dtype: f
    for f in (
        WeightFormat("fp32", 32, 0.0, "none"),
        WeightFormat("bf16", 16, 0.0, "none"),
        WeightFormat("fp16", 16, 0.0, "none"),
        WeightFormat(
            "fp8",
            8,
            4 / (128 * 128),
            "one fp32 scale per 128 x 128 block (DeepSeek-V3's block-wise FP8, DeepGEMM)",
        ),
        WeightFormat(
            "int8",
            8,
            2 / 4096,
            "one fp16 scale per output channel (W8A8 per-channel), about 2 bytes per 4,096-weight row",
        ),
        WeightFormat(
            "int4",
            4,
            (2 + 0.5) / 128,
            "AWQ / GPTQ, group size 128: one fp16 scale and one packed 4-bit zero point per 128 weights",
        ),
        WeightFormat(
            "nvfp4",
            4,
            1 / 16,
            "one FP8 (E4M3) scale per 16 weights, plus one fp32 scale per tensor (negligible)",
        ),
        WeightFormat("mxfp4", 4, 1 / 32, "one 8-bit (E8M0) shared exponent per 32 weights (OCP MX)"),
    )
}

# llama.cpp GGUF block types: (weights per block, bytes per block, layout), read off the block structs of
# ggml/src/ggml-common.h (QK_K = 256). The bytes include each block's own scales, so
# bits per weight = 8 x bytes / weights (Q4_K: 8 x 144 / 256 = 4.5).
GGUF_BLOCKS: dict[str, tuple[int, int, str]] = {
    "q8_0": (32, 2 + 32, "fp16 scale + 32 int8"),
    "q6_k": (256, 128 + 64 + 16 + 2, "ql[128] + qh[64] + 16 int8 scales + fp16 d"),
    "q5_k": (256, 4 + 12 + 32 + 128, "fp16 d, dmin + 12 B 6-bit scales + qh[32] + qs[128]"),
    "q4_k": (256, 4 + 12 + 128, "fp16 d, dmin + 12 B 6-bit scales + qs[128]"),
    "q3_k": (256, 32 + 64 + 12 + 2, "hmask[32] + qs[64] + 12 B scales + fp16 d"),
    "q2_k": (256, 16 + 64 + 4, "16 B 4-bit scales/mins + qs[64] + fp16 d, dmin"),
    "iq4_xs": (256, 2 + 2 + 4 + 128, "fp16 d + scales_h (2 B) + scales_l[4] + qs[128] (non-linear 4-bit grid)"),
    "iq3_xxs": (256, 2 + 96, "fp16 d + 96 B grid indices and signs"),
    "iq2_xs": (256, 2 + 64 + 8, "fp16 d + 32 uint16 grid indices + 8 B scales"),
    "iq2_xxs": (256, 2 + 64, "fp16 d + 32 uint16 grid indices, signs and scales"),
    "iq1_s": (256, 2 + 32 + 16, "fp16 d + qs[32] + 8 uint16 qh"),
}


def gguf_bits_per_weight(block_type: str) -> float:
    """Bits per weight of one GGUF block type, scales included (``GGUF_BLOCKS``)."""
    try:
        n, nbytes, _ = GGUF_BLOCKS[block_type]
    except KeyError:
        raise ValueError(f"unknown GGUF block type {block_type!r}; allowed: {', '.join(GGUF_BLOCKS)}") from None
    return 8 * nbytes / n


# llama.cpp's _M mixes keep some tensors at a higher type (src/llama-quant.cpp). For an MoE checkpoint the
# routed experts dominate, so the mix is taken over the three FFN matrices: gate and up at the base type,
# down partly higher. Q4_K_M / Q5_K_M: ffn_down is Q6_K on the "use_more_bits" layers (first and last
# eighth and every third in between: about half of them); Q3_K_M: ffn_down is Q4_K (Q5_K on the first
# sixteenth). Attention V tensors also go up a step; they are a small share of an MoE and are not modelled.
_GGUF_MIXES: dict[str, tuple[str, list[tuple[str, float]], str]] = {
    "q4_k_m": (
        "q4_k",
        [("q4_k", 2 / 3), ("q6_k", 1 / 6), ("q4_k", 1 / 6)],
        "Q4_K gate/up, ffn_down Q6_K on about half the layers",
    ),
    "q5_k_m": (
        "q5_k",
        [("q5_k", 2 / 3), ("q6_k", 1 / 6), ("q5_k", 1 / 6)],
        "Q5_K gate/up, ffn_down Q6_K on about half the layers",
    ),
    "q3_k_m": (
        "q3_k",
        [("q3_k", 2 / 3), ("q5_k", 1 / 48), ("q4_k", 15 / 48)],
        "Q3_K gate/up, ffn_down Q4_K (Q5_K on the first sixteenth of layers)",
    ),
}


def _gguf_format(dtype: str) -> WeightFormat:
    if dtype in _GGUF_MIXES:
        _, parts, what = _GGUF_MIXES[dtype]
        bpw = sum(w * gguf_bits_per_weight(t) for t, w in parts)
        return WeightFormat(dtype, bpw, 0.0, f"GGUF mix: {what} (llama.cpp llama-quant.cpp); blocks carry their scales")
    n, nbytes, layout = GGUF_BLOCKS[dtype]
    return WeightFormat(
        dtype, 8 * nbytes / n, 0.0, f"GGUF block of {n} weights in {nbytes} B: {layout} (ggml-common.h)"
    )


WEIGHT_FORMATS.update({d: _gguf_format(d) for d in GGUF_DTYPES})
DTYPE_BYTES.update({d: WEIGHT_FORMATS[d].bytes_per_param for d in GGUF_DTYPES})


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a storage dtype (payload only)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}") from None


def bytes_per_param(dtype: str) -> float:
    """Bytes per weight including its scales (``WEIGHT_FORMATS``)."""
    try:
        return WEIGHT_FORMATS[dtype].bytes_per_param
    except KeyError:
        raise ValueError(f"unknown weight dtype {dtype!r}; allowed: {', '.join(WEIGHT_FORMATS)}") from None
