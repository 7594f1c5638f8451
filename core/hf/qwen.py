"""Qwen MoE families: Qwen2-MoE, Qwen3-MoE, Qwen3.5 (Gated DeltaNet + gated GQA)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import common, gqa_geometry, sliding_layers
from core.hf.fields import Fields
from core.hf.registry import reader
from core.hf.vision import qwen_vl_vision_params
from core.model import MoESpec, group_layers
from core.model.mixers.gqa import GQA
from core.model.mixers.linear import GatedDeltaNet

__all__ = ["gated_deltanet", "qwen35", "qwen_moe"]


def _qwen_parts(f: Fields, **attention) -> tuple[dict[str, Any], GQA, frozenset[int], int | None]:
    c = common(f)
    layers = c["num_layers"]
    window, sliding = sliding_layers(f, layers) if f.bool("use_sliding_window", False) else (None, frozenset())
    is_qwen2 = f.family == "qwen2_moe"
    gqa = dict(
        **gqa_geometry(f, c["hidden_size"]),
        qkv_bias=f.bool("attention_bias", is_qwen2),
        qk_norm=not is_qwen2,
        **attention,
    )
    step = f.int("decoder_sparse_step", default=1)
    mlp_only = set(f.int_list("mlp_only_layers"))
    dense = [i for i in range(layers) if i in mlp_only or (i + 1) % step != 0]
    shared = f.int("shared_expert_intermediate_size", default=0, minimum=0)
    c.update(
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=f.experts("num_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            n_shared_experts=1 if shared else 0,
            shared_intermediate_size=shared,
            shared_expert_gate=bool(shared),
        ),
    )
    return c, gqa, sliding, window


@reader("qwen2_moe", "qwen3_moe", archs=("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"))
def qwen_moe(f: Fields) -> dict[str, Any]:
    """Qwen2-MoE / Qwen3-MoE: layer i is MoE unless in mlp_only_layers, every decoder_sparse_step;
    Qwen2-MoE adds one gated shared expert of shared_expert_intermediate_size; Qwen3 adds q/k norms."""
    c, gqa, sliding, window = _qwen_parts(f)
    plain, windowed = GQA(**gqa), GQA(**gqa, sliding_window=window) if window else None
    c["mixers"] = group_layers(c["num_layers"], lambda i: windowed if i in sliding else plain)
    return c


@reader("qwen3_5_moe", "qwen3_5_moe_text", archs=("Qwen3_5MoeForConditionalGeneration",))
def qwen35(f: Fields) -> dict[str, Any]:
    """Qwen3.5 (qwen3_5_moe): Qwen3-MoE experts with a gated shared expert on every layer; three of every
    four mixers are Gated DeltaNet (linear attention with a fixed fp32 state), the fourth is gated GQA
    (q_proj also emits an output gate) with q/k norms; one MTP layer; a vision tower beside the LM."""
    t = f.section("text_config", family="qwen3_5_moe", or_self=True)
    c, gqa, _, _ = _qwen_parts(t, output_gate=t.bool("attn_output_gate", True))
    c["tie_word_embeddings"] = f.bool("tie_word_embeddings", t.bool("tie_word_embeddings", False))
    layers = c["num_layers"]
    types = t.cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers or any(x not in ("linear_attention", "full_attention") for x in types):
            raise t.error(
                f"field 'layer_types' must list 'linear_attention' or 'full_attention' for each of the {layers} layers"
            )
        linear = {i for i, x in enumerate(types) if x == "linear_attention"}
    else:
        every = t.int("full_attention_interval", default=4)
        linear = {i for i in range(layers) if (i + 1) % every != 0}
    gdn = gated_deltanet(t)
    full = GQA(**gqa)
    c.update(
        mixers=group_layers(layers, lambda i: gdn if i in linear else full),
        num_mtp_layers=t.int("mtp_num_hidden_layers", default=0, minimum=0),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        c["vision_params"] = qwen_vl_vision_params(vc)
    return c


def gated_deltanet(t: Fields) -> GatedDeltaNet:
    """The Gated DeltaNet layer of Qwen3.5 / Qwen3-Next / Qwen4-Exp from its ``linear_*`` fields."""
    return GatedDeltaNet(
        key_heads=t.int("linear_num_key_heads"),
        key_head_dim=t.int("linear_key_head_dim"),
        value_heads=t.int("linear_num_value_heads"),
        value_head_dim=t.int("linear_value_head_dim"),
        conv_kernel=t.int("linear_conv_kernel_dim", default=4),
    )
