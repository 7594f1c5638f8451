"""Hugging Face ``config.json`` -> :class:`core.model.ModelSpec`.

One code path for the catalog (``catalogs/models/<id>/config.json`` as published) and for a config a user
pastes or uploads. Each family is read by a function registered with :func:`core.hf.registry.reader` in
its own module (``deepseek``, ``qwen``, ``llama4``, ``gemma4``, ``nemotron``, ``minimax``, ``misc``); it names
the config fields it uses and builds the layer groups with their mixers. A missing or mistyped field
raises ``ValueError`` naming the field and the family; an unsupported architecture names what is supported
(``SUPPORTED_MODEL_TYPES``). Counts are bounded by what the pages draw (``MAX_LAYERS``,
``MAX_ROUTED_EXPERTS``: at most ``CHART_MAX_ROWS`` rows per chart), every integer anywhere in the config (list
elements included) by ``MAX_FIELD_INT``, a vision tower's fields by ``vision.VISION_BOUNDS`` and the whole
model by ``MAX_TOTAL_PARAMS`` parameters, so a config the importer accepts renders every page. A value inside
those bounds that no real model has (``max_position_embeddings`` 10^12) is accepted and named by
``implausible_values``, which the import section shows as a warning.
"""

from core.hf.build import MAX_TOTAL_PARAMS, SUPPORTED_MODEL_TYPES, model_from_hf_config
from core.hf.fields import (
    CHART_MAX_ROWS,
    MAX_CONFIG_BYTES,
    MAX_FIELD_INT,
    MAX_LAYERS,
    MAX_ROUTED_EXPERTS,
    parse_config_text,
)
from core.hf.imported import (
    MAX_URL_CONFIG_CHARS,
    decode_config,
    encode_config,
    imported_model_id,
    model_from_config_text,
)
from core.hf.plausible import implausible_values
from core.hf.quant import quant_preset
from core.hf.vision import gemma4_vision_params, moonvit_params, qwen_vl_vision_params, vision_tower_params

__all__ = [
    "CHART_MAX_ROWS",
    "MAX_CONFIG_BYTES",
    "MAX_FIELD_INT",
    "MAX_LAYERS",
    "MAX_ROUTED_EXPERTS",
    "MAX_TOTAL_PARAMS",
    "MAX_URL_CONFIG_CHARS",
    "SUPPORTED_MODEL_TYPES",
    "decode_config",
    "encode_config",
    "gemma4_vision_params",
    "implausible_values",
    "imported_model_id",
    "model_from_config_text",
    "model_from_hf_config",
    "moonvit_params",
    "parse_config_text",
    "quant_preset",
    "qwen_vl_vision_params",
    "vision_tower_params",
]
