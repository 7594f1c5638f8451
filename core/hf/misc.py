"""Families with plain GQA attention: Mixtral, gpt-oss, Hunyuan-Large, Snowflake Arctic, Grok-1, and the
dense decoders (Llama, Mistral, Qwen2, Qwen3)."""

from __future__ import annotations

from typing import Any

from core.hf._common import common, gqa_geometry, moe_spec, sliding_layers
from core.hf.fields import EXPERTS_WHY, MAX_ROUTED_EXPERTS, Fields
from core.hf.registry import reader
from core.model import MoESpec, group_layers
from core.model.mixers.gqa import GQA

__all__ = ["arctic", "dense", "gpt_oss", "grok", "hunyuan", "mixtral"]


def _windowed(f: Fields, num_layers: int, **attention):
    """Mixer groups of a GQA model with an optional sliding window on some layers."""
    window, sliding = sliding_layers(f, num_layers)
    plain = GQA(**attention)
    windowed = plain.model_copy(update={"sliding_window": window}) if window else plain
    return group_layers(num_layers, lambda i: windowed if i in sliding else plain)


@reader("mixtral", archs=("MixtralForCausalLM",))
def mixtral(f: Fields) -> dict[str, Any]:
    """Mixtral: every layer MoE, experts are full-width SwiGLU FFNs of intermediate_size."""
    c = common(f)
    return dict(
        c,
        mixers=_windowed(f, c["num_layers"], **gqa_geometry(f, c["hidden_size"])),
        moe=moe_spec(f, experts="num_local_experts", width="intermediate_size"),
    )


@reader("gpt_oss", archs=("GptOssForCausalLM",))
def gpt_oss(f: Fields) -> dict[str, Any]:
    """gpt-oss: every layer MoE with biased experts (gate_up 2f + down h biases) and a biased router,
    q/k/v/o biases, a learned sink per head, alternating 128-token sliding-window layers."""
    c = common(f)
    bias = f.bool("attention_bias", True)
    return dict(
        c,
        mixers=_windowed(
            f, c["num_layers"], **gqa_geometry(f, c["hidden_size"]), qkv_bias=bias, output_bias=bias, sinks=True
        ),
        moe=moe_spec(
            f,
            experts="num_local_experts",
            top_k=("num_experts_per_tok", "experts_per_token"),
            width="intermediate_size",
            router_bias=True,
            expert_bias=True,
        ),
    )


@reader("hunyuan", archs=("HunYuanForCausalLM", "HunYuanMoEV1ForCausalLM"), aliases=("hunyuan_v1_moe",))
def hunyuan(f: Fields) -> dict[str, Any]:
    """Hunyuan-Large: every layer MoE (num_experts routed, moe_topk, num_shared_expert shared, all of
    intermediate_size), q/k norms, cross-layer attention (K/V stored every cla_share_factor-th layer, the
    layers between borrow it)."""
    c = common(f)
    geometry = gqa_geometry(f, c["hidden_size"])
    if f.has("attention_head_dim"):
        geometry["head_dim"] = f.int("attention_head_dim")
    bias = f.bool("attention_bias", False)
    owner = GQA(**geometry, qkv_bias=bias, output_bias=bias, qk_norm=f.bool("use_qk_norm", False))
    borrower = owner.model_copy(update={"stores_kv": False})
    share = f.int("cla_share_factor", default=1) if f.bool("use_cla", False) else 1
    ffn = f.first_int("moe_intermediate_size", default=None) or f.int("intermediate_size")
    # the shared expert exists only with use_mixed_mlp_moe (transformers' default: false)
    n_shared = f.first_int("num_shared_expert", default=0) if f.bool("use_mixed_mlp_moe", False) else 0

    return dict(
        c,
        mixers=group_layers(c["num_layers"], lambda i: borrower if i % share else owner),
        moe=MoESpec(
            n_routed_experts=f.first_int("num_experts", maximum=MAX_ROUTED_EXPERTS, why=EXPERTS_WHY),
            top_k=f.first_int("moe_topk"),
            expert_intermediate_size=ffn,
            n_shared_experts=n_shared,
            shared_intermediate_size=ffn if n_shared else 0,
        ),
    )


@reader("arctic", archs=("ArcticForCausalLM",))
def arctic(f: Fields) -> dict[str, Any]:
    """Snowflake Arctic: MoE every moe_layer_frequency layers; with parallel_attn_mlp_res a dense
    residual MLP of width hidden_size (and its own norm) runs beside the MoE on those layers."""
    c = common(f)
    layers = c["num_layers"]
    freq = f.int("moe_layer_frequency", default=2)
    dense = [i for i in range(layers) if (i + 1) % freq != 0]
    parallel = f.bool("parallel_attn_mlp_res", False)
    return dict(
        c,
        mixers=group_layers(layers, lambda i, m=GQA(**gqa_geometry(f, c["hidden_size"])): m),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        parallel_dense_intermediate_size=c["hidden_size"] if parallel else 0,
        norms_per_layer=3 if parallel else 2,
        moe=moe_spec(f, experts="num_local_experts", width="intermediate_size"),
    )


@reader("grok-1", archs=("Grok1ModelForCausalLM", "Grok1ForCausalLM", "GrokForCausalLM"), aliases=("grok", "grok1"))
def grok(f: Fields) -> dict[str, Any]:
    """Grok-1: every layer MoE (8 GeGLU experts, 3 matrices each), 4 RMSNorms per layer, tied output."""
    c = common(f)
    c["tie_word_embeddings"] = f.bool("tie_word_embeddings", True)

    return dict(
        c,
        mixers=group_layers(c["num_layers"], lambda i, m=GQA(**gqa_geometry(f, c["hidden_size"])): m),
        norms_per_layer=4,
        moe=MoESpec(
            n_routed_experts=f.experts("num_local_experts", "num_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("intermediate_size", "moe_intermediate_size"),
        ),
    )


@reader(
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    archs=("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"),
)
def dense(f: Fields) -> dict[str, Any]:
    """Dense decoders (Llama, Mistral, Qwen2, Qwen3): SwiGLU FFN on every layer."""
    c = common(f)
    is_qwen2 = f.family == "qwen2"
    bias = f.bool("attention_bias", is_qwen2)
    attention = dict(
        **gqa_geometry(f, c["hidden_size"]),
        qkv_bias=bias,
        output_bias=bias and not is_qwen2,
        qk_norm=f.family == "qwen3",
    )
    if f.family == "mistral" or f.bool("use_sliding_window", False):
        mixers = _windowed(f, c["num_layers"], **attention)
    else:
        mixers = group_layers(c["num_layers"], lambda i, m=GQA(**attention): m)
    return dict(
        c,
        mixers=mixers,
        dense_layers=tuple(range(c["num_layers"])),
        dense_intermediate_size=f.int("intermediate_size"),
        moe=None,
    )
