"""Llama 4 (Scout, Maverick): interleaved MoE, a shared expert, chunked local attention, a vision tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import common, gqa_geometry
from core.hf.fields import Fields
from core.hf.registry import reader
from core.hf.vision import vision_tower_params
from core.model import MoESpec, group_layers
from core.model.mixers.gqa import GQA

__all__ = ["llama4"]


@reader("llama4", "llama4_text", archs=("Llama4ForConditionalGeneration",))
def llama4(f: Fields) -> dict[str, Any]:
    """Llama 4: text_config holds the LM; MoE layers every interleave_moe_layer_step (the others use
    a dense MLP of intermediate_size_mlp); one shared expert of intermediate_size beside the routed
    ones; chunked local attention on the RoPE layers (no_rope_layers[i] = 1; by default three of every
    four, the fourth a global NoPE layer); vision tower from vision_config."""
    t = f.section("text_config", family="llama4", or_self=True)
    c = common(t)
    layers = c["num_layers"]
    if t.cfg.get("moe_layers") is not None:
        moe_layers = set(t.int_list("moe_layers"))
    else:
        step = t.int("interleave_moe_layer_step", default=1)
        moe_layers = set(range(step - 1, layers, step))
    dense = [i for i in range(layers) if i not in moe_layers]
    expert_ffn = t.int("intermediate_size")
    bias = t.bool("attention_bias", False)
    plain = GQA(**gqa_geometry(t, c["hidden_size"]), qkv_bias=bias, output_bias=bias)
    chunk = t.int("attention_chunk_size", default=None)
    local: set[int] = set()
    if chunk:
        nope = t.int_list("no_rope_layers")
        local = {i for i, x in enumerate(nope[:layers]) if x} if nope else {i for i in range(layers) if (i + 1) % 4}
    chunked = plain.model_copy(update={"chunk": chunk}) if chunk else plain
    vision = 0
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        vision = vision_tower_params(vc, c["hidden_size"])
    return dict(
        c,
        mixers=group_layers(layers, lambda i: chunked if i in local else plain),
        dense_layers=tuple(dense),
        dense_intermediate_size=t.int("intermediate_size_mlp") if dense else 0,
        moe=MoESpec(
            n_routed_experts=t.experts("num_local_experts"),
            top_k=t.int("num_experts_per_tok"),
            expert_intermediate_size=expert_ffn,
            n_shared_experts=1,
            shared_intermediate_size=expert_ffn,
        ),
        vision_params=vision,
    )
