"""Xiaomi MiMo-V2 (``mimo_v2``: MiMo-V2.5 / V2.5-Pro; ``mimo_v2_flash``): full and sliding-window GQA layers
with their own head geometry (q/k head 192, v head 128), a dense first layer, routed experts."""

from __future__ import annotations

from typing import Any

from core.hf._common import MAX_HEAD_DIM, MAX_HEADS, common, dense_prefix, moe_spec
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import group_layers
from core.model.mixers.gqa import GQA

__all__ = ["MIMO_MTP_LAYERS", "mimo_v2"]

MIMO_MTP_LAYERS = 3  # shipped with every MiMo-V2 checkpoint, absent from config.json (see mimo_v2)


def _flags(f: Fields, key: str, layers: int) -> list[int] | None:
    """A per-layer list of 0 / 1 (``hybrid_layer_pattern``, ``moe_layer_freq``); None when absent."""
    v = f.cfg.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != layers or any(x not in (0, 1) or isinstance(x, bool) for x in v):
        raise f.error(f"field '{key}' must be {layers} zeros and ones (one per layer)")
    return v


def _geometry(f: Fields, prefix: str, heads: int | None = None, kv: int | None = None, d: int | None = None):
    """Heads, KV heads, q/k and v head sizes of the full layers (no prefix) or the sliding ones ("swa_",
    defaulting to the full layers' values)."""
    heads = f.int(f"{prefix}num_attention_heads", default=heads or ..., maximum=MAX_HEADS)
    kv = f.int(f"{prefix}num_key_value_heads", default=kv or heads, maximum=MAX_HEADS)
    if heads % kv:
        raise f.error(f"{prefix}num_attention_heads ({heads}) is not a multiple of {prefix}num_key_value_heads ({kv})")
    d = f.int(f"{prefix}head_dim", default=d or ..., maximum=MAX_HEAD_DIM)
    return dict(num_heads=heads, num_kv_heads=kv, head_dim=d, v_head_dim=f.int(f"{prefix}v_head_dim", default=d))


@reader("mimo_v2", "mimo_v2_flash", archs=("MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"))
def mimo_v2(f: Fields) -> dict[str, Any]:
    """hybrid_layer_pattern marks each layer full (0) or sliding-window (1, the last sliding_window
    tokens); each kind has its own heads / KV heads / head_dim / v_head_dim (swa_* for the sliding ones) and
    optionally one learned sink per head (add_full_attention_sink_bias, add_swa_attention_sink_bias);
    moe_layer_freq marks the MoE layers (0 = dense of intermediate_size); routed experts of
    moe_intermediate_size with a biased sigmoid router (topk_method noaux_tc), n_shared_experts (null: none).
    MTP: MiMo-V2 checkpoints ship 3 MTP layers that config.json does not list (llama.cpp's converter; the V2.5-Pro
    report's safetensors inventory is the backbone + 3 x 644,905,088): ``num_nextn_predict_layers`` when given,
    else 3; each is a sliding-window layer (with its sinks) and a dense FFN of intermediate_size."""
    c = common(f)
    layers = c["num_layers"]
    bias = f.bool("attention_bias", False)
    full_geo = _geometry(f, "")
    full = GQA(**full_geo, qkv_bias=bias, sinks=f.bool("add_full_attention_sink_bias", False))
    pattern = _flags(f, "hybrid_layer_pattern", layers) or [0] * layers
    sliding = full
    if any(pattern):
        swa_geo = _geometry(f, "swa_", full_geo["num_heads"], full_geo["num_kv_heads"], full_geo["head_dim"])
        if not f.has("swa_v_head_dim"):
            swa_geo["v_head_dim"] = full_geo["v_head_dim"]
        sliding = GQA(
            **swa_geo,
            qkv_bias=bias,
            sinks=f.bool("add_swa_attention_sink_bias", False),
            sliding_window=f.int("sliding_window", "sliding_window_size"),
        )
    moe_flags = _flags(f, "moe_layer_freq", layers)
    dense = [i for i, x in enumerate(moe_flags) if x == 0] if moe_flags else list(range(dense_prefix(f, layers)))
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    width = f.int("moe_intermediate_size")
    return dict(
        c,
        mixers=group_layers(layers, lambda i: sliding if pattern[i] else full),
        mtp_mixer=sliding,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=MIMO_MTP_LAYERS, minimum=0),
        mtp_dense_ffn=True,
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size"),
        moe=moe_spec(
            f,
            experts="n_routed_experts",
            width="moe_intermediate_size",
            shared=n_shared,
            shared_width=width,
            router_bias=f.str("topk_method", "") == "noaux_tc",
            n_groups=f.int("n_group", default=1),
            topk_groups=f.int("topk_group", default=1),
        ),
    )
