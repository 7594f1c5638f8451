"""The extras registry: every kind of model-level extra (what is neither a layer's mixer nor its FFN: off-GPU
lookup tables, a causal encoder), one file each in this folder.

A kind is a subclass of :class:`ModelExtra` with a ``kind: Literal["..."]`` field. The modules here are found and
imported automatically, so a new kind is one new file (plus its config reader in ``core.hf`` and its tests):
``EXTRA_KINDS`` and the pydantic union ``ExtraSpec`` (discriminated on ``kind``) pick it up, and every sum over a
model's extras (:class:`core.model.ModelSpec`, :mod:`core.memory`, :mod:`core.perf`) uses it through the
:class:`ModelExtra` interface.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import Field

from core.model.extras.base import DEFAULT_TIER, TIERS, Lookup, ModelExtra

__all__ = ["DEFAULT_TIER", "EXTRA_KINDS", "TIERS", "ExtraSpec", "Lookup", "ModelExtra"]


def _discover() -> dict[str, type[ModelExtra]]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    kinds: dict[str, type[ModelExtra]] = {}
    todo = list(ModelExtra.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        field = cls.model_fields.get("kind")
        if field is not None and get_origin(field.annotation) is Literal:
            (name,) = get_args(field.annotation)
            if name in kinds and kinds[name] is not cls:
                raise RuntimeError(f"two extra classes claim kind {name!r}: {kinds[name].__name__}, {cls.__name__}")
            kinds[name] = cls
    return dict(sorted(kinds.items()))


EXTRA_KINDS: dict[str, type[ModelExtra]] = _discover()
ExtraSpec = Annotated[Union[tuple(EXTRA_KINDS.values())], Field(discriminator="kind")]
