"""config.json -> ModelSpec: pick the family's reader (:mod:`core.hf.registry`), add what config.json does
not know (a catalog ``model.yaml``: name, family, published counts, sources), validate."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from core.hf.fields import Fields, check_integers
from core.hf.quant import quant_preset, weight_block_width
from core.hf.registry import READERS, family_of
from core.model import ModelSpec, PublishedCounts
from core.model.params import COMPONENTS, breakdown

__all__ = ["MAX_TOTAL_PARAMS", "SUPPORTED_MODEL_TYPES", "model_from_hf_config"]

# The most parameters an imported model may have, the vision tower and MTP module included (issue 37): 10**15, the
# most weights core.perf.kernels takes for one GEMM (any GEMM's weights are part of the total), about 400 times the
# catalog's largest (Qwen3.8-2.4T). Bounding each field is not enough: their products are what the formulas see
# (10**12 shared experts passed every field's bound and gave 3.1e18-parameter GEMMs; a [10**300, 10**300] merge
# kernel a 1,207-digit count no float can hold).
MAX_TOTAL_PARAMS = 10**15


# what each component of core.model.params.breakdown is, and the model's values that multiply into it (the
# config's own field names vary by family: n_shared_experts, num_shared_experts, ...)
def _component(c: str, m: ModelSpec) -> str:
    h, moe = m.hidden_size, m.moe
    n_moe = f"{m.num_moe_layers:,} MoE layers"
    parts = {
        "embedding": f"the embedding (vocab_size {m.vocab_size:,} x hidden_size {h:,})",
        "lm_head": f"the LM head (vocab_size {m.vocab_size:,} x hidden_size {h:,})",
        "attention": f"attention (its heads, head_dim and ranks x hidden_size {h:,} x {m.num_layers:,} layers)",
        "dense_ffn": f"the dense FFNs (intermediate size {m.dense_intermediate_size:,} x hidden_size {h:,} x "
        f"{m.num_dense_layers:,} dense layers)",
        "parallel_mlp": f"the MLP beside the experts (x hidden_size {h:,} x {n_moe})",
        "norms": f"the norms (hidden_size {h:,} x {m.num_layers:,} layers)",
        "vision": "the vision tower (the fields of vision_config)",
        "mtp": f"the MTP module ({m.num_mtp_layers:,} decoder layers)",
    }
    if moe is not None:
        parts["shared_experts"] = (
            f"the shared experts ({moe.n_shared_experts:,} of them, e.g. n_shared_experts, each of intermediate "
            f"size {moe.shared_intermediate_size:,}, e.g. shared_expert_intermediate_size or moe_intermediate_size, "
            f"x hidden_size {h:,} x {n_moe})"
        )
        parts["routed_experts"] = (
            f"the routed experts ({moe.n_routed_experts:,} of them, each of intermediate size "
            f"{moe.expert_intermediate_size:,}, e.g. moe_intermediate_size, x hidden_size {h:,} x {n_moe})"
        )
        parts["router"] = f"the router ({moe.n_routed_experts:,} experts x hidden_size {h:,} x {n_moe})"
    return parts.get(c, c)


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
    try:
        spec = _build(config, family, model_id=model_id, name=name, meta=meta)
    except ValidationError as e:  # a bound of the model's own classes, said without pydantic's boilerplate
        raise ValueError(_described(e, family)) from None
    # after the reader, so that a field it reads is refused with its own, tighter bound (and its reason); every
    # integer it reads is already bounded (Fields.int, Fields.int_list), so nothing large was multiplied yet
    check_integers(config, family)
    _check_size(spec, family)
    return spec


def _check_size(spec: ModelSpec, family: str) -> None:
    """At most MAX_TOTAL_PARAMS parameters in all (vision tower and MTP module included), checked on exact
    integers before any formula turns them into floats; the message names the largest component and its fields."""
    b = breakdown(spec)
    parts = {**{c: getattr(b, c) for c in COMPONENTS}, "mtp": b.mtp}
    total = sum(parts.values())
    if total <= MAX_TOTAL_PARAMS:
        return
    worst = max(parts, key=lambda c: parts[c])
    raise ValueError(
        f"config.json ({family}): the model would have {_count(total)} parameters, {_count(parts[worst])} of them in "
        f"{_component(worst, spec)}; allowed: at most {MAX_TOTAL_PARAMS:,} (10^15) parameters in all"
    )


def _count(n: float) -> str:
    """A parameter count for a message: 3.15e+18, or "about 10^1,206" past what a float holds."""
    return f"{float(n):.3g}" if n < 10**300 else f"about 10^{len(str(int(n))) - 1:,}"


def _build(
    config: Mapping[str, Any], family: str, *, model_id: str, name: str | None, meta: Mapping[str, Any] | None
) -> ModelSpec:
    fields = READERS[family](Fields(config, family))
    _check_moe_layers(config, family, fields)
    if _has_quantization(config):
        try:
            fields["checkpoint_precision"] = quant_preset(config)
        except ValueError:
            pass  # a quantisation the planner does not model: the checkpoint's format stays unknown
        fields["checkpoint_block_width"] = weight_block_width(config)
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


def _described(e: ValidationError, family: str) -> str:
    """A pydantic refusal as one line that names the family, the model part and its field, and what is
    allowed (pydantic's own text without its boilerplate and links)."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:59] + "…"
        parts.append(f"{e.title} {loc}: {msg}, got {got}" if loc else f"{e.title}: {msg}")
    return f"config.json ({family}): " + "; ".join(parts)


# the fields that make layers dense instead of MoE, in the families that have them
_DENSE_LAYER_FIELDS = (
    "first_k_dense_replace",
    "moe_layer_freq",
    "decoder_sparse_step",
    "mlp_only_layers",
    "interleave_moe_layer_step",
    "moe_layers",
    "moe_layer_frequency",
    "hybrid_override_pattern",
)


def _check_moe_layers(config: Mapping[str, Any], family: str, fields: Mapping[str, Any]) -> None:
    """A config with routed experts must have at least one MoE layer: the pages that draw expert loads
    (Balance) and place experts (Single box) need one."""
    if fields.get("moe") is None:
        return
    layers = fields["num_layers"]
    not_moe = set(fields.get("dense_layers", ())) | set(fields.get("ffn_free_layers", ()))
    if any(i not in not_moe for i in range(layers)):
        return
    text = config.get("text_config")
    present = [k for k in _DENSE_LAYER_FIELDS if k in config or (isinstance(text, Mapping) and k in text)]
    named = f"fields {', '.join(present)}" if present else "the layer layout"
    raise ValueError(
        f"config.json ({family}): no layer has a MoE block although routed experts are configured: {named} "
        f"make all {layers:,} layers dense; allowed: values that leave at least one MoE layer"
    )
