"""A causal encoder-decoder (DeepSeek-V4.1, tech report 2.2, 3.2.2): every prompt token runs the encoder's layers
(the first ``encoder_layers``), only each prompt's last ``replay_tokens`` run the decoder's (their global KV is
projected from the encoder's output; that projection, ~5M parameters per token, is not priced, and the replayed
queries are priced at the prompt's mean causal context rather than its end). Decode runs every layer. It stores
nothing: what it changes is the tokens the decoder's layers see in a prefill step."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from core.model.extras.base import ModelExtra, Phase

__all__ = ["CausalEncoder"]


class CausalEncoder(ModelExtra):
    """The first ``encoder_layers`` layers run every prompt token; the rest replay each prompt's last
    ``replay_tokens`` (the decoder's sliding window)."""

    kind: Literal["causal_encoder"] = "causal_encoder"
    encoder_layers: Annotated[int, Field(gt=0, le=10_000)] = Field(description="layers every prompt token runs")
    replay_tokens: Annotated[int, Field(gt=0, le=100_000_000)] = Field(
        description="prompt tokens per sequence replayed through the decoder layers (the decoder's window)"
    )

    def label(self) -> str:
        return f"causal encoder ({self.encoder_layers} layers, {self.replay_tokens:,} tokens replayed)"

    @property
    def split_layer(self) -> int:
        return self.encoder_layers

    def token_share(self, phase: Phase, computed_len: int) -> float:
        """128 replayed tokens of an 8,192-token prompt: 1.56%; a prompt shorter than the window: all of it;
        decode: every token."""
        if phase != "prefill":
            return 1.0
        return min(1.0, self.replay_tokens / computed_len)

    def problems(self, num_layers: int) -> list[str]:
        if not 0 < self.encoder_layers < num_layers:
            return [
                f"prefill_encoder_layers {self.encoder_layers} needs 1..{num_layers - 1} encoder layers and "
                "prefill_replay_tokens > 0"
            ]
        return []
