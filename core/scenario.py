"""The scenario's URL form: ``?model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8...``.

Pure functions (no Streamlit) so the app, a CLI and the tests share one codec. Parsing never raises:
each bad or unknown field falls back to its default and yields a warning that says what was wrong
and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from core.catalog import Catalog
from core.specs import DTYPES, KV_DTYPES, Precision, Scenario, Workload, describe_validation_error

__all__ = ["DEFAULT_SCENARIO", "URL_KEYS", "scenario_from_params", "scenario_to_params"]

DEFAULT_SCENARIO = Scenario()

# URL key -> (what it sets, how a user would read it)
URL_KEYS: dict[str, str] = {
    "model": "model id (catalog)",
    "gpu": "GPU id (catalog)",
    "nodes": "number of nodes, 1-4096",
    "gpn": "GPUs per node, 1-1024",
    "w": "weight dtype",
    "ex": "routed-expert dtype (omit = same as weights)",
    "kv": "KV-cache dtype",
    "a2a": "all-to-all dispatch dtype (bf16 | fp8)",
    "batch": "concurrent sequences, 1-1,000,000",
    "isl": "input tokens per sequence, 1-10,000,000",
    "osl": "output tokens per sequence, 1-10,000,000",
}

_MAX_VALUE_CHARS = 200


def scenario_to_params(s: Scenario) -> dict[str, str]:
    """The scenario as URL query parameters (strings), in a stable order."""
    p = {
        "model": s.model_id,
        "gpu": s.gpu_id,
        "nodes": str(s.num_nodes),
        "gpn": str(s.gpus_per_node),
        "w": s.precision.weights,
    }
    if s.precision.routed_experts and s.precision.routed_experts != s.precision.weights:
        p["ex"] = s.precision.routed_experts
    p.update(
        kv=s.precision.kv_cache,
        a2a=s.precision.dispatch,
        batch=str(s.workload.batch),
        isl=str(s.workload.input_len),
        osl=str(s.workload.output_len),
    )
    return p


def _one(params: Mapping[str, Any], key: str) -> str | None:
    v = params.get(key)
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else None
    if v is None:
        return None
    return str(v)[: _MAX_VALUE_CHARS + 1].strip()


def _show(v: str) -> str:
    return repr(v if len(v) <= 40 else v[:40] + "...")


def scenario_from_params(params: Mapping[str, Any], catalog: Catalog) -> tuple[Scenario, list[str]]:
    """Read a scenario from URL query parameters; returns it and one warning per bad field."""
    d = DEFAULT_SCENARIO
    warnings: list[str] = []

    def choice(key: str, allowed: list[str] | tuple[str, ...], default: str, what: str) -> str:
        v = _one(params, key)
        if v is None or v == "":
            return default
        if v in allowed:
            return v
        if len(allowed) <= 16:
            hint = "Allowed: " + ", ".join(allowed)
        else:
            close = difflib.get_close_matches(v.lower(), list(allowed), n=4, cutoff=0.5)
            hint = (f"Closest: {', '.join(close)}. " if close else "") + "The Catalog page lists them all"
        warnings.append(f"URL parameter {key}={_show(v)} is not a known {what}; using {default!r}. {hint}")
        return default

    def integer(key: str, lo: int, hi: int, default: int, what: str) -> int:
        v = _one(params, key)
        if v is None or v == "":
            return default
        try:
            n = int(v)
        except ValueError:
            warnings.append(f"URL parameter {key}={_show(v)} is not a whole number ({what}); using {default}")
            return default
        if not lo <= n <= hi:
            warnings.append(f"URL parameter {key}={n} is outside {lo:,}-{hi:,} ({what}); using {default}")
            return default
        return n

    model_id = choice("model", sorted(catalog.models), d.model_id, "model id")
    gpu_id = choice("gpu", sorted(catalog.gpus), d.gpu_id, "GPU id")
    nodes = integer("nodes", 1, 4096, d.num_nodes, "nodes")
    gpn = integer("gpn", 1, 1024, d.gpus_per_node, "GPUs per node")
    weights = choice("w", DTYPES, d.precision.weights, "weight dtype")
    experts_raw = _one(params, "ex")
    experts = choice("ex", DTYPES, weights, "expert dtype") if experts_raw else None
    kv = choice("kv", KV_DTYPES, d.precision.kv_cache, "KV-cache dtype")
    a2a = choice("a2a", ("bf16", "fp8"), d.precision.dispatch, "dispatch dtype")
    batch = integer("batch", 1, 1_000_000, d.workload.batch, "concurrent sequences")
    isl = integer("isl", 1, 10_000_000, d.workload.input_len, "input tokens")
    osl = integer("osl", 1, 10_000_000, d.workload.output_len, "output tokens")
    if nodes * gpn > 65_536:
        warnings.append(f"URL asks for {nodes * gpn:,} GPUs (more than 65,536); using the default cluster")
        nodes, gpn = d.num_nodes, d.gpus_per_node
    try:
        scenario = Scenario(
            model_id=model_id,
            gpu_id=gpu_id,
            num_nodes=nodes,
            gpus_per_node=gpn,
            precision=Precision(
                weights=weights,
                routed_experts=experts if experts and experts != weights else None,
                kv_cache=kv,
                dispatch=a2a,
            ),
            workload=Workload(batch=batch, input_len=isl, output_len=osl),
        )
    except ValidationError as e:  # defensive: every field was range-checked above
        warnings.append(f"URL scenario is invalid ({describe_validation_error(e)}); using the default")
        scenario = d
    return scenario, warnings
