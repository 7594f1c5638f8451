"""StepFun Step-3.5 / Step-3.7 Flash (``step3p5``, ``step3p7``): sliding-window and global GQA layers with their
own query-head counts, dense first layers, routed experts beside one shared expert."""

from __future__ import annotations

from typing import Any

from core.hf._common import MAX_HEAD_DIM, MAX_HEADS, dense_prefix, moe_spec, text_common
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import group_layers
from core.model.mixers.gqa import GQA

__all__ = ["step3p7"]

_LAYER_KINDS = ("full_attention", "sliding_attention")


def _heads(f: Fields, heads: int | None = None, kv: int | None = None, d: int | None = None) -> dict[str, int]:
    """num_attention_heads, num_attention_groups (the KV heads; num_key_value_heads in flat copies), head_dim."""
    heads = f.int("num_attention_heads", default=heads or ..., maximum=MAX_HEADS)
    kv = f.int("num_attention_groups", "num_key_value_heads", default=kv or ..., maximum=MAX_HEADS)
    if heads % kv:
        raise f.error(f"num_attention_heads ({heads}) is not a multiple of num_attention_groups ({kv})")
    return dict(num_heads=heads, num_kv_heads=kv, head_dim=f.int("head_dim", default=d or ..., maximum=MAX_HEAD_DIM))


def _moe_layers(t: Fields, layers: int) -> set[int]:
    """moe_layers_enum ("3,4,...,44" or a list of layer indexes), else all but the first_k_dense_replace."""
    v = t.cfg.get("moe_layers_enum")
    if v is None:
        return set(range(dense_prefix(t, layers), layers))
    parts = v.split(",") if isinstance(v, str) else v
    try:
        if not isinstance(parts, list) or any(isinstance(p, bool) or isinstance(p, float) for p in parts):
            raise ValueError
        found = {int(p) for p in parts if not isinstance(p, str) or p.strip()}
    except (TypeError, ValueError):
        raise t.error("field 'moe_layers_enum' must list layer indexes (\"3,4,5\" or [3, 4, 5])") from None
    if not found or any(not 0 <= i < layers for i in found):
        raise t.error(f"field 'moe_layers_enum' must name at least one layer, each in 0..{layers - 1}")
    return found


@reader(
    "step3p7",
    "step3p5",
    archs=(
        "Step3p7ForConditionalGeneration",
        "Step3p5ForCausalLM",
        "Step3p7FlashForCausalLM",
        "Step3p5FlashForCausalLM",
    ),
)
def step3p7(f: Fields) -> dict[str, Any]:
    """The LM is text_config (or the config itself): layer_types marks each layer full_attention or
    sliding_attention (entries past num_hidden_layers belong to the MTP layers); the sliding layers take
    attention_other_setting's head geometry (Step-3.7: 96 query heads against 64) and keep the last
    sliding_window tokens; q/k norms on every layer (use_qk_norm, default on); moe_layers_enum lists the MoE
    layers (the others dense of intermediate_size); moe_num_experts routed experts of moe_intermediate_size,
    top moe_top_k, one shared expert of share_expert_dim, a router bias (use_moe_router_bias). MTP:
    num_nextn_predict_layers layers, each a dense FFN of intermediate_size and the mixer layer_types names past
    the decoder (sliding in Step-3.7). Not modelled: the per-head sigmoid output gate (use_head_wise_attn_gate:
    hidden x heads weights, 16M in Step-3.7) and the vision tower."""
    t, c = text_common(f, f"{f.family} text_config")
    layers = c["num_layers"]
    qk_norm = t.bool("use_qk_norm", True)
    geo = _heads(t)
    full = GQA(**geo, qk_norm=qk_norm)
    kinds = t.cfg.get("layer_types")
    if kinds is None:
        kinds = ["full_attention"] * layers
    if not isinstance(kinds, list) or len(kinds) < layers or any(k not in _LAYER_KINDS for k in kinds[:layers]):
        raise t.error(
            f"field 'layer_types' must give 'full_attention' or 'sliding_attention' for each of the {layers} layers"
        )
    sliding = full
    if "sliding_attention" in kinds[:layers]:
        other = t.cfg.get("attention_other_setting")
        o = t.section("attention_other_setting", family=f"{t.family} attention_other_setting") if other else t
        swa = _heads(o, geo["num_heads"], geo["num_kv_heads"], geo["head_dim"]) if other else geo
        sliding = GQA(**swa, qk_norm=qk_norm, sliding_window=t.int("sliding_window"))
    moe_layers = _moe_layers(t, layers)
    dense = [i for i in range(layers) if i not in moe_layers]
    mtp = t.int("num_nextn_predict_layers", default=0, minimum=0)
    mtp_kind = kinds[layers] if mtp and len(kinds) > layers else "full_attention"
    if mtp_kind not in _LAYER_KINDS:
        raise t.error(
            f"field 'layer_types' entry {layers} (the first MTP layer) must be one of {', '.join(_LAYER_KINDS)}"
        )
    shared = t.int("share_expert_dim", default=0, minimum=0)
    n_shared = t.int("n_shared_experts", default=1 if shared else 0, minimum=0)
    return dict(
        c,
        mixers=group_layers(layers, lambda i: sliding if kinds[i] == "sliding_attention" else full),
        mtp_mixer=sliding if mtp_kind == "sliding_attention" else None,
        num_mtp_layers=mtp,
        mtp_dense_ffn=bool(mtp),
        dense_layers=tuple(dense),
        dense_intermediate_size=t.int("intermediate_size") if dense or mtp else 0,
        moe=moe_spec(
            t,
            experts=("moe_num_experts", "num_experts"),
            top_k=("moe_top_k", "num_experts_per_tok"),
            width="moe_intermediate_size",
            shared=n_shared,
            shared_width=shared or t.int("moe_intermediate_size"),
            router_bias=t.bool("use_moe_router_bias", False),
        ),
    )
