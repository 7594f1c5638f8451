"""Gemma 4 (the MoE variant): sliding and global attention layers with different geometry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import gqa_geometry, text_common
from core.hf.fields import Fields
from core.hf.registry import reader
from core.hf.vision import gemma4_vision_params
from core.model import MoESpec, group_layers
from core.model.mixers.gqa import GQA

__all__ = ["gemma4"]


@reader("gemma4", "gemma4_text", archs=("Gemma4ForConditionalGeneration",))
def gemma4(f: Fields) -> dict[str, Any]:
    """Gemma 4 (MoE variant): sliding-window GQA layers and global layers with their own KV heads and
    head size (K used as V, still cached twice); a dense GeGLU MLP beside the MoE on every layer; the
    router has a per-dimension and a per-expert scale; 7 norms per layer; tied embeddings."""
    t, c = text_common(f, "gemma4", tied=True)
    layers = c["num_layers"]
    types = t.cfg.get("layer_types")
    if not (
        isinstance(types, list)
        and len(types) == layers
        and all(x in ("sliding_attention", "full_attention") for x in types)
    ):
        raise t.error(
            f"field 'layer_types' must list 'sliding_attention' or 'full_attention' for each of the {layers} layers"
        )
    if t.int("hidden_size_per_layer_input", default=0, minimum=0):
        raise t.error(
            "per-layer input embeddings (hidden_size_per_layer_input > 0) are not modelled; only the MoE "
            "Gemma 4 layout is"
        )
    if not t.bool("enable_moe_block", False):
        raise t.error("only the MoE variant (enable_moe_block true) is modelled")
    geometry = gqa_geometry(t, c["hidden_size"])
    sliding = GQA(**geometry, qk_norm=True, sliding_window=t.int("sliding_window"))
    glob = GQA(
        num_heads=geometry["num_heads"],
        num_kv_heads=t.int("num_global_key_value_heads"),
        head_dim=t.int("global_head_dim"),
        k_eq_v=t.bool("attention_k_eq_v", False),
        qk_norm=True,
    )
    out = dict(
        c,
        mixers=group_layers(layers, lambda i: glob if types[i] == "full_attention" else sliding),
        dense_layers=(),
        parallel_dense_intermediate_size=t.int("intermediate_size"),
        moe=MoESpec(
            n_routed_experts=t.experts("num_experts"),
            top_k=t.int("top_k_experts"),
            expert_intermediate_size=t.int("moe_intermediate_size"),
            router_bias=True,
        ),  # stands in for the per-expert scale (one value per expert)
        norms_per_layer=8,  # 7 RMSNorms + the router's per-dimension scale
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        out["vision_params"] = gemma4_vision_params(vc, c["hidden_size"])
    return out
