"""MiniMax-M2 (M2.5, M2.7): GQA everywhere; MiniMax-M3: GQA everywhere, MSA block-sparse selection on some
layers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import common, dense_prefix, gqa_geometry, moe_spec
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import MoESpec, group_layers
from core.model.mixers import Indexer
from core.model.mixers.gqa import GQA

__all__ = ["minimax_m2", "minimax_m3"]


@reader("minimax_m3", archs=("MiniMaxM3ForCausalLM",))
def minimax_m3(f: Fields) -> dict[str, Any]:
    """GQA on every layer with per-head q/k norms; MSA block-sparse selection on the layers of
    sparse_attention_config.sparse_attention_freq, each with an index query (heads x dim) and one bf16 index
    key per token; moe_layer_freq marks the MoE layers (the others are dense of dense_intermediate_size);
    routed + shared experts with a biased sigmoid router. The MTP modules are not modelled."""
    c = common(f)
    layers = c["num_layers"]
    freq = f.cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        if len(freq) != layers or any(x not in (0, 1) for x in freq):
            raise f.error(f"field 'moe_layer_freq' must be {layers} zeros and ones")
        dense = [i for i, x in enumerate(freq) if x == 0]
    else:
        dense = list(range(dense_prefix(f, layers)))
    plain = GQA(
        **gqa_geometry(f, c["hidden_size"]),
        qk_norm=f.bool("use_qk_norm", True),
        output_gate=f.bool("attention_output_gate", False),
    )
    sac = f.cfg.get("sparse_attention_config") or {}
    if not isinstance(sac, Mapping):
        raise f.error("field 'sparse_attention_config' must be an object")
    indexed: set[int] = set()
    sparse = plain
    if sac.get("use_sparse_attention"):
        sf = Fields(sac, "minimax_m3 sparse_attention_config")
        marks = sf.int_list("sparse_attention_freq")
        if len(marks) != layers:
            raise f.error(f"sparse_attention_freq must have {layers} entries")
        idim = sf.int("sparse_index_dim")
        blocks = (
            sf.int("sparse_topk_blocks")
            + sf.int("sparse_local_block", default=0, minimum=0)
            + sf.int("sparse_init_block", default=0, minimum=0)
        )
        sparse = plain.model_copy(
            update={
                "indexer": Indexer(
                    n_heads=sf.int("sparse_num_index_heads"),
                    head_dim=idim,
                    key_bytes=2 * idim,
                    weights_proj=False,
                    topk_tokens=blocks * sf.int("sparse_block_size"),
                )
            }
        )
        indexed = {i for i, x in enumerate(marks) if x}
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    return dict(
        c,
        mixers=group_layers(layers, lambda i: sparse if i in indexed else plain),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("dense_intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=f.experts("num_local_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            n_shared_experts=n_shared,
            shared_intermediate_size=f.int("shared_intermediate_size") if n_shared else 0,
            router_bias=f.bool("use_routing_bias", False),
        ),
    )


@reader("minimax_m2", archs=("MiniMaxM2ForCausalLM",))
def minimax_m2(f: Fields) -> dict[str, Any]:
    """MiniMax-M2 / M2.5 / M2.7: full GQA attention on every layer (attn_type_list all 1; a 0, MiniMax-01's
    lightning attention, is refused) with q/k norms (use_qk_norm), every layer MoE: num_local_experts
    experts of intermediate_size, top num_experts_per_tok, a sigmoid router with a routing bias
    (use_routing_bias), a shared expert only when shared_intermediate_size > 0. The MTP modules
    (num_mtp_modules) are not modelled."""
    c = common(f)
    layers = c["num_layers"]
    kinds = f.cfg.get("attn_type_list")
    if kinds is not None and (not isinstance(kinds, list) or len(kinds) != layers or any(k != 1 for k in kinds)):
        raise f.error(
            f"field 'attn_type_list' must be {layers} ones (full attention); 0 (lightning attention) is not supported"
        )
    attention = GQA(**gqa_geometry(f, c["hidden_size"]), qk_norm=f.bool("use_qk_norm", False))
    shared = f.int("shared_intermediate_size", default=0, minimum=0)
    return dict(
        c,
        mixers=group_layers(layers, lambda i: attention),
        dense_layers=(),
        moe=moe_spec(
            f,
            experts="num_local_experts",
            width="intermediate_size",
            shared=1 if shared else 0,
            shared_width=shared,
            router_bias=f.bool("use_routing_bias", False),
        ),
    )
