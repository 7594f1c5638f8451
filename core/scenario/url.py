"""The scenario's URL form: ``?model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8...``.

Pure functions (no Streamlit) so the app, a CLI and the tests share one codec. Parsing never raises:
each bad or unknown field falls back to its default and yields a warning that says what was wrong
and what is allowed. Optional parts (layout, speculative decoding, memory assumptions) appear in the
URL only when they differ from their defaults.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from core._util.memo import by_identity
from core._util.validated import describe_validation_error
from core.catalog import Catalog
from core.deployment.calibration import MAX_STEP_SCALE, MAX_TTFT_OFFSET_S, MIN_STEP_SCALE, ServedCalibration
from core.deployment.parallel import default_layout
from core.deployment.specs import (
    SPEC_METHOD_KINDS,
    MemoryAssumptions,
    ParallelLayout,
    Precision,
    Scenario,
    SingleBox,
    SpecDecodeConfig,
    Workload,
)
from core.hardware.efficiency import SERVING_STACKS
from core.model import ModelSpec
from core.model.dtypes import DTYPES, KV_DTYPES, LINEAR_STATE_DTYPES
from core.scenario.url_keys import URL_KEYS, key_warnings, one, show
from core.speculative import default_gamma

__all__ = [
    "DEFAULT_SCENARIO",
    "SPEC_METHODS",
    "URL_KEYS",
    "layout_from_sizes",
    "resolved_layout",
    "scenario_from_params",
    "scenario_to_params",
]

DEFAULT_SCENARIO = Scenario()
SPEC_METHODS = tuple(SPEC_METHOD_KINDS)
# the speculative knobs that mean nothing without a method (sd)
_SPEC_KEYS = ("draft", "dw", "gamma", "alpha", "c")


_BOX_KEYS = ("host", "bgpu", "bn", "ncm", "q", "bctx")

_LAYOUT_KEYS = ("tp", "etp", "pp", "dp")


# the default layout comes from the layout search up to this cluster size (it takes ~1 s at 1,152 GPUs);
# beyond it, from the memory-minimal rule (core.deployment.parallel.default_layout)
SEARCHED_DEFAULT_MAX_GPUS = 1152


def resolved_layout(scenario: Scenario, model: ModelSpec) -> ParallelLayout:
    """The scenario's layout, or the default one for its cluster: the Layouts page's best decode plan for
    the model, cluster, precision, memory assumptions and serving stack at the default workload (not the
    scenario's, so that the layout does not move while a user edits the context), so every page opens on
    a plan the search ranks first (the first that needs no more redundant expert slots than the scenario's
    memory assumptions hold). Where no plan meets the default TPOT target, or beyond
    :data:`SEARCHED_DEFAULT_MAX_GPUS`, the memory-minimal :func:`core.deployment.parallel.default_layout`."""
    if scenario.layout is not None:
        return scenario.layout
    return _default_layout(
        model,
        scenario.gpu_id,
        scenario.num_nodes,
        scenario.gpus_per_node,
        scenario.precision,
        scenario.memory,
        scenario.serving_stack,
    )


@by_identity(256)
def _default_layout(model, gpu_id, nodes, gpus_per_node, precision, assumptions, stack) -> ParallelLayout:
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.hardware import ClusterSpec
    from core.hardware.served_step import served_step_cost
    from core.serving import layout

    total = nodes * gpus_per_node
    fallback = default_layout(model, total, gpus_per_node, precision)
    cat = load_catalog()
    if total > SEARCHED_DEFAULT_MAX_GPUS or gpu_id not in cat.gpus:
        return fallback
    gpu = cat.gpu(gpu_id)
    cluster = ClusterSpec(gpu=gpu, num_nodes=nodes, gpus_per_node=gpus_per_node)
    eff = cat.efficiency_for(gpu_id, stack)
    served = served_step_cost(stack)  # the stack's served per-step costs, as the Layouts page ranks with them
    d = Deployment(
        model, gpu, ParallelLayout(), precision, eff, cluster=cluster, assumptions=assumptions, served_step=served
    )
    plans = layout.recommend(d, "decode", catalog=cat)
    # the best plan the scenario's own redundant-expert count runs (EP72 on 384 experts needs 48 redundant
    # slots: set them in the sidebar's memory assumptions, or the next plan is taken)
    fits = (p for p in plans if p.redundant_experts == assumptions.redundant_experts)
    return next((p.layout for p in fits), fallback)


def layout_from_sizes(total_gpus: int, tp: int, etp: int, pp: int, dp: int) -> ParallelLayout:
    """A layout from the four sizes a user picks: each pipeline stage of each replica has
    ``total / (pp x dp)`` GPUs, shared by attention (TP x DP-attention) and experts (EP x expert-TP)."""
    for name, v in (("tp", tp), ("etp", etp), ("pp", pp), ("dp", dp)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if total_gpus % (pp * dp):
        raise ValueError(f"pp x dp ({pp} x {dp}) must divide the {total_gpus} GPUs")
    stage = total_gpus // (pp * dp)
    if stage % tp:
        raise ValueError(f"tp {tp} must divide the {stage} GPUs of a pipeline stage")
    if stage % etp:
        raise ValueError(f"expert tp {etp} must divide the {stage} GPUs of a pipeline stage")
    return ParallelLayout(attention_tp=tp, attention_dp=stage // tp, ep=stage // etp, expert_tp=etp, pp=pp, dp=dp)


def _num(x: float) -> str:
    """Short (``%g``) when that reads back exactly, else Python's shortest round-trip form: a URL must
    reopen the same scenario (``f"{0.001953125:g}"`` is ``0.00195312``)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def scenario_to_params(s: Scenario) -> dict[str, str]:
    """The scenario as URL query parameters (strings), in a stable order; defaults left out."""
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
        **({"lstate": s.precision.linear_state} if s.precision.linear_state else {}),
        batch=str(s.workload.batch),
        isl=str(s.workload.input_len),
        osl=str(s.workload.output_len),
    )
    if s.workload.prefix_reuse:
        p["reuse"] = _num(100 * s.workload.prefix_reuse)
    if s.layout is not None:
        lay = s.layout
        p.update(tp=str(lay.attention_tp), etp=str(lay.expert_tp), pp=str(lay.pp), dp=str(lay.dp))
        if lay.dcp > 1:
            p["dcp"] = str(lay.dcp)
    if s.spec.enabled:
        p["sd"] = s.spec.method
        if s.spec.method == "draft_model" and s.spec.draft_model_id:
            p["draft"] = s.spec.draft_model_id
        if s.spec.draft_weights:
            p["dw"] = s.spec.draft_weights
        p["gamma"] = str(s.spec.num_speculative_tokens)
        if s.spec.acceptance_rate is not None:
            p["alpha"] = _num(s.spec.acceptance_rate)
        if s.spec.draft_cost is not None:
            p["c"] = _num(s.spec.draft_cost)
    if s.serving_stack != DEFAULT_SCENARIO.serving_stack:
        p["stack"] = s.serving_stack
    d = MemoryAssumptions()
    m = s.memory
    for key, field, fmt in (
        ("util", "gpu_memory_utilization", _num),
        ("reserve", "runtime_reserve_gb", _num),
        ("mbt", "max_num_batched_tokens", str),
        ("act", "activation_factor", _num),
        ("red", "redundant_experts", str),
    ):
        if getattr(m, field) != getattr(d, field):
            p[key] = fmt(getattr(m, field))
    if s.box is not None:
        b = s.box
        p.update(host=b.host_id, bgpu=b.gpu_id or "none", bn=str(b.n_gpus), q=b.quant, bctx=str(b.context_len))
        if b.n_cpu_moe is not None:
            p["ncm"] = str(b.n_cpu_moe)
    if s.calibration is not None:
        c = s.calibration
        p.update(cdec=_num(c.decode_step_scale), cpre=_num(c.prefill_step_scale), csrc=c.source)
        p.update(cruns=str(c.runs), cres=_num(c.fit_residual))
        if c.ttft_offset_s:
            p["cttft"] = _num(c.ttft_offset_s)
    return p


def _calibration(params: Mapping[str, Any], number, warnings: list[str]) -> ServedCalibration | None:
    """The served calibration the URL carries (cdec / cpre and what it was fitted on), or None."""
    if not any(one(params, k) for k in ("cdec", "cpre")):
        return None
    try:
        return ServedCalibration(
            decode_step_scale=number("cdec", MIN_STEP_SCALE, MAX_STEP_SCALE, 1.0, "decode step scale", integer=False),
            prefill_step_scale=number("cpre", MIN_STEP_SCALE, MAX_STEP_SCALE, 1.0, "prefill step scale", integer=False),
            ttft_offset_s=number("cttft", 0, MAX_TTFT_OFFSET_S, 0.0, "TTFT offset in seconds", integer=False),
            source=one(params, "csrc") or "a URL",
            runs=number("cruns", 1, 10_000, 1, "calibration runs"),
            fit_residual=number("cres", 0, 100, 0.0, "calibration residual", integer=False),
        )
    except ValidationError as e:
        warnings.append(f"URL calibration is invalid ({describe_validation_error(e)}); left uncalibrated")
        return None


def scenario_from_params(
    params: Mapping[str, Any],
    catalog: Catalog,
    extra_model_ids: tuple[str, ...] = (),
    extra_models: Mapping[str, ModelSpec] | None = None,
) -> tuple[Scenario, list[str]]:
    """Read a scenario from URL query parameters; returns it and one warning per bad field, plus one naming
    the unknown keys and one naming the keys given more than once (a list value: the last one is used).
    ``extra_model_ids``: imported models (decoded from the URL's ``cfg``) that ``model`` may name;
    ``extra_models``: their specs where the caller has them (an MTP draft is then checked against them too)."""
    d = DEFAULT_SCENARIO
    warnings: list[str] = key_warnings(params)

    def choice(key: str, allowed: list[str] | tuple[str, ...], default: Any, what: str) -> Any:
        v = one(params, key)
        if v is None or v == "":
            return default
        if v in allowed:
            return v
        if len(allowed) <= 20:
            hint = "Allowed: " + ", ".join(allowed)
        else:
            close = difflib.get_close_matches(v.lower(), list(allowed), n=4, cutoff=0.5)
            hint = (f"Closest: {', '.join(close)}. " if close else "") + "The Catalog page lists them all"
        warnings.append(f"URL parameter {key}={show(v)} is not a known {what}; using {default!r}. {hint}")
        return default

    def number(key: str, lo: float, hi: float, default: Any, what: str, integer: bool = True) -> Any:
        v = one(params, key)
        if v is None or v == "":
            return default
        try:
            n = int(v) if integer else float(v)
        except ValueError:
            kind = "whole number" if integer else "number"
            warnings.append(f"URL parameter {key}={show(v)} is not a {kind} ({what}); using {default}")
            return default
        if not (math.isfinite(n) and lo <= n <= hi):
            warnings.append(f"URL parameter {key}={v} is outside {lo:,g}-{hi:,g} ({what}); using {default}")
            return default
        return n

    model_id = choice("model", sorted(catalog.models) + list(extra_model_ids), d.model_id, "model id")
    gpu_id = choice("gpu", sorted(catalog.gpus), d.gpu_id, "GPU id")
    nodes = number("nodes", 1, 4096, d.num_nodes, "nodes")
    gpn = number("gpn", 1, 1024, d.gpus_per_node, "GPUs per node")
    weights = choice("w", DTYPES, d.precision.weights, "weight dtype")
    experts = choice("ex", DTYPES, weights, "expert dtype") if one(params, "ex") else None
    kv = choice("kv", KV_DTYPES, d.precision.kv_cache, "KV-cache dtype")
    a2a = choice("a2a", ("bf16", "fp8", "nvfp4"), d.precision.dispatch, "dispatch dtype")
    lstate = choice("lstate", (*LINEAR_STATE_DTYPES, "checkpoint"), "checkpoint", "linear-attention state dtype")
    stack = choice("stack", tuple(SERVING_STACKS), d.serving_stack, "serving stack")
    batch = number("batch", 1, 1_000_000, d.workload.batch, "concurrent sequences")
    isl = number("isl", 1, 10_000_000, d.workload.input_len, "input tokens")
    osl = number("osl", 1, 10_000_000, d.workload.output_len, "output tokens")
    reuse_default = 100 * d.workload.prefix_reuse
    reuse = number(
        "reuse",
        0,
        99,
        int(reuse_default) if reuse_default.is_integer() else reuse_default,
        "% of each prompt from the prefix cache",
        False,
    )
    if nodes * gpn > 65_536:
        warnings.append(f"URL asks for {nodes * gpn:,} GPUs (more than 65,536); using the default cluster")
        nodes, gpn = d.num_nodes, d.gpus_per_node

    layout = None
    if any(one(params, k) for k in _LAYOUT_KEYS):
        sizes = {k: number(k, 1, 65_536, 1, f"layout {k}") for k in _LAYOUT_KEYS}
        try:
            layout = layout_from_sizes(nodes * gpn, sizes["tp"], sizes["etp"], sizes["pp"], sizes["dp"])
        except (ValueError, ValidationError) as e:
            msg = describe_validation_error(e) if isinstance(e, ValidationError) else str(e)
            warnings.append(
                f"URL layout tp/etp/pp/dp is invalid for {nodes * gpn} GPUs ({msg}); using the default layout"
            )
        dcp = number("dcp", 1, 1024, 1, "decode context parallel size")
        if layout is not None and dcp > 1:
            if layout.attention_tp % dcp:
                warnings.append(f"URL parameter dcp={dcp} does not divide attention TP {layout.attention_tp}; using 1")
            else:
                layout = layout.model_copy(update={"dcp": dcp})

    method = choice("sd", SPEC_METHODS, "none", "speculative method")
    draft_id = choice("draft", sorted(catalog.models), None, "draft model id") if one(params, "draft") else None
    spec = SpecDecodeConfig()
    target = catalog.models.get(model_id) or (extra_models or {}).get(model_id)
    if method == "none":
        ignored = [k for k in _SPEC_KEYS if one(params, k) not in (None, "")]
        if ignored:
            warnings.append(
                f"URL {', '.join(ignored)} ignored: no speculative method is chosen (add sd=, one of mtp, eagle3, ngram, "
                "draft_model, ...)"
            )
    elif method == "mtp" and target is not None and not target.num_mtp_layers:
        warnings.append(
            f"URL sd=mtp: {target.name} has no MTP module (num_nextn_predict_layers = 0); speculative decoding "
            "left off (choose eagle3, ngram or draft_model)"
        )
    else:
        if method == "draft_model" and not draft_id:
            warnings.append("URL sd=draft_model needs draft=<model id>; speculative decoding left off")
        else:
            spec = SpecDecodeConfig(
                method=method,
                draft_model_id=draft_id if method == "draft_model" else None,
                draft_weights=choice("dw", DTYPES, None, "draft weight dtype") if one(params, "dw") else None,
                num_speculative_tokens=number(
                    "gamma", 1, 64, default_gamma(method, catalog.draft_methods), "speculative tokens"
                ),
                acceptance_rate=number("alpha", 0, 1, None, "acceptance rate", integer=False),
                draft_cost=number("c", 0, 10, None, "draft cost", integer=False),
            )

    dm = MemoryAssumptions()
    memory = MemoryAssumptions(
        gpu_memory_utilization=number(
            "util", 0.05, 1.0, dm.gpu_memory_utilization, "gpu_memory_utilization", integer=False
        ),
        runtime_reserve_gb=number("reserve", 0, 1000, dm.runtime_reserve_gb, "runtime reserve GB", integer=False),
        max_num_batched_tokens=number("mbt", 1, 10_000_000, dm.max_num_batched_tokens, "max batched tokens"),
        activation_factor=number("act", 0, 1000, dm.activation_factor, "activation factor", integer=False),
        redundant_experts=number("red", 0, 100_000, dm.redundant_experts, "redundant experts"),
    )
    box = None
    if any(one(params, k) for k in _BOX_KEYS):
        db = SingleBox()
        host_id = choice("host", sorted(catalog.hosts), db.host_id, "host id")
        unified = catalog.hosts[host_id].kind == "unified" if host_id in catalog.hosts else False
        bgpu = choice("bgpu", ["none", *sorted(catalog.gpus)], "none" if unified else db.gpu_id, "single-box GPU id")
        if unified and bgpu != "none":
            warnings.append(f"URL bgpu={show(bgpu)} ignored: {host_id} is a unified-memory machine")
            bgpu = "none"
        if not unified and bgpu == "none":
            warnings.append(f"URL bgpu=none needs a unified-memory host; using {db.gpu_id!r}")
            bgpu = db.gpu_id
        ncm = number("ncm", 0, 10_000, None, "--n-cpu-moe") if one(params, "ncm") else None
        box = SingleBox(
            host_id=host_id,
            gpu_id=None if bgpu == "none" else bgpu,
            n_gpus=number("bn", 1, 4, db.n_gpus, "single-box GPUs"),
            n_cpu_moe=ncm,
            quant=choice("q", DTYPES, db.quant, "quantisation"),
            context_len=number("bctx", 1, 10_000_000, db.context_len, "single-box context tokens"),
        )
    try:
        scenario = Scenario(
            box=box,
            model_id=model_id,
            gpu_id=gpu_id,
            num_nodes=nodes,
            gpus_per_node=gpn,
            precision=Precision(
                weights=weights,
                routed_experts=experts if experts and experts != weights else None,
                kv_cache=kv,
                dispatch=a2a,
                linear_state=None if lstate == "checkpoint" else lstate,
            ),
            workload=Workload(batch=batch, input_len=isl, output_len=osl, prefix_reuse=round(reuse / 100, 12)),
            layout=layout,
            spec=spec,
            memory=memory,
            serving_stack=stack,
            calibration=_calibration(params, number, warnings),
        )
    except ValidationError as e:  # defensive: every field was range-checked above
        warnings.append(f"URL scenario is invalid ({describe_validation_error(e)}); using the default")
        scenario = d
    return scenario, warnings
