"""Tencent Hy3 (``hy_v3``): GQA with per-head q/k norms, a dense first layer, then routed + shared experts."""

from __future__ import annotations

from typing import Any

from core.hf._common import common, dense_prefix, gqa_geometry, moe_spec
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import group_layers
from core.model.mixers.gqa import GQA

__all__ = ["hy3"]

_MLP_KINDS = ("dense", "sparse")


def _dense_layers(f: Fields, layers: int) -> list[int]:
    """The dense layers: ``mlp_layer_types`` ("dense" / "sparse" per layer) when the config lists them,
    else the first ``first_k_dense_replace`` layers."""
    kinds = f.cfg.get("mlp_layer_types")
    if kinds is None:
        return list(range(dense_prefix(f, layers)))
    if not isinstance(kinds, list) or len(kinds) != layers or any(k not in _MLP_KINDS for k in kinds):
        raise f.error(f"field 'mlp_layer_types' must list 'dense' or 'sparse' for each of the {layers} layers")
    return [i for i, k in enumerate(kinds) if k == "dense"]


@reader("hy_v3", archs=("HYV3ForCausalLM",))
def hy3(f: Fields) -> dict[str, Any]:
    """Hy3 / Hy3-preview: GQA on every layer with per-head q/k RMSNorms (qk_norm); the first
    first_k_dense_replace layers dense of intermediate_size, the others MoE: num_experts routed experts
    (top num_experts_per_tok) and num_shared_experts shared ones, all of expert_hidden_dim
    (= moe_intermediate_size), a sigmoid router with an expert bias (moe_router_enable_expert_bias); one MoE
    MTP layer (num_nextn_predict_layers)."""
    c = common(f)
    layers = c["num_layers"]
    bias = f.bool("attention_bias", False)
    attention = GQA(
        **gqa_geometry(f, c["hidden_size"]), qkv_bias=bias, output_bias=bias, qk_norm=f.bool("qk_norm", False)
    )
    dense = _dense_layers(f, layers)
    width = f.int("expert_hidden_dim", "moe_intermediate_size")
    n_shared = f.int("num_shared_experts", default=0, minimum=0)
    return dict(
        c,
        mixers=group_layers(layers, lambda i: attention),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=moe_spec(
            f,
            experts="num_experts",
            width=("expert_hidden_dim", "moe_intermediate_size"),
            shared=n_shared,
            shared_width=width,
            router_bias=f.bool("moe_router_enable_expert_bias", False),
        ),
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )
