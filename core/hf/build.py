"""config.json -> ModelSpec: pick the family's reader (:mod:`core.hf.registry`), add what config.json does
not know (a catalog ``model.yaml``: name, family, published counts, sources), validate."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from core.hf.fields import Fields
from core.hf.quant import quant_preset
from core.hf.registry import READERS, family_of
from core.model import ModelSpec, PublishedCounts

__all__ = ["SUPPORTED_MODEL_TYPES", "model_from_hf_config"]

# Every module of this package is imported, so a family module registers its readers by existing: a new
# family is one new file here (its ``@reader`` functions), nothing to list. Skipped: this module and
# ``imported`` (they use the registry rather than fill it; importing them here would be circular).
_NOT_FAMILIES = {"build", "imported"}
for _info in pkgutil.iter_modules(importlib.import_module("core.hf").__path__):
    if _info.name not in _NOT_FAMILIES:
        importlib.import_module(f"core.hf.{_info.name}")

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(READERS)


def model_from_hf_config(
    config: Mapping[str, Any], *, model_id: str, name: str | None = None, meta: Mapping[str, Any] | None = None
) -> ModelSpec:
    """Build a ModelSpec from a parsed config.json. Raises ``ValueError`` with a message that names the
    missing or bad field, or the unsupported architecture."""
    if not isinstance(config, Mapping):
        raise ValueError("config.json must be a JSON object")
    family = family_of(config)
    fields = READERS[family](Fields(config, family))
    if _has_quantization(config):
        try:
            fields["checkpoint_precision"] = quant_preset(config)
        except ValueError:
            pass  # a quantisation the planner does not model: the checkpoint's format stays unknown
    meta = dict(meta or {})
    published = meta.get("published") or {}
    if not isinstance(published, Mapping):
        raise ValueError("published must be a mapping")
    return ModelSpec(
        **fields,
        id=model_id,
        name=name or meta.get("name") or model_id,
        family=str(meta.get("family") or family),
        architecture=family,
        hf_id=str(meta.get("hf_id") or config.get("_name_or_path") or ""),
        release_date=str(meta.get("release_date") or ""),
        tokenizer_family=str(meta.get("tokenizer_family") or ""),
        published=PublishedCounts(**published),
        source=str(meta.get("config_source") or ""),
        notes=str(meta.get("notes") or ""),
    )


def _has_quantization(config: Mapping[str, Any]) -> bool:
    text = config.get("text_config")
    return isinstance(config.get("quantization_config"), Mapping) or (
        isinstance(text, Mapping) and isinstance(text.get("quantization_config"), Mapping)
    )
