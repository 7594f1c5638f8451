"""Nemotron-H / Nemotron-3: Mamba-2 and attention blocks with (latent) MoE or MLP blocks between them."""

from __future__ import annotations

from typing import Any

from core.hf._common import common, gqa_geometry
from core.hf.fields import LAYERS_WHY, MAX_LAYERS, Fields
from core.hf.registry import reader
from core.model import MoESpec, group_layers
from core.model.mixers.gqa import GQA
from core.model.mixers.linear import Mamba2

__all__ = ["nemotron_h"]


_BLOCK_CHARS = {"mamba": "M", "attention": "*", "moe": "E", "mlp": "-"}


def _block_pattern(f: Fields) -> str:
    """hybrid_override_pattern, or the same string spelled from a layers_block_type list."""
    blocks = f.cfg.get("layers_block_type")
    if blocks is None:
        return f.str("hybrid_override_pattern", "")
    if not isinstance(blocks, list) or any(not isinstance(b, str) or b not in _BLOCK_CHARS for b in blocks):
        raise f.error("field 'layers_block_type' must list blocks named mamba, attention, moe or mlp")
    return "".join(_BLOCK_CHARS[b] for b in blocks)


@reader("nemotron_h", archs=("NemotronHForCausalLM",))
def nemotron_h(f: Fields) -> dict[str, Any]:
    """hybrid_override_pattern lists blocks, each a norm and ONE mixer: M = Mamba-2, * = GQA attention,
    E = (latent) MoE, - = dense MLP. Here a layer is a mixer (M or *) with the E / - block that follows it,
    if any (layers without one are FFN-free). Experts and MLPs are 2-matrix relu2; a latent MoE routes at
    moe_latent_size between down and up projections and keeps its shared expert at full width. Newer
    configs (Nemotron-3-Ultra) name the blocks in a layers_block_type list instead (mamba, attention, moe,
    mlp) and leave num_hidden_layers out."""
    pattern = _block_pattern(f)
    if not pattern or any(ch not in "M*E-" for ch in pattern):
        raise f.error("field 'hybrid_override_pattern' must be a string of M, *, E and -")
    if pattern[0] not in "M*":
        raise f.error("the pattern must start with a mixer block (M or *)")
    kinds: list[tuple[str, str]] = []  # (mixer, ffn) per layer
    for ch in pattern:
        if ch in "M*":
            kinds.append((ch, ""))
            if len(kinds) > MAX_LAYERS:
                raise f.error(
                    f"field 'hybrid_override_pattern' has more than {MAX_LAYERS:,} mixer blocks ({LAYERS_WHY})"
                )
        elif kinds[-1][1]:
            raise f.error("two FFN blocks in a row are not modelled")
        else:
            kinds[-1] = (kinds[-1][0], ch)
    if not f.has("num_hidden_layers"):  # a layers_block_type config: one layer per mixer block
        f = Fields({**f.cfg, "num_hidden_layers": len(kinds)}, f.family)
    c = common(f)
    mamba = Mamba2(
        num_heads=f.int("mamba_num_heads"),
        head_dim=f.int("mamba_head_dim"),
        n_groups=f.int("n_groups"),
        state_size=f.int("ssm_state_size"),
        conv_kernel=f.int("conv_kernel", default=4),
        conv_bias=f.bool("use_conv_bias", True),
    )
    attention = GQA(**gqa_geometry(f, c["hidden_size"]))
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    dense = [i for i, (_, ffn) in enumerate(kinds) if ffn == "-"]
    return dict(
        c,
        num_layers=len(kinds),
        mixers=group_layers(len(kinds), lambda i: mamba if kinds[i][0] == "M" else attention),
        ffn_matrices=2,
        norms_per_layer=2,
        ffn_free_layers=tuple(i for i, (_, ffn) in enumerate(kinds) if not ffn),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=f.experts("n_routed_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            n_shared_experts=n_shared,
            shared_intermediate_size=f.int("moe_shared_expert_intermediate_size") if n_shared else 0,
            router_bias=True,
            latent_size=f.int("moe_latent_size", default=0, minimum=0),
        )
        if "E" in pattern
        else None,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )
