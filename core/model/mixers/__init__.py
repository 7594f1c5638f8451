"""The mixer registry: every kind of token mixer a layer can have, one file each in this folder.

A kind is a subclass of :class:`Mixer` with a ``kind: Literal["..."]`` field. The modules here are found and
imported automatically, so a new kind is one new file (plus its config reader in ``core.hf`` and its
test file ``tests/unit/test_mixer_<kind>.py``, whose ``EXAMPLES`` models the fuzz test builds hostile layers
from until a catalog model uses the kind): ``MIXER_KINDS`` and the pydantic union ``MixerSpec`` (discriminated on ``kind``) pick it up, and
every sum over a model's layers uses it through the :class:`Mixer` interface.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import Field

from core.model.mixers.base import KV_BYTES, Mixer, Phase, kv_bytes_per_element
from core.model.mixers.indexer import Indexer

__all__ = ["KV_BYTES", "MIXER_KINDS", "Indexer", "Mixer", "MixerSpec", "Phase", "kv_bytes_per_element"]


def _discover() -> dict[str, type[Mixer]]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    kinds: dict[str, type[Mixer]] = {}
    todo = list(Mixer.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        field = cls.model_fields.get("kind")
        if field is not None and get_origin(field.annotation) is Literal:
            (name,) = get_args(field.annotation)
            if name in kinds and kinds[name] is not cls:
                raise RuntimeError(f"two mixer classes claim kind {name!r}: {kinds[name].__name__}, {cls.__name__}")
            kinds[name] = cls
    return dict(sorted(kinds.items()))


MIXER_KINDS: dict[str, type[Mixer]] = _discover()
MixerSpec = Annotated[Union[tuple(MIXER_KINDS.values())], Field(discriminator="kind")]
