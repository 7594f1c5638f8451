"""DeepSeek-architecture families: DeepSeekMoE, DeepSeek-V2/V3/V3.2, Kimi K2 / K2.5, GLM-5 (the V3.2
layout), DeepSeek-V4 (compressed attention) and Kimi-K3 (KDA + gated MLA)."""

from __future__ import annotations

from typing import Any

from core.hf._common import MAX_HEAD_DIM, MAX_HEADS, common, dense_prefix, gqa_geometry
from core.hf.fields import Fields
from core.hf.registry import reader
from core.hf.vision import moonvit_params
from core.model import MoESpec, group_layers
from core.model.mixers import Indexer
from core.model.mixers.compressed import CompressedAttention
from core.model.mixers.gqa import GQA
from core.model.mixers.linear import KDA
from core.model.mixers.mla import MLA

__all__ = ["deepseek", "dsv4", "kimi_k3", "kimi_k25", "v4_geometry"]


def _mla(f: Fields, **kw) -> MLA:
    return MLA(
        num_heads=f.int("num_attention_heads", maximum=MAX_HEADS),
        q_lora_rank=f.int("q_lora_rank", default=None, minimum=0) or None,
        kv_lora_rank=f.int("kv_lora_rank"),
        qk_nope_head_dim=f.int("qk_nope_head_dim", maximum=MAX_HEAD_DIM),
        qk_rope_head_dim=f.int("qk_rope_head_dim", maximum=MAX_HEAD_DIM),
        v_head_dim=f.int("v_head_dim", maximum=MAX_HEAD_DIM),
        **kw,
    )


@reader(
    "deepseek", "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm_moe_dsa", archs=("DeepseekForCausalLM",)
)
def deepseek(f: Fields) -> dict[str, Any]:
    """DeepSeekMoE (MHA), DeepSeek-V2/V3/V3.2 and Kimi K2 (MLA): first_k_dense_replace dense layers,
    then a MoE layer every moe_layer_freq layers; shared experts of moe_intermediate_size each;
    noaux_tc routing adds an e_score_correction_bias; a DSA indexer on every layer when index_n_heads is
    set (V3.2, GLM-5); MTP in num_nextn_predict_layers."""
    c = common(f)
    hidden, layers = c["hidden_size"], c["num_layers"]
    bias = f.bool("attention_bias", False)
    indexer = None
    if f.has("index_n_heads") or f.family == "deepseek_v32":
        indexer = Indexer(
            n_heads=f.int("index_n_heads"),
            head_dim=f.int("index_head_dim"),
            topk_tokens=f.int("index_topk", default=0, minimum=0),
        )
    if f.has("kv_lora_rank"):
        mixer = _mla(f, indexer=indexer)
    else:
        mixer = GQA(**gqa_geometry(f, hidden), qkv_bias=bias, output_bias=bias, indexer=indexer)
    # GLM-5.2's IndexShare: 'shared' layers reuse the top-k of the last 'full' one (no keys, no indexer weights)
    kinds = _indexer_types(f, layers) if indexer is not None else ["full"] * layers
    shared = mixer.model_copy(update={"indexer": indexer.model_copy(update={"shared": True})}) if indexer else mixer
    n_routed = f.experts("n_routed_experts", default=None, minimum=0) or None
    first_k = dense_prefix(f, layers) if n_routed else f.int("first_k_dense_replace", default=0, minimum=0)
    freq = f.int("moe_layer_freq", default=1)
    if n_routed:
        dense = [i for i in range(layers) if not (i >= first_k and i % freq == 0)]
        expert_ffn = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts", default=0, minimum=0)
        moe = MoESpec(
            n_routed_experts=n_routed,
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=expert_ffn,
            n_shared_experts=n_shared,
            shared_intermediate_size=expert_ffn if n_shared else 0,
            router_bias=f.str("topk_method", "") == "noaux_tc",
            n_groups=f.int("n_group", default=1),
            topk_groups=f.int("topk_group", default=1),
        )
    else:
        dense, moe = list(range(layers)), None
    return dict(
        c,
        mixers=group_layers(layers, lambda i: mixer if kinds[i] == "full" else shared),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=moe,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )


def _indexer_types(f: Fields, layers: int) -> list[str]:
    """``indexer_types``: 'full' or 'shared' per layer (absent: every layer full); a shared layer needs a full one
    before it to reuse."""
    v = f.cfg.get("indexer_types")
    if v is None:
        return ["full"] * layers
    if not isinstance(v, list) or len(v) != layers or any(x not in ("full", "shared") for x in v):
        raise f.error(f"field 'indexer_types' must list 'full' or 'shared' for each of the {layers} layers")
    if v[0] != "full":
        raise f.error("field 'indexer_types': layer 0 must be 'full' (a 'shared' layer reuses an earlier full one)")
    return v


@reader("kimi_k25", archs=("KimiK25ForConditionalGeneration",))
def kimi_k25(f: Fields) -> dict[str, Any]:
    """Kimi-K2.5: text_config is Kimi-K2 (DeepSeek-V3 layout, MLA); a MoonViT vision tower beside it."""
    out = deepseek(f.section("text_config"))
    vc = f.cfg.get("vision_config")
    if isinstance(vc, dict) and vc:
        out["vision_params"] = moonvit_params(vc, out["hidden_size"])
    return out


# DeepSeek-V4 serving-format cache entries (SGLang DeepSeekV4SingleKVPool): 448 B FP8 no-RoPE part + 64 x 2 B
# BF16 RoPE part + 8 B ue8m0 scales = 584 B; FP4 indexer keys 68 B.
DSV4_ENTRY_BYTES = 448 + 64 * 2 + 8
DSV4_INDEX_BYTES = 68


def v4_geometry(f: Fields) -> dict[str, int]:
    """What every DeepSeek-V4-style layer has (:class:`core.model.mixers.compressed.V4Attention`)."""
    return dict(
        num_heads=f.int("num_attention_heads"),
        head_dim=f.int("head_dim"),
        q_lora_rank=f.int("q_lora_rank"),
        o_lora_rank=f.int("o_lora_rank"),
        o_groups=f.int("o_groups"),
        window=f.int("sliding_window"),
    )


@reader("deepseek_v4", archs=("DeepseekV4ForCausalLM",))
def dsv4(f: Fields) -> dict[str, Any]:
    """DeepSeek-V4 (Flash, Pro): compressed attention on every layer by its ``compress_ratios`` entry (0 =
    window only, the smallest ratio = CSA with an indexer, the other = HCA; the entry after the last layer
    is the MTP block's); every layer MoE (the first num_hash_layers routed by token id through a
    vocab x top-k table); hyper-connections (hc_mult copies of the residual) add fp32 mixers per sub-layer
    and a head."""
    c = common(f)
    h, layers = c["hidden_size"], c["num_layers"]
    ratios = f.int_list("compress_ratios")
    if len(ratios) < layers or any(r < 0 for r in ratios):
        raise f.error(f"field 'compress_ratios' needs {layers} non-negative entries")
    csa = min((r for r in ratios[:layers] if r), default=0)
    geometry = dict(
        **v4_geometry(f),
        entry_bytes=DSV4_ENTRY_BYTES,
        index_heads=f.int("index_n_heads"),
        index_head_dim=f.int("index_head_dim"),
        index_key_bytes=DSV4_INDEX_BYTES,
        topk_tokens=f.int("index_topk"),
    )
    kinds = {r: CompressedAttention(**geometry, ratio=r, sparse=bool(r) and r == csa) for r in set(ratios)}
    hc = f.int("hc_mult", default=1)
    top_k = f.int("num_experts_per_tok")
    mi = f.int("moe_intermediate_size")
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    return dict(
        c,
        mixers=group_layers(layers, lambda i: kinds[ratios[i]]),
        mtp_mixer=kinds[ratios[layers]] if len(ratios) > layers else None,
        residual_streams=hc,
        layer_extra_params=2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
        model_extra_params=hc * hc * h + hc + 1,
        inactive_extra_params=f.int("num_hash_layers", default=0, minimum=0) * c["vocab_size"] * top_k,
        dense_layers=(),
        moe=MoESpec(
            n_routed_experts=f.experts("n_routed_experts"),
            top_k=top_k,
            expert_intermediate_size=mi,
            n_shared_experts=n_shared,
            shared_intermediate_size=mi if n_shared else 0,
            router_bias=True,
        ),
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )


@reader("kimi_k3", "kimi_linear", archs=("KimiK3ForConditionalGeneration",))
def kimi_k3(f: Fields) -> dict[str, Any]:
    """Kimi-K3 (kimi_k3 / kimi_linear): KDA linear-attention layers beside gated MLA layers (both listed,
    1-based, in linear_attn_config), a dense first layer, latent MoE on the others (routed experts at
    routed_expert_hidden_size between a down and an up projection; shared experts at full width), AttnRes
    vectors per layer (assumed 4 x hidden), a MoonViT-style vision tower (estimated)."""
    t = f.section("text_config", family="kimi_k3", or_self=True)
    out = deepseek(t)  # MLA geometry, dense first layer, embeddings
    h, layers = out["hidden_size"], out["num_layers"]
    la = t.section("linear_attn_config", family="kimi_k3 linear_attn_config")
    kda = [i - 1 for i in la.int_list("kda_layers")]
    full = [i - 1 for i in la.int_list("full_attn_layers")]
    if sorted(kda + full) != list(range(layers)):
        raise t.error(f"kda_layers and full_attn_layers must cover layers 1-{layers} once")
    linear = KDA(
        num_heads=la.int("num_heads"),
        head_dim=la.int("head_dim"),
        conv_kernel=la.int("short_conv_kernel_size", default=4),
    )
    mla = _mla(t, output_gate=True)
    kda_set = set(kda)
    lat = t.int("routed_expert_hidden_size", default=0, minimum=0)
    n_shared = t.int("num_shared_experts", default=0, minimum=0)
    mi = t.int("moe_intermediate_size")
    first_k = dense_prefix(t, layers)
    out.update(
        mixers=group_layers(layers, lambda i: linear if i in kda_set else mla),
        dense_layers=tuple(range(first_k)),
        dense_intermediate_size=t.int("intermediate_size") if first_k else 0,
        layer_extra_params=4 * h,
        moe=MoESpec(
            n_routed_experts=t.experts("num_experts"),
            top_k=t.int("num_experts_per_token"),
            expert_intermediate_size=mi,
            n_shared_experts=n_shared,
            shared_intermediate_size=mi if n_shared else 0,
            router_bias=t.str("topk_method", "") == "noaux_tc",
            latent_size=lat,
        ),
        num_mtp_layers=t.int("num_nextn_predict_layers", default=0, minimum=0),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, dict) and vc:
        out["vision_params"] = moonvit_params(vc, h)
    return out
