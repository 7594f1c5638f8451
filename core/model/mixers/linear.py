"""Linear attention and state-space mixers: a fixed recurrent state per sequence instead of a growing
K/V cache, read and written back every decode step. Weights and state split over TP with the heads.

* Gated DeltaNet (Qwen3.5, Qwen3-Next): ``in_proj_qkvz`` h -> 2 nk hk + 2 nv hv, ``in_proj_ba`` h -> 2 nv,
  a depthwise causal conv over the q/k/v channels, ``dt_bias`` and ``A_log``, a gated RMSNorm, ``out_proj``.
  State: an fp32 ``nv x hk x hv`` matrix + a bf16 conv window of ``kernel - 1`` steps.

Every kind's state matrix is fp32 as the checkpoints say (``mamba_ssm_dtype``) and the engines default to; a
deployment may store it in bf16 as serving recipes do (vLLM ``--mamba-ssm-cache-dtype``, SGLang ``--mamba-ssm-dtype``):
``state_dtype``, set through :meth:`Mixer.with_state_dtype` from the deployment's precision.
* KDA, Kimi Delta Attention (Kimi-K3, Kimi Linear, GLM-5.3-Flash): q, k, v projections h -> heads x dim, an
  output gate (Kimi-K3: ``g_proj`` h -> heads x dim; Kimi Linear, GLM-5.3-Flash: low rank, ``g_a`` h -> rank,
  ``g_b`` rank -> heads x dim), short convs on q, k, v, a low-rank forget gate (``f_a`` h -> dim, ``f_b`` dim
  -> heads x dim), ``dt_bias``, ``A_log``, ``b_proj`` h -> heads, an output norm, ``o_proj``. State: fp32
  ``heads x dim x dim`` + three bf16 conv windows.
* Mamba-2 (Nemotron-H / Nemotron-3): ``in_proj`` h -> z, x, B, C, dt; a depthwise conv over x, B, C (with
  bias), ``dt_bias``, ``A_log``, ``D``, a gated RMSNorm, ``out_proj``. State: fp32 ``heads x head_dim x
  d_state`` + a bf16 conv window.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.model.dtypes import LinearStateDtypeName
from core.model.mixers.base import Mixer

__all__ = ["KDA", "GatedDeltaNet", "LinearMixer", "Mamba2"]

_FP32, _BF16 = 4, 2
_Dim = Field(gt=0, le=100_000)
_STATE_BYTES = {"fp32": _FP32, "bf16": _BF16}


class LinearMixer(Mixer):
    """What the linear kinds share: no per-token cache, a fixed state split over TP, no score FLOPs
    (the state update is a few FLOPs per state element, small beside the projections)."""

    conv_kernel: int = Field(4, gt=0, le=1_000)
    state_dtype: LinearStateDtypeName = "fp32"  # the recurrent state matrix's (the conv window stays bf16)

    @property
    def caches_context(self) -> bool:
        return False

    @property
    def _state_elem(self) -> int:
        return _STATE_BYTES[self.state_dtype]

    def with_state_dtype(self, dtype: str) -> LinearMixer:
        return self if dtype == self.state_dtype else self.model_copy(update={"state_dtype": dtype})

    def state_label(self) -> str:
        return "linear-attention state (fixed)"

    def cache_format(self, kv_dtype: str) -> str:
        return f"{self.state_dtype} recurrent state"

    def cache_split_note(self) -> str:
        return "linear-attention states split over TP with their heads"

    def state_bytes_per_rank(self, tp: int) -> float:
        return self.state_bytes() / tp

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        return 0.0


class GatedDeltaNet(LinearMixer):
    kind: Literal["gated_deltanet"] = "gated_deltanet"
    key_heads: int = _Dim
    key_head_dim: int = _Dim
    value_heads: int = _Dim
    value_head_dim: int = _Dim

    def label(self) -> str:
        return "Gated DeltaNet"

    def describe(self) -> str:
        return (
            f"Gated DeltaNet: {self.key_heads} key heads × {self.key_head_dim}, {self.value_heads} value heads "
            f"× {self.value_head_dim}"
        )

    def _conv_channels(self) -> int:
        return 2 * self.key_heads * self.key_head_dim + self.value_heads * self.value_head_dim

    def params(self, hidden: int) -> int:
        h, nk, hk, nv, hv = hidden, self.key_heads, self.key_head_dim, self.value_heads, self.value_head_dim
        return (
            h * (2 * nk * hk + 2 * nv * hv)
            + h * 2 * nv
            + self._conv_channels() * self.conv_kernel
            + 2 * nv
            + hv
            + nv * hv * h
        )

    def output_features(self) -> int:
        return self.value_heads * self.value_head_dim

    def prefill_scan_heads_per_rank(self, tp: int) -> float:
        return self.value_heads / tp

    def state_bytes(self) -> float:
        """Qwen3.5-397B: 64 x 128 x 128 x 4 + 12,288 x 3 x 2 = 4,268,032 B per layer (fp32 state)."""
        return float(
            self.value_heads * self.key_head_dim * self.value_head_dim * self._state_elem
            + self._conv_channels() * (self.conv_kernel - 1) * _BF16
        )


class KDA(LinearMixer):
    kind: Literal["kda"] = "kda"
    num_heads: int = _Dim
    head_dim: int = _Dim
    gate_rank: int = Field(
        0,
        ge=0,
        le=100_000,
        description="low-rank output gate g_a h -> rank, g_b rank -> heads x dim (Kimi Linear, GLM-5.3-Flash); "
        "0: a full-rank g_proj h -> heads x dim (Kimi-K3)",
    )

    def label(self) -> str:
        return "KDA"

    def describe(self) -> str:
        return f"KDA (Kimi Delta Attention): {self.num_heads} heads × {self.head_dim}"

    def replicated_params(self, hidden: int) -> int:
        """``f_a`` (h -> dim), ``b_proj`` (h -> heads), a low-rank gate's ``g_a`` (h -> rank) and the output
        norm stay whole on every rank."""
        return hidden * self.head_dim + hidden * self.num_heads + hidden * self.gate_rank + self.head_dim

    def params(self, hidden: int) -> int:
        h, nh, hd, k = hidden, self.num_heads, self.head_dim, self.conv_kernel
        w = nh * hd
        gate = h * self.gate_rank + self.gate_rank * w if self.gate_rank else h * w
        return 3 * h * w + gate + 3 * w * k + h * hd + hd * w + w + nh + h * nh + hd + w * h

    def output_features(self) -> int:
        return self.num_heads * self.head_dim

    def state_bytes(self) -> float:
        w = self.num_heads * self.head_dim
        return float(
            self.num_heads * self.head_dim * self.head_dim * self._state_elem + 3 * w * (self.conv_kernel - 1) * _BF16
        )


class Mamba2(LinearMixer):
    kind: Literal["mamba2"] = "mamba2"
    num_heads: int = _Dim
    head_dim: int = _Dim
    n_groups: int = _Dim
    state_size: int = _Dim
    conv_bias: bool = True

    def label(self) -> str:
        return "Mamba-2"

    def describe(self) -> str:
        return f"Mamba-2: {self.num_heads} heads × {self.head_dim}, state {self.state_size}"

    def _conv_channels(self) -> int:
        return self.num_heads * self.head_dim + 2 * self.n_groups * self.state_size

    def params(self, hidden: int) -> int:
        h, d_inner, g, n = hidden, self.num_heads * self.head_dim, self.n_groups, self.state_size
        ch = self._conv_channels()
        return (
            h * (2 * d_inner + 2 * g * n + self.num_heads)
            + ch * self.conv_kernel
            + (ch if self.conv_bias else 0)
            + 3 * self.num_heads
            + d_inner
            + d_inner * h
        )

    def output_features(self) -> int:
        return self.num_heads * self.head_dim

    def state_bytes(self) -> float:
        """Nemotron-3-Super: 128 x 64 x 128 x 4 + 10,240 x 3 x 2 = 4,255,744 B per layer (fp32 state)."""
        return float(
            self.num_heads * self.head_dim * self.state_size * self._state_elem
            + self._conv_channels() * (self.conv_kernel - 1) * _BF16
        )
