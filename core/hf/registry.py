"""The reader registry: which function reads which ``config.json`` family.

A reader is registered with ``@reader("model_type", ..., archs=("XForCausalLM", ...), aliases=(...))``
next to its code (one module per family in this package); ``model_type`` picks the reader, else the first
known name in ``architectures``. A reader returns the :class:`core.model.ModelSpec` fields it read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.hf.fields import Fields

__all__ = ["ARCHITECTURES", "READERS", "Reader", "family_of", "reader"]

Reader = Callable[[Fields], dict[str, Any]]
READERS: dict[str, Reader] = {}
ARCHITECTURES: dict[str, str] = {}  # architectures[] name -> model_type
_ALIASES: dict[str, str] = {}


def reader(*model_types: str, archs: tuple[str, ...] = (), aliases: tuple[str, ...] = ()):
    """Register the decorated function as the reader of ``model_types`` (the first is the canonical one
    that ``archs`` and ``aliases`` map to)."""

    def register(fn: Reader) -> Reader:
        for t in model_types:
            if t in READERS:
                raise RuntimeError(f"two readers for model_type {t!r}")
            READERS[t] = fn
        ARCHITECTURES.update(dict.fromkeys(archs, model_types[0]))
        _ALIASES.update(dict.fromkeys(aliases, model_types[0]))
        return fn

    return register


def family_of(cfg: Mapping[str, Any]) -> str:
    """The model_type whose reader reads ``cfg``; ValueError naming what is supported otherwise."""
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"config.json: field 'model_type' must be a string, got {model_type!r}")
    if model_type:
        model_type = _ALIASES.get(model_type, model_type)
        if model_type in READERS:
            return model_type
    archs = cfg.get("architectures") or []
    if isinstance(archs, list):
        for a in archs:
            if isinstance(a, str) and a in ARCHITECTURES:
                return ARCHITECTURES[a]
    shown = model_type or (archs[0] if isinstance(archs, list) and archs else None)
    supported = ", ".join(READERS)
    if not shown:
        raise ValueError(
            f"config.json has neither 'model_type' nor 'architectures'; supported model types: {supported}"
        )
    raise ValueError(f"config.json: architecture {shown!r} is not supported; supported model types: {supported}")
