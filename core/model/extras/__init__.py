"""The extras registry: every kind of model-level extra (what is neither a layer's mixer nor its FFN: off-GPU
lookup tables, a causal encoder), one file each in this folder.

A kind is a subclass of :class:`ModelExtra` with a ``kind: Literal["..."]`` field. The modules here are found and
imported automatically, so a new kind is one new file (plus its config reader in ``core.hf`` and its tests):
``EXTRA_KINDS`` and the pydantic union ``ExtraSpec`` (discriminated on ``kind``) pick it up, and every sum over a
model's extras (:class:`core.model.ModelSpec`, :mod:`core.memory`, :mod:`core.perf`) uses it through the
:class:`ModelExtra` interface.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from core._util.kinds import discover_kinds
from core.model.extras.base import DEFAULT_TIER, TIERS, Lookup, ModelExtra

__all__ = ["DEFAULT_TIER", "EXTRA_KINDS", "TIERS", "ExtraSpec", "Lookup", "ModelExtra"]


EXTRA_KINDS: dict[str, type[ModelExtra]] = discover_kinds(__name__, __path__, ModelExtra, "extra")
ExtraSpec = Annotated[Union[tuple(EXTRA_KINDS.values())], Field(discriminator="kind")]
