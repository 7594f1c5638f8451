"""Load and validate ``catalogs/``: models (config.json + model.yaml), GPUs, interconnects, hosts, the
efficiency factors (per GPU, and the single-box ones of ``offload_efficiency.yaml``) and published cases.

``load_catalog()`` is cached per directory and returns a :class:`Catalog` whose ``models`` and
``gpus`` map ids to frozen specs. An unknown id raises ``ValueError`` listing the closest ids; a
malformed file raises :class:`CatalogError` naming the file and the field.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import ValidationError

from core._util.checks import load_yaml
from core._util.validated import describe_validation_error
from core.deployment.specs import DraftMethod, SpecDecodeConfig
from core.hardware import GPUSpec, HostSpec, InterconnectSpec
from core.hardware.collectives import CollectiveTable, load_collectives
from core.hardware.efficiency import Efficiency, EfficiencyProfile, resolve_efficiency
from core.hardware.offload_efficiency import OffloadEfficiency
from core.hf import model_from_hf_config
from core.model import ModelSpec

__all__ = ["CATALOG_DIR", "Catalog", "CatalogError", "load_catalog"]

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalogs"

_MODEL_META_KEYS = {
    "id",
    "name",
    "family",
    "kind",
    "hf_id",
    "release_date",
    "tokenizer_family",
    "config_source",
    "config_notes",
    "published",
    "sources",
    "notes",
}


class CatalogError(ValueError):
    """A catalog file is missing, unreadable or invalid. The message names the file and the field."""


def _read_yaml(path: Path) -> Any:
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise CatalogError(f"{path}: not valid YAML: {e}") from None
    except OSError as e:
        raise CatalogError(f"{path}: cannot be read: {e.strerror}") from None


def _closest(name: str, ids: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), ids, n=5, cutoff=0.4)
    if not close:
        close = [i for i in ids if name.lower()[:3] in i][:5]
    return ", ".join(close) if close else ", ".join(sorted(ids)[:8]) + ", ..."


@dataclass(frozen=True)
class Catalog:
    models: Mapping[str, ModelSpec]
    gpus: Mapping[str, GPUSpec]
    interconnects: Mapping[str, InterconnectSpec]
    model_meta: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    draft_methods: Mapping[str, DraftMethod] = field(default_factory=dict)
    efficiency: Mapping[str, EfficiencyProfile] = field(default_factory=dict)
    validation_cases: tuple[Mapping[str, Any], ...] = ()
    root: Path = CATALOG_DIR
    hosts: Mapping[str, HostSpec] = field(default_factory=dict)
    offload_cases: tuple[Mapping[str, Any], ...] = ()
    # single-box efficiency factors (catalogs/offload_efficiency.yaml); default: the shipped file's
    offload_efficiency: OffloadEfficiency = field(default_factory=OffloadEfficiency)
    # measured collective latencies per GPU type (catalogs/collectives.csv)
    collectives: Mapping[str, CollectiveTable] = field(default_factory=dict)
    # the step-time model's measured error per phase (catalogs/step_error.yaml): median LOO |error|
    step_error: Mapping[str, float] = field(default_factory=lambda: {"decode": 0.15, "prefill": 0.15})

    def efficiency_for(self, gpu_id: str, stack: str = "sglang", profiles=None) -> Efficiency:
        """The efficiency factors in force for ``gpu_id`` under serving ``stack``, with the GPU's measured
        collectives (``profiles``: other factor profiles, e.g. a calibration's)."""
        return resolve_efficiency(
            gpu_id,
            self.efficiency if profiles is None else profiles,
            stack=stack,
            collectives=self.collectives.get(gpu_id),
        )

    def model(self, model_id: str) -> ModelSpec:
        return _lookup(self.models, model_id, "model")

    def gpu(self, gpu_id: str) -> GPUSpec:
        return _lookup(self.gpus, gpu_id, "GPU")

    def interconnect(self, link_id: str) -> InterconnectSpec:
        return _lookup(self.interconnects, link_id, "interconnect")

    def draft_method(self, method_id: str) -> DraftMethod:
        return _lookup(self.draft_methods, method_id, "draft method")

    def host(self, host_id: str) -> HostSpec:
        return _lookup(self.hosts, host_id, "host")

    def draft_model_for(self, spec: SpecDecodeConfig) -> ModelSpec | None:
        """The separate draft model a speculative config names (None for every other kind of draft)."""
        return self.model(spec.draft_model_id) if spec.kind == "draft_model" and spec.draft_model_id else None


def _lookup(table: Mapping[str, Any], key: str, what: str) -> Any:
    try:
        return table[key]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} id {key!r}; closest: {_closest(str(key), list(table))}") from None


def _load_model(folder: Path) -> tuple[ModelSpec, dict[str, Any]]:
    cfg_path, meta_path = folder / "config.json", folder / "model.yaml"
    for p in (cfg_path, meta_path):
        if not p.is_file():
            raise CatalogError(f"{p}: missing (every model folder needs config.json and model.yaml)")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CatalogError(f"{cfg_path}: not valid JSON: {e.msg} (line {e.lineno})") from None
    meta = _read_yaml(meta_path)
    if not isinstance(meta, dict):
        raise CatalogError(f"{meta_path}: must be a mapping of fields")
    unknown = set(meta) - _MODEL_META_KEYS
    if unknown:
        raise CatalogError(f"{meta_path}: unknown field(s) {', '.join(sorted(unknown))}")
    if meta.get("id") != folder.name:
        raise CatalogError(f"{meta_path}: field 'id' ({meta.get('id')!r}) must equal the folder name {folder.name!r}")
    try:
        spec = model_from_hf_config(config, model_id=folder.name, meta=meta)
    except ValidationError as e:
        raise CatalogError(f"{folder}: {describe_validation_error(e)}") from None
    except ValueError as e:
        raise CatalogError(f"{folder}: {e}") from None
    kind = meta.get("kind")
    if kind is not None and kind != ("moe" if spec.is_moe else "dense"):
        raise CatalogError(
            f"{meta_path}: field 'kind' is {kind!r} but config.json describes a "
            f"{'MoE' if spec.is_moe else 'dense'} model"
        )
    return spec, meta


def _load_gpu(path: Path) -> GPUSpec:
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: must be a mapping of fields")
    if data.get("id") != path.stem:
        raise CatalogError(f"{path}: field 'id' ({data.get('id')!r}) must equal the file name {path.stem!r}")
    try:
        return GPUSpec(**data)
    except ValidationError as e:
        raise CatalogError(f"{path}: {describe_validation_error(e)}") from None


def _load_entries(path: Path, key: str | None, cls, id_field: str = "id") -> dict[str, Any]:
    """A YAML list of entries (under ``key`` when given), each validated by ``cls``, keyed by ``id_field``."""
    if not path.is_file():
        return {}
    data = _read_yaml(path)
    if key is None:
        items = data
    else:
        items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise CatalogError(f"{path}: must be a list" + (f" under '{key}'" if key else ""))
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise CatalogError(f"{path}: entry {i} must be a mapping")
        try:
            entry = cls(**item)
        except ValidationError as e:
            raise CatalogError(
                f"{path}: entry {i} ({item.get(id_field, '?')}): {describe_validation_error(e)}"
            ) from None
        ident = getattr(entry, id_field)
        if ident in out:
            raise CatalogError(f"{path}: duplicate {id_field} {ident!r}")
        out[ident] = entry
    return out


def _load_interconnects(path: Path) -> dict[str, InterconnectSpec]:
    if path.is_file() and isinstance(_read_yaml(path), dict):
        return _load_entries(path, "links", InterconnectSpec)
    return _load_entries(path, None, InterconnectSpec)


def _load_draft_methods(path: Path) -> dict[str, DraftMethod]:
    return _load_entries(path, "methods", DraftMethod)


def _load_efficiency(path: Path) -> dict[str, EfficiencyProfile]:
    return _load_entries(path, "profiles", EfficiencyProfile, id_field="key")


def _load_cases(folder: Path) -> tuple[Mapping[str, Any], ...]:
    cases: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        data = _read_yaml(path)
        if not isinstance(data, list):
            raise CatalogError(f"{path}: must be a list of cases")
        for i, case in enumerate(data):
            if not isinstance(case, dict) or "id" not in case or "measured" not in case:
                raise CatalogError(f"{path}: case {i} needs at least 'id' and 'measured'")
            if case["id"] in seen:
                raise CatalogError(f"{path}: duplicate case id {case['id']!r}")
            seen.add(case["id"])
            cases.append(MappingProxyType({**case, "file": path.name}))
    return tuple(cases)


def _load_offload_cases(path: Path) -> tuple[Mapping[str, Any], ...]:
    if not path.is_file():
        return ()
    data = _read_yaml(path)
    items = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise CatalogError(f"{path}: must be a list under 'cases'")
    for i, case in enumerate(items):
        need = ("id", "model", "precision", "host", "gpu", "n_cpu_moe", "context_len", "measured", "source")
        if not isinstance(case, dict) or any(k not in case for k in need):
            raise CatalogError(f"{path}: case {i} needs {', '.join(need)}")
    return tuple(MappingProxyType(dict(c)) for c in items)


def _load_collectives(path: Path) -> dict[str, CollectiveTable]:
    try:
        return load_collectives(path)
    except (ValueError, KeyError) as e:
        raise CatalogError(f"{path}: {e}") from None


def _load_offload_efficiency(path: Path) -> OffloadEfficiency:
    """The single-box efficiency factors: under ``factors``, one entry per field of ``OffloadEfficiency``,
    each a ``value`` and its ``provenance`` (fitted on which case, or an assumption); the values are checked
    by ``OffloadEfficiency`` itself."""
    if not path.is_file():
        raise CatalogError(f"{path}: missing (the single-box efficiency factors, a value and provenance each)")
    data = _read_yaml(path)
    items = data.get("factors") if isinstance(data, dict) else None
    if not isinstance(items, dict):
        raise CatalogError(f"{path}: must be a mapping of factors under 'factors'")
    names = [f.name for f in fields(OffloadEfficiency)]
    unknown = sorted(str(k) for k in items if k not in names)
    if unknown:
        raise CatalogError(f"{path}: unknown factor(s) {', '.join(unknown)}; known: {', '.join(names)}")
    missing = [n for n in names if n not in items]
    if missing:
        raise CatalogError(f"{path}: field 'factors' lacks {', '.join(missing)}")
    values = {}
    for name in names:
        entry = items[name]
        if not isinstance(entry, dict) or set(entry) != {"value", "provenance"}:
            raise CatalogError(f"{path}: field 'factors.{name}' must be a mapping of 'value' and 'provenance'")
        if not isinstance(entry["provenance"], str) or not entry["provenance"].strip():
            raise CatalogError(f"{path}: field 'factors.{name}.provenance' must say where the value comes from")
        values[name] = entry["value"]
    try:
        return OffloadEfficiency(**values)
    except ValueError as e:  # the message starts with the factor's name
        raise CatalogError(f"{path}: factors.{e}") from None


@functools.lru_cache(maxsize=8)
def _load(root: Path) -> Catalog:
    try:
        found = root.is_dir()
    except OSError as e:  # a name too long for the file system, a permission error...
        raise CatalogError(f"{str(root)[:200]}: cannot be read as a catalog directory ({e.strerror})") from None
    if not found:
        raise CatalogError(f"{root}: catalog directory not found")
    models: dict[str, ModelSpec] = {}
    metas: dict[str, Mapping[str, Any]] = {}
    model_dir = root / "models"
    for folder in sorted(p for p in model_dir.iterdir() if p.is_dir()) if model_dir.is_dir() else []:
        spec, meta = _load_model(folder)
        models[spec.id] = spec
        metas[spec.id] = MappingProxyType(meta)
    gpus: dict[str, GPUSpec] = {}
    gpu_dir = root / "gpus"
    for path in sorted(gpu_dir.glob("*.yaml")) if gpu_dir.is_dir() else []:
        g = _load_gpu(path)
        gpus[g.id] = g
    links = _load_interconnects(root / "interconnects.yaml")
    for g in gpus.values():
        for fld in ("scale_up_link", "scale_out_link"):
            link = getattr(g, fld)
            if link and links and link not in links:
                raise CatalogError(f"{gpu_dir / (g.id + '.yaml')}: field '{fld}' names unknown interconnect {link!r}")
    return Catalog(
        models=MappingProxyType(models),
        gpus=MappingProxyType(gpus),
        interconnects=MappingProxyType(links),
        model_meta=MappingProxyType(metas),
        draft_methods=MappingProxyType(_load_draft_methods(root / "draft_methods.yaml")),
        efficiency=MappingProxyType(_load_efficiency(root / "efficiency.yaml")),
        validation_cases=_load_cases(root / "validation"),
        root=root,
        hosts=MappingProxyType(_load_entries(root / "hosts.yaml", "hosts", HostSpec)),
        offload_cases=_load_offload_cases(root / "offload_cases.yaml"),
        offload_efficiency=_load_offload_efficiency(root / "offload_efficiency.yaml"),
        collectives=MappingProxyType(_load_collectives(root / "collectives.csv")),
        step_error=MappingProxyType(_load_step_error(root / "step_error.yaml")),
    )


def _load_step_error(path: Path) -> dict[str, float]:
    """Median leave-one-out |error| per phase (absent file: 15%, the whole-step target of the step-time issue)."""
    out = {"decode": 0.15, "prefill": 0.15}
    if not path.is_file():
        return out
    data = load_yaml(path.read_text(encoding="utf-8")) or {}
    for phase in out:
        v = (data.get(phase) or {}).get("median_loo_error")
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1):
            raise CatalogError(f"{path}: {phase}.median_loo_error must be a number in [0, 1), got {v!r}")
        out[phase] = float(v)
    return out


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The catalog at ``path`` (default: the repository's ``catalogs/``), loaded once and cached."""
    return _load(Path(path).resolve() if path is not None else CATALOG_DIR)
