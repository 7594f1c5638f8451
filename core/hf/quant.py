"""Precision presets from a checkpoint's quantisation config (``hf_quant_config.json`` from NVIDIA
ModelOpt, or a config.json's ``quantization_config``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["quant_preset"]


def _compressed_tensors_preset(q: Mapping[str, Any]) -> dict[str, str]:
    """compressed-tensors (Kimi-K2.5's INT4 experts): the quantised group's bits and type; modules on the
    ignore list (attention, shared experts, dense MLPs, lm_head) stay bf16."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("compressed-tensors config without config_groups")
    w = next(iter(groups.values())).get("weights") if isinstance(next(iter(groups.values())), Mapping) else None
    if not isinstance(w, Mapping):
        raise ValueError("compressed-tensors config_groups entry without 'weights'")
    bits, kind = w.get("num_bits"), w.get("type")
    where = "quantization_config (compressed-tensors) config_groups weights: field"
    if isinstance(bits, bool) or bits not in (4, 8):
        raise ValueError(f"{where} 'num_bits' must be 4 or 8, got {_short(bits)}")
    if kind not in ("int", "float"):
        raise ValueError(f"{where} 'type' must be 'int' or 'float', got {_short(kind)}")
    table = {(4, "int"): "int4", (8, "int"): "int8", (8, "float"): "fp8", (4, "float"): "mxfp4"}
    dtype = table[(int(bits), kind)]
    rest = "bf16" if _keeps_attention(q) else dtype
    return {"weights": rest, "routed_experts": dtype}


def quant_preset(quant_config: Mapping[str, Any]) -> dict[str, str]:
    """Suggested precision from an ``hf_quant_config.json`` (NVIDIA ModelOpt) or a config's
    ``quantization_config``: {"weights": ..., "routed_experts": ...} with planner dtype names."""
    if not isinstance(quant_config, Mapping):
        raise ValueError("the quantisation config must be a JSON object")
    q = quant_config.get("quantization", quant_config)
    if not isinstance(q, Mapping):
        raise ValueError("'quantization' must be an object")
    whole = q
    if "quantization_config" in q and isinstance(q["quantization_config"], Mapping):  # a whole config.json
        q = q["quantization_config"]
    elif isinstance(q.get("text_config"), Mapping) and isinstance(q["text_config"].get("quantization_config"), Mapping):
        q = q["text_config"]["quantization_config"]
    preset = _preset(q)
    # DeepSeek-V4 names its routed experts' format apart (config.json top level; V4.1 inside
    # quantization_config): "fp4" is E2M1 with one ue8m0 scale per 32 weights, i.e. OCP MXFP4
    expert = q.get("expert_dtype", whole.get("expert_dtype"))
    if expert is not None:
        experts = {"fp4": "mxfp4", "fp8": "fp8", "bf16": "bf16"}
        if not isinstance(expert, str) or expert not in experts:
            raise ValueError(f"expert_dtype {expert!r} is not modelled; known: {', '.join(experts)}")
        preset = {**preset, "routed_experts": experts[expert]}
    return preset


def weight_block_width(quant_config: Mapping[str, Any]) -> int | None:
    """The width of the checkpoint's block-quantisation scales along a weight's split dimension, from a
    config's ``quantization_config.weight_block_size`` ([rows, cols], e.g. DeepSeek-V3 [128, 128],
    DeepSeek-V4.1-Flash [32, 32]); None when the config names none. ValueError for a malformed one."""
    q = quant_config.get("quantization_config") if isinstance(quant_config, Mapping) else None
    if not isinstance(q, Mapping):
        text = quant_config.get("text_config") if isinstance(quant_config, Mapping) else None
        q = text.get("quantization_config") if isinstance(text, Mapping) else None
    if not isinstance(q, Mapping) or q.get("weight_block_size") is None:
        return None
    size = q["weight_block_size"]
    if (
        not isinstance(size, list)
        or len(size) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 65_536 for x in size)
    ):
        raise ValueError(
            f"quantization_config.weight_block_size must be two whole numbers in 1..65,536, got {_short(size)}"
        )
    return max(size)


def _preset(q: Mapping[str, Any]) -> dict[str, str]:
    algo = str(q.get("quant_algo") or q.get("quant_method") or "").lower()
    fmt = str(q.get("fmt") or "").lower()
    if algo == "compressed-tensors":
        return _compressed_tensors_preset(q)
    # most specific names first: "fp4" is inside "mxfp4" and "nvfp4"
    table = (
        ("mxfp4", "mxfp4"),
        ("nvfp4", "nvfp4"),
        ("fp4", "nvfp4"),
        ("fp8", "fp8"),
        ("w4a16_awq", "int4"),
        ("awq", "int4"),
        ("gptq", "int4"),
        ("w8a8", "int8"),
        ("int8", "int8"),
        ("mixed_precision", "fp8"),
    )
    for key, dtype in table:
        if key in algo or (key == "fp8" and fmt.startswith("e4m3")):
            if algo == "mixed_precision":
                return {"weights": "fp8", "routed_experts": "nvfp4"}
            if _keeps_attention(q):
                return {"weights": "bf16", "routed_experts": dtype}
            return {"weights": "fp8" if dtype in ("nvfp4", "mxfp4") else dtype, "routed_experts": dtype}
    raise ValueError(f"unrecognised quantisation {algo or '(none)'!r}; known: nvfp4, mxfp4, fp8, awq/gptq int4, int8")


def _keeps_attention(q: Mapping[str, Any]) -> bool:
    """The checkpoint leaves attention unquantised: ``modules_to_not_convert`` (Hugging Face),
    ``exclude_modules`` (ModelOpt) or ``ignore`` names an attention module (gpt-oss: ``model.layers.*.self_attn``)."""
    names = []
    for key in ("modules_to_not_convert", "exclude_modules", "ignore"):
        v = q.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError(f"quantization_config: field '{key}' must be a list of module names, got {_short(v)}")
        names += v
    return any("attn" in n for n in names)


def _short(v: Any, limit: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 1] + "…"
