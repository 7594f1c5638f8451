"""GLM-5.3-Flash (``glm5_next``, ``Glm5NextForConditionalGeneration``, "GLM-5-Next"): a hybrid of Kimi Delta
Attention and DeepSeek-style sparse MLA under a DeepSeek-V3 MoE, with V4's hyper-connections.

Read from ``text_config`` (transformers ``Glm5NextTextConfig``): ``layer_types`` marks each layer
``linear_attention`` (KDA, :class:`core.model.mixers.linear.KDA`: q/k/v h -> heads x dim, one short conv over
them, a low-rank forget gate f_a/f_b and a low-rank output gate g_a/g_b of rank ``head_dim``, b_proj, A_log,
dt_bias, a gated norm, o_proj) or ``deepseek_sparse_attention`` (MLA without RoPE, ``qk_rope_head_dim`` 0,
with DSA's lightning indexer); ``linear_attn_config`` lists the same split 0-based and must agree.
``mlp_layer_types`` marks each layer dense (``intermediate_size``) or sparse (``n_routed_experts`` of
``moe_intermediate_size`` top-``num_experts_per_tok``, ``n_shared_experts`` fused into one shared MLP, a
sigmoid router with ``noaux_tc`` bias). Every layer has two RMSNorms and two hyper-connections of ``hc_mult``
streams (DeepSeek-V4's: fn (2 + hc) hc x hc h, base, scale); the final collapse is an unweighted mean (no
weights). One MTP layer (a DSA layer + MoE). A GLM-4V-style vision tower (estimated, see
:func:`glm5_next_vision_params`).

The indexer keys are pooled: every ``index_kpool`` tokens share one cached FP8 key + fp32 scale (vLLM
``glm5next``: 132 B per pool, a bf16 tail buffer for the unfinished pool), so a token caches
``(index_head_dim + 4) / index_kpool`` bytes of index key (33 B for GLM-5.3-Flash). Not counted: the pool's
compress gate (``index_kpool_compress_gate`` dim x h) and position bias (kpool x dim), 0.5M per DSA layer;
the per-sequence tail buffers (2 x kpool x dim x 2 B per DSA layer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.hf._common import MAX_HEAD_DIM, MAX_HEADS, moe_spec, text_common
from core.hf.fields import Fields
from core.hf.registry import reader
from core.hf.vision import VisionFields
from core.model import group_layers
from core.model.mixers import Indexer
from core.model.mixers.linear import KDA
from core.model.mixers.mla import MLA

__all__ = ["glm5_next", "glm5_next_vision_params"]

_KDA = "linear_attention"
_DSA = ("deepseek_sparse_attention", "full_attention")
_INDEX_SCALE_BYTES = 4  # one fp32 scale per cached FP8 index key


def _linear_layers(t: Fields, layers: int) -> set[int]:
    """The KDA layers, from ``layer_types`` (else every layer but each fourth, transformers' default),
    checked against ``linear_attn_config.kda_layers`` / ``full_attn_layers`` (0-based) when present."""
    types = t.cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers or any(x != _KDA and x not in _DSA for x in types):
            raise t.error(f"field 'layer_types' must list '{_KDA}' or '{_DSA[0]}' for each of the {layers} layers")
        kda = {i for i, x in enumerate(types) if x == _KDA}
    else:
        kda = {i for i in range(layers) if i % 4 != 3}
    la = t.cfg.get("linear_attn_config")
    if isinstance(la, Mapping):
        lf = Fields(la, "glm5_next linear_attn_config")
        listed, full = lf.int_list("kda_layers"), lf.int_list("full_attn_layers")
        if (listed or full) and (set(listed) != kda or set(full) != set(range(layers)) - kda):
            raise t.error("linear_attn_config kda_layers / full_attn_layers (0-based) disagree with layer_types")
    return kda


def _kda(t: Fields) -> KDA:
    la = t.cfg.get("linear_attn_config")
    if isinstance(la, Mapping):
        lf = Fields(la, "glm5_next linear_attn_config")
        heads, dim = lf.int("num_heads", maximum=MAX_HEADS), lf.int("head_dim", maximum=MAX_HEAD_DIM)
        kernel = lf.int("short_conv_kernel_size", default=4)
    else:
        heads, dim = t.int("linear_num_heads", maximum=MAX_HEADS), t.int("linear_head_dim", maximum=MAX_HEAD_DIM)
        kernel = t.int("linear_conv_kernel_dim", default=4)
    return KDA(num_heads=heads, head_dim=dim, conv_kernel=kernel, gate_rank=dim)


def _dsa(t: Fields) -> MLA:
    indexer = None
    if t.has("index_n_heads"):
        dim = t.int("index_head_dim", maximum=MAX_HEAD_DIM)
        pool = t.int("index_kpool", default=1)
        indexer = Indexer(
            n_heads=t.int("index_n_heads", maximum=MAX_HEADS),
            head_dim=dim,
            key_bytes=math.ceil((dim + _INDEX_SCALE_BYTES) / pool),
            topk_tokens=t.int("index_topk", default=0, minimum=0),
        )
    return MLA(
        num_heads=t.int("num_attention_heads", maximum=MAX_HEADS),
        q_lora_rank=t.int("q_lora_rank", default=None, minimum=0) or None,
        kv_lora_rank=t.int("kv_lora_rank"),
        qk_nope_head_dim=t.int("qk_nope_head_dim", maximum=MAX_HEAD_DIM),
        qk_rope_head_dim=t.int("qk_rope_head_dim", default=0, minimum=0, maximum=MAX_HEAD_DIM),
        v_head_dim=t.int("v_head_dim", maximum=MAX_HEAD_DIM),
        indexer=indexer,
    )


def _dense_layers(t: Fields, layers: int) -> list[int]:
    """``mlp_layer_types`` ("dense" / "sparse" per layer), else the first ``first_k_dense_replace`` (default
    3, transformers') layers; at least one layer must be sparse."""
    kinds = t.cfg.get("mlp_layer_types")
    if isinstance(kinds, list) and kinds:
        if len(kinds) != layers or any(k not in ("dense", "sparse") for k in kinds):
            raise t.error(f"field 'mlp_layer_types' must list 'dense' or 'sparse' for each of the {layers} layers")
        return [i for i, k in enumerate(kinds) if k == "dense"]
    why = f"at least one of the {layers:,} layers (num_hidden_layers) must have the MoE block"
    return list(
        range(t.int("first_k_dense_replace", default=min(3, layers - 1), minimum=0, maximum=layers - 1, why=why))
    )


def glm5_next_vision_params(vc: Mapping[str, Any], text_hidden: int) -> int:
    """Estimated GLM-5.3-Flash vision tower (GLM-4V layout assumed; its modelling code was not read): ``depth``
    blocks of attention (qkv with bias 3d^2 + 3d, proj d^2 + d), a SwiGLU MLP ``3 d f`` and two RMSNorms;
    a Conv3d patch embedding ``channels x temporal x p^2 x d + d``; learned positions ``(image / p)^2 x d``;
    two norms; a ``merge x merge`` Conv2d down to ``out_hidden_size`` (+ bias); a merger (proj out^2, a
    LayerNorm, SwiGLU out -> ``projection_intermediate_size`` -> out). GLM-5.3-Flash: 0.564B, which with the
    MTP layer reproduces the 321.3B its checkpoint stores."""
    f = VisionFields(vc, "glm5_next vision_config")
    d, inter, depth = f.int("hidden_size"), f.int("intermediate_size"), f.int("depth")
    p, tp, ch = f.int("patch_size"), f.int("temporal_patch_size", default=1), f.int("in_channels", default=3)
    out = f.int("out_hidden_size", default=text_hidden)
    merge = f.int("spatial_merge_size", default=2)
    proj = f.int("projection_intermediate_size", default=inter)
    positions = (f.int("image_size") // p) ** 2
    block = 4 * d * d + 4 * d + 3 * d * inter + 2 * d
    embed = ch * tp * p * p * d + d + positions * d + 2 * d
    head = d * merge * merge * out + out + out * out + 2 * out + 3 * out * proj
    return depth * block + embed + head


@reader("glm5_next", "glm5_next_text", archs=("Glm5NextForConditionalGeneration", "Glm5NextForCausalLM"))
def glm5_next(f: Fields) -> dict[str, Any]:
    t, c = text_common(f, "glm5_next")
    h, layers = c["hidden_size"], c["num_layers"]
    linear = _linear_layers(t, layers)
    if len(linear) == layers:
        raise t.error("no sparse-attention layer: every layer is KDA (at least one must cache K/V)")
    kda, dsa = _kda(t), _dsa(t)
    dense = _dense_layers(t, layers)
    if len(dense) == layers:
        raise t.error(f"field 'mlp_layer_types' makes all {layers} layers dense; at least one must be sparse")
    mi = t.int("moe_intermediate_size")
    n_shared = t.int("n_shared_experts", default=0, minimum=0)
    hc = t.int("hc_mult", default=1, maximum=64, why="at most 64 residual streams") if t.bool("mhc", True) else 1
    c.update(
        mixers=group_layers(layers, lambda i: kda if i in linear else dsa),
        dense_layers=tuple(dense),
        dense_intermediate_size=t.int("intermediate_size") if dense else 0,
        moe=moe_spec(
            t,
            experts="n_routed_experts",
            width="moe_intermediate_size",
            shared=1 if n_shared else 0,
            shared_width=mi * n_shared,
            router_bias=t.str("topk_method", "noaux_tc") == "noaux_tc",
            n_groups=t.int("n_group", default=1),
            topk_groups=t.int("topk_group", default=1),
        ),
        residual_streams=hc,
        # DeepSeek-V4's hyper-connection before each mixer and each FFN: fn (2 + hc) hc x hc h, base, 3 scales
        layer_extra_params=2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3) if hc > 1 else 0,
        num_mtp_layers=t.int("num_nextn_predict_layers", default=0, minimum=0),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        c["vision_params"] = glm5_next_vision_params(vc, h)
    return c
