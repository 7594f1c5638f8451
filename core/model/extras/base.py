"""The interface every model-level extra implements (one file per kind in this folder).

An *extra* is a part of a model that is neither a layer's mixer nor its FFN and that the sums over a model
(parameters, memory, a step's works) must see: DeepSeek-V4.1's Engram and Qwen3.8-Flash-Next's n-gram lookup
tables (stored beside the weights, read a few rows per token, meant to live off the GPU), DeepSeek-V4.1's causal
encoder (a prefill runs only a share of its tokens through the layers after it). What an extra contributes:

- ``params`` / ``stored_bytes``: what it stores beside the backbone (not in the backbone's counts), and
  ``hbm_bytes_per_rank(tier, tp)``: what of it a GPU holds in a tier (:data:`TIERS`: ``gpu`` shards it over
  attention TP; ``host`` and ``disk`` keep it off the GPU);
- ``lookups()``: the rows a token reads from what it stores, and the layer that consumes them (the step-time
  model fetches them from the tier and charges what the layers before that one do not hide);
- ``split_layer`` / ``token_share(phase, computed_len)``: the layers from ``split_layer`` on run only that share
  of a step's tokens (a causal encoder-decoder's prefill);
- ``problems(num_layers)``: what does not fit the model it belongs to.

The sums over a model's extras (:class:`core.model.ModelSpec`'s ``extra_params``, ``lookups``,
``token_share`` ...), :mod:`core.memory` and :mod:`core.perf` never ask which kind an extra is.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_TIER", "TIERS", "Lookup", "ModelExtra", "Phase"]

Phase = Literal["decode", "prefill"]
# where an extra's stored bytes may live (vLLM's EngramConfig.table_memory offers the same three)
TIERS = ("gpu", "host", "disk")
# where the planner keeps them unless a step says otherwise (the design intent of Engram: host DRAM)
DEFAULT_TIER = "host"


class Lookup(NamedTuple):
    """Rows a token reads from an extra's stored bytes: ``rows_per_token`` of ``row_bytes``, due at layer
    ``due_layer`` (the first layer that consumes them, 0-based)."""

    name: str
    due_layer: int
    rows_per_token: int
    row_bytes: int


class ModelExtra(BaseModel):
    """Base of every extra kind; a subclass declares ``kind: Literal["..."]`` and overrides what it adds. The
    defaults add nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def label(self) -> str:
        return type(self).__name__

    def describe(self) -> str:
        """What it stores, in words (the label when it stores nothing)."""
        return self.label()

    @property
    def params(self) -> int:
        """Parameters stored beside the backbone (not in its counts)."""
        return 0

    @property
    def stored_bytes(self) -> int:
        """Bytes of those parameters as stored (scales included)."""
        return 0

    def hbm_bytes_per_rank(self, tier: str, tp: int) -> float:
        """HBM one GPU gives the stored bytes in ``tier``: the ``gpu`` tier shards them over the attention-TP group
        (one copy per replica); ``host`` and ``disk`` keep them off the GPU."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
        return self.stored_bytes / tp if tier == "gpu" else 0.0

    def lookups(self) -> tuple[Lookup, ...]:
        """The rows a token reads from the stored bytes, one entry per table."""
        return ()

    @property
    def split_layer(self) -> int | None:
        """The first layer that runs only :meth:`token_share` of a step's tokens (None: every layer runs them all)."""
        return None

    def token_share(self, phase: Phase, computed_len: int) -> float:
        """The share of a step's tokens the layers from :attr:`split_layer` on run, for prompts that compute
        ``computed_len`` tokens each (1: all of them)."""
        return 1.0

    def problems(self, num_layers: int) -> list[str]:
        """Why the extra does not fit a model of ``num_layers`` layers (empty when it does)."""
        return []
