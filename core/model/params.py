"""Total and active parameter accounting, per component, from the architecture alone: sums over the
model's layer groups (each mixer counts its own weights, :mod:`core.model.mixers`) and its FFN blocks
(:mod:`core.model.ffn`).

Counting conventions (``catalogs/README.md``; checked against the vendors' published counts):

* Total = embeddings + LM head (once if tied) + every layer's mixer (attention of any kind, incl. MLA
  low-rank projections, biases, sinks, q/k norms, sparse indexers, compressors; linear-attention and
  Mamba mixers) + dense FFNs + routed and shared experts + router (+ its bias, + latent projections) + all
  norms + a vision tower when the checkpoint has one. The MTP (next-token) module is counted apart
  (``mtp_params``), as DeepSeek's 671B excludes it.
* Active = everything a text token touches: non-expert weights + ``top_k`` routed experts + shared
  experts + the whole router, then the embedding under one of three conventions:
  ``incl_embedding_and_head`` (input embedding table and LM head both counted; tied counted once),
  ``excl_input_embedding`` (LM head only: DeepSeek-V2/V3 and gpt-oss count this way),
  ``non_embedding`` (neither). A vision tower is never active for text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core._util.checks import whole
from core.model import ffn

if TYPE_CHECKING:
    from core.model.spec import ModelSpec

__all__ = [
    "COMPONENTS",
    "Breakdown",
    "active_breakdown",
    "active_params",
    "attention_params_per_layer",
    "attention_params_per_rank",
    "breakdown",
    "expert_params",
    "flops_per_token",
    "mtp_params",
    "mtp_routed_expert_params",
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

expert_params = ffn.expert_params


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


def attention_params_per_layer(m: ModelSpec) -> int:
    """The mixer weights of the layer an MTP module or an EAGLE head carries (``ModelSpec.head_mixer``:
    the model's first softmax-attention layer unless the config names another)."""
    return m.head_mixer.params(m.hidden_size)


def attention_params_per_rank(m: ModelSpec, tp: int = 1) -> float:
    """What one attention-TP rank holds of that layer's mixer (``tp = 1``: the whole layer)."""
    return m.head_mixer.params_per_rank(m.hidden_size, whole("tp", tp, 1, 100_000))


def mtp_routed_expert_params(m: ModelSpec) -> int:
    """The routed experts inside the MTP module(s) (stored like the main model's routed experts)."""
    if not m.num_mtp_layers or m.moe is None or m.mtp_dense_ffn:
        return 0
    return m.num_mtp_layers * m.moe.n_routed_experts * ffn.expert_params(m)


def breakdown(m: ModelSpec) -> Breakdown:
    """Total parameters per component."""
    h = m.hidden_size
    routed, shared, router, parallel = ffn.moe_layer_parts(m)
    n_moe = m.num_moe_layers
    return Breakdown(
        embedding=m.vocab_size * h,
        lm_head=0 if m.tie_word_embeddings else m.vocab_size * h,
        attention=sum(len(g.layers) * g.mixer.params(h) for g in m.mixers),
        dense_ffn=m.num_dense_layers * ffn.dense_ffn_params(m),
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
    if conv == "incl_embedding_and_head":
        emb, head = b.embedding, b.lm_head  # a tied table is counted once (as the embedding)
    elif conv == "excl_input_embedding":
        emb, head = 0, m.vocab_size * m.hidden_size  # the unembedding, whether or not it is tied
    elif conv == "non_embedding":
        emb, head = 0, 0
    else:
        raise ValueError(
            f"unknown active convention {conv!r}; allowed: incl_embedding_and_head, excl_input_embedding, non_embedding"
        )
    return Breakdown(
        embedding=emb,
        lm_head=head,
        attention=b.attention,
        dense_ffn=b.dense_ffn,
        parallel_mlp=b.parallel_mlp,
        shared_experts=b.shared_experts,
        routed_experts=m.num_moe_layers * top_k * ffn.expert_params(m),
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
    ``2h -> h`` projection, one full decoder layer (the head mixer + a MoE block, or a dense FFN for a dense
    model or where ``mtp_dense_ffn``) and the shared head's norm (h). Embedding and LM head are shared with the main model (the HF checkpoint
    stores copies; not counted)."""
    if not m.num_mtp_layers:
        return 0
    h = m.hidden_size
    routed, shared, router, parallel = ffn.moe_layer_parts(m)
    block = ffn.dense_ffn_params(m) if m.moe is None or m.mtp_dense_ffn else routed + shared + router + parallel
    layer = attention_params_per_layer(m) + block + m.norms_per_layer * h
    return m.num_mtp_layers * (2 * h + 2 * h * h + layer + h)
