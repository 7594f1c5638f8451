"""The feed-forward half of a layer, in one place: a dense FFN, a MoE block (routed experts, shared
experts, the router, latent-width experts between a down and an up projection), a dense MLP beside the MoE
(Snowflake Arctic, Gemma 4). Parameter counts of ONE layer; ``ffn_matrices`` is 3 for SwiGLU / GeGLU,
2 for plain (relu2) MLPs. The sums over layers are in :mod:`core.model.params`, the per-GPU split in
:mod:`core.memory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core._util.checks import whole

if TYPE_CHECKING:
    from core.model.spec import ModelSpec

__all__ = [
    "dense_ffn_params",
    "expert_gemm_shapes",
    "expert_params",
    "ffn_gemm_shapes",
    "moe_layer_parts",
    "parallel_mlp_params",
    "router_params",
    "shared_experts_params",
]


def ffn_gemm_shapes(width_in: int, intermediate: int, ffn_matrices: int) -> tuple[tuple[int, int], ...]:
    """The (k, n) of each weight GEMM a token passes through in one FFN: the fused gate/up projection
    ``[width_in, (ffn_matrices - 1) x intermediate]`` and the down projection ``[intermediate, width_in]``.
    FLOPs per token are ``2 x sum(k x n)`` = 2 x the FFN's weight count (biases aside)."""
    width_in = whole("width_in", width_in, 1, 10_000_000)
    intermediate = whole("intermediate", intermediate, 1, 10_000_000)
    ffn_matrices = whole("ffn_matrices", ffn_matrices, 2, 3)
    return ((width_in, (ffn_matrices - 1) * intermediate), (intermediate, width_in))


def expert_gemm_shapes(m: ModelSpec) -> tuple[tuple[int, int], ...]:
    """One routed expert's GEMMs (:func:`ffn_gemm_shapes`) at the width the expert sees: the latent width
    for a latent MoE (Nemotron-3, Kimi-K3: the tokens are projected down before the experts), the hidden
    size otherwise. The one owner of the expert GEMM shapes: Intensity and the step model read it here."""
    if m.moe is None:
        raise ValueError(f"{m.name} is dense: it has no experts")
    return ffn_gemm_shapes(m.moe.latent_size or m.hidden_size, m.moe.expert_intermediate_size, m.ffn_matrices)


def expert_params(m: ModelSpec) -> int:
    """One routed expert: ``ffn_matrices x w x f`` with w the hidden size or the latent width
    (+ gate_up and down biases for gpt-oss)."""
    if m.moe is None:
        return 0
    w, f = (m.moe.latent_size or m.hidden_size), m.moe.expert_intermediate_size
    p = m.ffn_matrices * w * f
    if m.moe.expert_bias:
        p += (m.ffn_matrices - 1) * f + w
    return p


def shared_experts_params(m: ModelSpec) -> int:
    """Every shared expert of one MoE layer (full width), + Qwen2-MoE's sigmoid gate (hidden x 1)."""
    if m.moe is None:
        return 0
    e = m.moe
    return e.n_shared_experts * m.ffn_matrices * m.hidden_size * e.shared_intermediate_size + (
        m.hidden_size if e.shared_expert_gate else 0
    )


def router_params(m: ModelSpec) -> int:
    """The router of one MoE layer (hidden -> experts, + a bias / score-correction vector), and for a latent
    MoE the down (hidden -> latent) and up (latent -> hidden) projections and the latent norm, which every
    token passes through like the router."""
    if m.moe is None:
        return 0
    e, h = m.moe, m.hidden_size
    p = e.n_routed_experts * h + (e.n_routed_experts if e.router_bias else 0)
    if e.latent_size:
        p += 2 * h * e.latent_size + e.latent_size
    return p


def parallel_mlp_params(m: ModelSpec) -> int:
    """The dense residual MLP beside the MoE on a MoE layer (0 when there is none)."""
    return m.ffn_matrices * m.hidden_size * m.parallel_dense_intermediate_size if m.moe is not None else 0


def dense_ffn_params(m: ModelSpec) -> int:
    """One dense layer's FFN."""
    return m.ffn_matrices * m.hidden_size * m.dense_intermediate_size


def moe_layer_parts(m: ModelSpec) -> tuple[int, int, int, int]:
    """(all routed experts, shared experts, router, parallel MLP) of one MoE layer."""
    if m.moe is None:
        return 0, 0, 0, 0
    return (
        m.moe.n_routed_experts * expert_params(m),
        shared_experts_params(m),
        router_params(m),
        parallel_mlp_params(m),
    )
