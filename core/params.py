"""Total and active parameter accounting, per component, from the architecture alone.

Counting conventions (``catalogs/README.md``; checked against the vendors' published counts):

* Total = embeddings + LM head (once if tied) + attention (incl. MLA low-rank projections and their
  norms, biases, sinks, q/k norms, a DSA indexer) + dense FFNs + routed and shared experts + router
  (+ its bias) + all RMSNorms + a vision tower when the checkpoint has one. SwiGLU / GeGLU = 3
  matrices (``3 * h * f``). The MTP (next-token) module is counted apart (``mtp_params``), as
  DeepSeek's 671B excludes it.
* Active = everything a text token touches: non-expert weights + ``top_k`` routed experts + shared
  experts + the whole router, then the embedding under one of three conventions:
  ``incl_embedding_and_head`` (input embedding table and LM head both counted; tied counted once),
  ``excl_input_embedding`` (LM head only: DeepSeek-V2/V3 and gpt-oss count this way),
  ``non_embedding`` (neither). A vision tower is never active for text.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from core.specs import AttentionKind, ModelSpec

__all__ = [
    "COMPONENTS",
    "Breakdown",
    "active_params",
    "attention_params_per_layer",
    "attention_params_per_rank",
    "indexer_params",
    "mtp_routed_expert_params",
    "active_breakdown",
    "breakdown",
    "expert_params",
    "flops_per_token",
    "mtp_params",
    "total_params",
]

COMPONENTS = (
    "embedding",
    "lm_head",
    "attention",
    "dense_ffn",
    "parallel_mlp",
    "shared_experts",
    "routed_experts",
    "router",
    "norms",
    "vision",
)


@dataclass(frozen=True)
class Breakdown:
    """Parameters per component. ``total`` sums every component (MTP is apart)."""

    embedding: int
    lm_head: int
    attention: int
    dense_ffn: int
    parallel_mlp: int
    shared_experts: int
    routed_experts: int
    router: int
    norms: int
    vision: int
    mtp: int

    @property
    def total(self) -> int:
        return sum(getattr(self, c) for c in COMPONENTS)

    def as_dict(self) -> dict[str, int]:
        return {c: getattr(self, c) for c in (*COMPONENTS, "mtp")}


def attention_params_per_layer(m: ModelSpec, *, stores_kv: bool = True, global_layer: bool = False) -> int:
    """Attention weights of one layer.

    MHA/GQA: q ``h*nq*d``, k and v ``h*nkv*d`` each (absent on layers that borrow K/V under
    cross-layer attention), o ``nq*d_v*h``; optional q/k/v and o biases, q/k RMSNorms (``2*d``),
    one learned sink per head.
    MLA (DeepSeek-V2): q through a low-rank ``h*q_lora + q_lora + q_lora*nq*(nope+rope)`` (or a plain
    ``h*nq*(nope+rope)`` without q_lora), ``h*(kv_lora+rope)`` down-projection + ``kv_lora`` norm,
    ``kv_lora*nq*(nope+v)`` up-projection, o ``nq*v*h``.
    A DSA indexer (DeepSeek-V3.2) adds ``q_lora*ih*id + h*id + 2*id + h*ih``.
    """
    h, nq = m.hidden_size, m.num_attention_heads
    if m.attention_params_by_layer:  # explicit blocks: the plainest layer (what an MTP block carries)
        return min(m.attention_params_by_layer)
    if m.attention is AttentionKind.MLA:
        nope, rope, v, kvl = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank
        qk = nope + rope
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nq * qk
        else:
            q = h * nq * qk
        kv = h * (kvl + rope) + kvl + kvl * nq * (nope + v)
        o = nq * v * h
        total = q + kv + o
    else:
        d, dv, nkv = _gqa_geometry(m, global_layer)
        q = h * nq * d * (2 if m.attn_output_gate else 1)
        kv = (h * nkv * d + (0 if global_layer and m.global_k_eq_v else h * nkv * dv)) if stores_kv else 0
        o = nq * dv * h
        total = q + kv + o
        if m.attention_bias:
            total += nq * d + ((nkv * d + nkv * dv) if stores_kv else 0)
        if m.attention_output_bias:
            total += h
        if m.qk_norm:
            total += 2 * d
        if m.attention_sinks:
            total += nq
    return total + indexer_params(m)


def indexer_params(m: ModelSpec) -> int:
    """One layer's sparse-attention indexer: query projection (from q_lora, or h) to heads x dim, key
    projection h -> dim, a norm (2 dim), head weights h -> heads (DeepSeek-V3.2 layout)."""
    if not m.index_n_heads:
        return 0
    ih, idim = m.index_n_heads, m.index_head_dim
    weights = m.hidden_size * ih if m.index_weights_proj else 0
    return (m.q_lora_rank or m.hidden_size) * ih * idim + m.hidden_size * idim + 2 * idim + weights


def _gqa_geometry(m: ModelSpec, global_layer: bool) -> tuple[int, int, int]:
    """(head size, V head size, KV heads) of a sliding / ordinary layer or of a global layer."""
    if global_layer:
        if not m.global_layers:
            raise ValueError(f"{m.name} has no global attention layers (global_layers is empty)")
        return m.global_head_dim, m.global_head_dim, m.global_num_kv_heads
    return m.head_dim, (m.v_head_dim or m.head_dim), m.num_kv_heads


def attention_params_per_rank(m: ModelSpec, tp: int = 1, *, stores_kv: bool = True, global_layer: bool = False) -> float:
    """Attention weights one tensor-parallel rank holds for one layer (``tp = 1``: the whole layer).

    Sharded over ``tp`` (column/row parallel, as vLLM and SGLang do): the query and output
    projections, MLA's up-projections (``q_b``, ``kv_b``), q/k/v biases and sinks. K/V heads split over
    ``tp`` while ``tp <= num_kv_heads`` and are replicated beyond (each rank keeps one head).
    Replicated on every rank: MLA's down-projections and their norms (``q_a``, ``kv_a``), q/k norms,
    the output bias and a DSA indexer.
    """
    if isinstance(tp, bool) or not isinstance(tp, numbers.Integral) or not 1 <= tp <= 100_000:
        raise ValueError(f"tp must be a whole number in 1..100,000, got {tp!r}")
    if m.attention_params_by_layer:  # explicit blocks: the per-layer average
        n = len(m.attention_params_by_layer)
        rep = sum(m.attention_replicated_by_layer or [0] * n) / n
        return rep + (sum(m.attention_params_by_layer) / n - rep) / tp
    full = attention_params_per_layer(m, stores_kv=stores_kv, global_layer=global_layer)
    h, nq = m.hidden_size, m.num_attention_heads
    indexer = indexer_params(m)
    if m.attention is AttentionKind.MLA:
        kvl, rope = m.kv_lora_rank, m.qk_rope_head_dim
        replicated = h * (kvl + rope) + kvl + indexer
        if m.q_lora_rank:
            replicated += h * m.q_lora_rank + m.q_lora_rank
        return replicated + (full - replicated) / tp
    d, dv, nkv = _gqa_geometry(m, global_layer)
    if global_layer and m.global_k_eq_v:
        dv = 0
    kv = (h * nkv * (d + dv) + (nkv * (d + dv) if m.attention_bias else 0)) if stores_kv else 0
    replicated = (h if m.attention_output_bias else 0) + (2 * d if m.qk_norm else 0) + indexer
    sharded = full - kv - replicated
    kv_per_rank = kv / min(tp, nkv)
    return replicated + sharded / tp + kv_per_rank


def mtp_routed_expert_params(m: ModelSpec) -> int:
    """The routed experts inside the MTP module(s) (stored like the main model's routed experts)."""
    if not m.num_mtp_layers or m.moe is None:
        return 0
    return m.num_mtp_layers * m.moe.n_routed_experts * expert_params(m)


def _attention_total(m: ModelSpec) -> int:
    if m.attention_params_by_layer:
        return sum(m.attention_params_by_layer)
    kv_layers = m.kv_layers
    linear = len(m.linear_attention_layers)
    n_global = len(m.global_layers)
    no_indexer = (m.num_layers - m.num_index_layers) * indexer_params(m) if m.index_n_heads else 0
    return -no_indexer + ((kv_layers - n_global) * attention_params_per_layer(m)
            + (n_global * attention_params_per_layer(m, global_layer=True) if n_global else 0)
            + (m.num_layers - linear - kv_layers) * attention_params_per_layer(m, stores_kv=False)
            + linear * m.linear_attention_params)


def expert_params(m: ModelSpec) -> int:
    """One routed expert: ``ffn_matrices * h * f`` (+ gate_up and down biases for gpt-oss)."""
    if m.moe is None:
        return 0
    h, f = (m.moe.latent_size or m.hidden_size), m.moe.expert_intermediate_size
    p = m.ffn_matrices * h * f
    if m.moe.expert_bias:
        p += (m.ffn_matrices - 1) * f + h
    return p


def _moe_layer_parts(m: ModelSpec) -> tuple[int, int, int, int]:
    """(all routed experts, shared experts, router, parallel MLP) of one MoE layer."""
    if m.moe is None:
        return 0, 0, 0, 0
    h, e = m.hidden_size, m.moe
    routed = e.n_routed_experts * expert_params(m)
    shared = e.n_shared_experts * m.ffn_matrices * h * e.shared_intermediate_size
    if e.shared_expert_gate:
        shared += h
    router = e.n_routed_experts * h + (e.n_routed_experts if e.router_bias else 0)
    if e.latent_size:  # the latent down (h -> latent) and up (latent -> h) projections and the latent norm
        router += 2 * h * e.latent_size + e.latent_size
    parallel = m.ffn_matrices * h * m.parallel_dense_intermediate_size
    return routed, shared, router, parallel


def breakdown(m: ModelSpec) -> Breakdown:
    """Total parameters per component."""
    h = m.hidden_size
    routed, shared, router, parallel = _moe_layer_parts(m)
    n_moe = m.num_moe_layers
    embedding = m.vocab_size * h
    return Breakdown(
        embedding=embedding,
        lm_head=0 if m.tie_word_embeddings else m.vocab_size * h,
        attention=_attention_total(m),
        dense_ffn=m.num_dense_layers * m.ffn_matrices * h * m.dense_intermediate_size,
        parallel_mlp=n_moe * parallel,
        shared_experts=n_moe * shared,
        routed_experts=n_moe * routed,
        router=n_moe * router + m.inactive_extra_params,
        norms=m.num_layers * (m.norms_per_layer * h + m.layer_extra_params) + h + m.model_extra_params,
        vision=m.vision_params,
        mtp=mtp_params(m),
    )


def active_breakdown(m: ModelSpec, convention: str | None = None) -> Breakdown:
    """Parameters one text token activates, per component (vision 0, MTP 0)."""
    conv = convention or m.published.active_convention
    b = breakdown(m)
    top_k = m.moe.top_k if m.moe else 0
    h = m.hidden_size
    if conv == "incl_embedding_and_head":
        emb, head = b.embedding, b.lm_head  # a tied table is counted once (as the embedding)
    elif conv == "excl_input_embedding":
        emb, head = 0, m.vocab_size * h  # the unembedding, whether or not it is tied
    elif conv == "non_embedding":
        emb, head = 0, 0
    else:
        raise ValueError(
            f"unknown active convention {conv!r}; allowed: incl_embedding_and_head, "
            "excl_input_embedding, non_embedding"
        )
    return Breakdown(
        embedding=emb,
        lm_head=head,
        attention=b.attention,
        dense_ffn=b.dense_ffn,
        parallel_mlp=b.parallel_mlp,
        shared_experts=b.shared_experts,
        routed_experts=m.num_moe_layers * top_k * expert_params(m),
        router=b.router - m.inactive_extra_params,
        norms=b.norms,
        vision=0,
        mtp=0,
    )


def total_params(m: ModelSpec, *, include_mtp: bool = False, include_vision: bool = True) -> int:
    """All weights of the main model; optionally with the MTP module, optionally without vision."""
    b = breakdown(m)
    return b.total + (b.mtp if include_mtp else 0) - (0 if include_vision else b.vision)


def active_params(m: ModelSpec, convention: str | None = None) -> int:
    """Active parameters per token under ``convention`` (default: the model's published one)."""
    return active_breakdown(m, convention).total


def flops_per_token(m: ModelSpec) -> float:
    """Forward FLOPs per token from the weights: 2 x active matmul parameters (the input embedding
    is a table lookup and costs no FLOPs, so it is left out). Attention's context-dependent
    score/value FLOPs are not included here; the step-time model adds them."""
    return 2.0 * active_params(m, "excl_input_embedding")


def mtp_params(m: ModelSpec) -> int:
    """DeepSeek-V3's multi-token-prediction module, per module: two RMSNorms on the inputs (2h), the
    ``2h -> h`` projection, one full MoE decoder layer and the shared head's norm (h). Embedding and
    LM head are shared with the main model (the HF checkpoint stores copies; not counted)."""
    if not m.num_mtp_layers:
        return 0
    h = m.hidden_size
    routed, shared, router, parallel = _moe_layer_parts(m)
    if m.moe is None:
        ffn = m.ffn_matrices * h * m.dense_intermediate_size
    else:
        ffn = routed + shared + router + parallel
    layer = attention_params_per_layer(m) + ffn + m.norms_per_layer * h
    return m.num_mtp_layers * (2 * h + 2 * h * h + layer + h)
