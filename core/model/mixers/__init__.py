"""The mixer registry: every kind of token mixer a layer can have, one file each in this folder.

A kind is a subclass of :class:`Mixer` with a ``kind: Literal["..."]`` field. The modules here are found and
imported automatically, so a new kind is one new file (plus its config reader in ``core.hf`` and its
test file ``tests/unit/test_mixer_<kind>.py``, whose ``EXAMPLES`` models the fuzz test builds hostile layers
from until a catalog model uses the kind): ``MIXER_KINDS`` and the pydantic union ``MixerSpec`` (discriminated on ``kind``) pick it up, and
every sum over a model's layers uses it through the :class:`Mixer` interface.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from core._util.kinds import discover_kinds
from core.model.mixers.base import KV_BYTES, Mixer, Phase, kv_bytes_per_element
from core.model.mixers.indexer import Indexer

__all__ = ["KV_BYTES", "MIXER_KINDS", "Indexer", "Mixer", "MixerSpec", "Phase", "kv_bytes_per_element"]


MIXER_KINDS: dict[str, type[Mixer]] = discover_kinds(__name__, __path__, Mixer, "mixer")
MixerSpec = Annotated[Union[tuple(MIXER_KINDS.values())], Field(discriminator="kind")]
