"""The shared sidebar: one scenario for every page, kept across page switches and in the URL.

Every page (and ``app.py``) starts with ``page()`` (``sidebar()`` and the deployment, resolved once). The pattern
(checked in AppTest and headless Chromium, see the project's STREAMLIT notes):

1. once per session, seed ``st.session_state.scenario`` from ``st.query_params`` (each field
   validated; a bad one falls back to its default with a warning);
2. draw widgets with their own keys (``_w_*``) whose ``index=``/``value=`` come from the scenario
   (the "shadow"), and copy a changed widget back into the scenario in an ``on_change`` callback;
3. write the scenario back into the URL on every run, so a copied URL reopens it on any page.

Every widget's limits and choices come from the model that validates them (``core.deployment.specs.bounds``, the dtype
lists, the draft-method catalog), so a widget, the URL help and the validation agree. The session state the
sidebar edits (catalog, imported models, ``update_scenario``) is in :mod:`ui.state`, re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st
from pydantic import ValidationError

from core._util.validated import bounds, describe_validation_error
from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import check_layout
from core.deployment.specs import Precision, Scenario, SpecDecodeConfig, Workload
from core.hardware import ClusterSpec, GPUSpec
from core.hardware.efficiency import SERVING_STACKS, STACK_NAMES
from core.model import ModelSpec
from core.model.dtypes import DISPATCH_DTYPES, KV_DTYPES, LINEAR_STATE_DTYPES
from core.report.catalog_rows import accelerator_caveat, model_caveats
from core.speculative import default_gamma
from ui.controls import scenario_deployment
from ui.format import billions, md_escape
from ui.state import (
    PAGES,
    all_models,
    bound_imports,
    catalog,
    current_model,
    default_draft_id,
    draft_candidates,
    imported_models,
    navigation,
    offered_dtypes,
    offered_methods,
    page_setup,
    register_model,
    reset_widgets,
    scenario_params,
    seed_from_url,
    shown_scenario,
    update_scenario,
)
from ui.workload_presets import preset_control

__all__ = [
    "PAGES",
    "Page",
    "catalog",
    "current_model",
    "default_draft_id",
    "imported_models",
    "page",
    "page_setup",
    "register_model",
    "sidebar",
    "update_scenario",
]

_SAME, _SAME_TARGET = "same as weights", "same as target"
_DTYPE_HELP = (
    "Storage dtype of the weights. int4 = AWQ/GPTQ-style with group scales; nvfp4 / mxfp4 = 4-bit "
    "floats with block scales (Blackwell / MI355X run them natively)."
)


def _int_bounds(model, field: str) -> tuple[int, int]:
    lo, hi = bounds(model, field)
    return int(lo), int(hi)


def _model_label(m: ModelSpec) -> str:
    """The model picker's entry, "DeepSeek-V3 (671B / 37B)": never raises, whatever the counts (a label that raised
    broke every page of the session, issue 37)."""
    try:
        total, active = m.total_params, m.active_params
    except (ArithmeticError, TypeError, ValueError):
        total = active = None
    return f"{m.name} ({billions(total)} / {billions(active)})"


def _method_label(cat: Catalog, method: str) -> str:
    """ "off", or the method's name in the draft-method catalog."""
    return "off" if method == "none" else (cat.draft_methods[method].name if method in cat.draft_methods else method)


def _on_model() -> None:
    s: Scenario = st.session_state.scenario
    new = all_models(catalog())[st.session_state._w_model]
    changes: dict = {"model_id": new.id}
    if s.layout is not None and check_layout(new, s.layout, s.memory.redundant_experts):
        changes["layout"] = None  # the old layout does not suit the new model: back to the default
        st.session_state.scenario_notice = f"The layout was reset to the default: it did not suit {new.name}."
    if s.spec.method == "mtp" and not new.num_mtp_layers:
        changes["spec"] = SpecDecodeConfig()
        st.session_state.scenario_notice = f"{new.name} has no MTP module: speculative decoding was turned off."
    update_scenario(**changes)


def _on_gpu() -> None:
    update_scenario(gpu_id=st.session_state._w_gpu)


def _on_stack() -> None:
    update_scenario(serving_stack=st.session_state._w_stack)


def _on_cluster() -> None:  # a custom layout is tied to the GPU count: a new cluster starts from the default layout
    update_scenario(num_nodes=int(st.session_state._w_nodes), gpus_per_node=int(st.session_state._w_gpn), layout=None)


def _on_precision() -> None:
    s: Scenario = st.session_state.scenario
    w = st.session_state._w_weights
    ex = st.session_state._w_experts
    try:
        p = Precision(
            weights=w,
            routed_experts=None if ex == _SAME or ex == w else ex,
            kv_cache=st.session_state._w_kv,
            dispatch=st.session_state._w_a2a,
            linear_state=_linear_state(st.session_state.get("_w_state")),
        )
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    if p != s.precision:
        update_scenario(precision=p)


_STATE_LABEL, _STATES = "Linear-attention state", ["checkpoint", *LINEAR_STATE_DTYPES]
_STATE_HELP = (
    "dtype of the recurrent state of linear-attention / SSM layers (Gated DeltaNet, KDA, Mamba-2): the checkpoint's "
    "(fp32) or bf16, half the bytes each decode step reads and writes and each sequence holds (vLLM "
    "--mamba-ssm-cache-dtype, SGLang --mamba-ssm-dtype; the launch commands set it)."
)


def _linear_state(choice: str | None) -> str | None:
    """The precision's linear_state from the widget: None for the checkpoint's, or a model without such a state."""
    return choice if choice in _STATES[1:] and current_model().stores_recurrent_state else None


def _on_workload() -> None:
    try:
        wl = Workload(
            batch=int(st.session_state._w_batch),
            input_len=int(st.session_state._w_isl),
            output_len=int(st.session_state._w_osl),
            prefix_reuse=float(st.session_state._w_reuse) / 100,
        )
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    update_scenario(workload=wl)


def _on_spec() -> None:
    method = st.session_state._w_sd
    s: Scenario = st.session_state.scenario
    cat = catalog()
    changed_method = method != s.spec.method
    draft = st.session_state.get("_w_draft") if s.spec.method == "draft_model" else None
    draft = draft or s.spec.draft_model_id or default_draft_id(cat, s.model_id)
    dw = st.session_state.get("_w_dw", _SAME_TARGET)
    gamma = int(st.session_state.get("_w_gamma", s.spec.num_speculative_tokens))
    if changed_method:
        gamma = default_gamma(method, cat.draft_methods)  # a new method starts from its own defaults
    try:
        spec = SpecDecodeConfig(
            method=method,
            draft_model_id=draft if method == "draft_model" else None,
            draft_weights=None if dw == _SAME_TARGET or method != "draft_model" else dw,
            num_speculative_tokens=gamma,
            acceptance_rate=None if changed_method else s.spec.acceptance_rate,
            draft_cost=None if changed_method else s.spec.draft_cost,
        )
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    update_scenario(spec=spec)


def sidebar() -> Scenario:
    """Draw the shared scenario sidebar and return the current scenario."""
    cat = catalog()
    reset_widgets()  # after this rerun's on_change callbacks, before any widget is drawn
    if "scenario" not in st.session_state:
        seed_from_url(cat)
    bound_imports()  # whichever way a model came in (a URL, the Catalog, a saved scenario)
    s, notes = shown_scenario(cat, st.session_state.scenario)
    if notes:  # a value no picker offers: the pages compute what the sidebar shows, and say so
        st.session_state.scenario = s
        st.session_state.scenario_warnings = [*st.session_state.get("scenario_warnings", []), *notes]

    models = all_models(cat)
    model_ids = sorted(
        models, key=lambda i: (not i.startswith("custom-"), not models[i].is_moe, models[i].name.lower())
    )
    gpu_ids = sorted(cat.gpus, key=lambda i: (cat.gpus[i].vendor, -(cat.gpus[i].release_year or 0), i))

    with st.sidebar:
        navigation(scenario_params(s))
        st.markdown("### Scenario")
        st.selectbox(
            "Model",
            model_ids,
            index=model_ids.index(s.model_id),
            key="_w_model",
            on_change=_on_model,
            format_func=lambda i: _model_label(models[i]),
            help="Catalog models (MoE first). Each entry is its published config.json.",
        )
        for caveat in model_caveats(current_model(s)):
            st.caption(f"Not modelled: {caveat}")
        st.selectbox(
            "GPU",
            gpu_ids,
            index=gpu_ids.index(s.gpu_id),
            key="_w_gpu",
            on_change=_on_gpu,
            format_func=lambda i: f"{cat.gpus[i].name} · {cat.gpus[i].hbm_capacity_gb:g} GB",
        )
        c1, c2 = st.columns(2)
        c1.number_input(
            "Nodes", *_int_bounds(Scenario, "num_nodes"), s.num_nodes, step=1, key="_w_nodes", on_change=_on_cluster
        )
        c2.number_input(
            "GPUs / node",
            *_int_bounds(Scenario, "gpus_per_node"),
            s.gpus_per_node,
            step=1,
            key="_w_gpn",
            on_change=_on_cluster,
            help="GPUs per node. An NVL72 rack is 18 nodes x 4 GPUs in one NVLink domain.",
        )
        cluster = ClusterSpec(gpu=cat.gpus[s.gpu_id], num_nodes=s.num_nodes, gpus_per_node=s.gpus_per_node)
        st.caption(
            f"{s.total_gpus:,} GPUs · {cluster.memory_gb:,.0f} GB {cluster.gpu.memory_type} in total as the runtime "
            f"sees it · scale-up domain {cluster.scale_up_domain_gpus} GPUs ({cluster.gpu.scale_up_link})"
        )
        if caveat := accelerator_caveat(cluster.gpu):
            st.warning(caveat, icon="⚠️")
        stacks = list(SERVING_STACKS)
        st.selectbox(
            "Serving stack", stacks, stacks.index(s.serving_stack), key="_w_stack", on_change=_on_stack,
            format_func=STACK_NAMES.get, help="Whose kernels time the steps: " + "; ".join(SERVING_STACKS.values()),
        )  # fmt: skip
        _precision_controls(s)
        _workload_controls(s)
        _speculative_controls(cat, s)

        # URL values, imported names and error texts are user text: shown as text, never as Markdown
        for w in st.session_state.get("scenario_warnings", []):
            st.warning(md_escape(w), icon="⚠️")
        notice = st.session_state.pop("scenario_notice", None)
        if notice:
            st.info(md_escape(notice))
        err = st.session_state.pop("scenario_error", None)
        if err:
            st.error(f"Not applied: {md_escape(err)}")

    st.query_params.from_dict(scenario_params(st.session_state.scenario))
    return st.session_state.scenario


def _precision_controls(s: Scenario) -> None:
    with st.expander("Precision", expanded=True):
        dtypes = offered_dtypes(s.precision.weights)
        st.selectbox(
            "Weights",
            dtypes,
            index=dtypes.index(s.precision.weights),
            key="_w_weights",
            on_change=_on_precision,
            help=_DTYPE_HELP,
        )
        ex_opts = [_SAME, *offered_dtypes(s.precision.routed_experts)]
        st.selectbox(
            "Routed experts",
            ex_opts,
            index=ex_opts.index(s.precision.routed_experts or _SAME),
            key="_w_experts",
            on_change=_on_precision,
            help="A different dtype for the routed experts only, e.g. int4 experts with bf16 elsewhere.",
        )
        a2a_help = "dtype of the tokens sent to the experts (DeepEP dispatches FP8, combines BF16)."
        lstate = [(_STATE_LABEL, _STATES, s.precision.linear_state or _STATES[0], "_w_state", _STATE_HELP)]
        for label, opts, v, key, tip in (
            ("KV cache", list(KV_DTYPES), s.precision.kv_cache, "_w_kv", None),
            ("All-to-all dispatch", list(DISPATCH_DTYPES), s.precision.dispatch, "_w_a2a", a2a_help),
            *(lstate if current_model(s).stores_recurrent_state else []),  # only where a layer keeps such a state
        ):
            st.selectbox(label, opts, index=opts.index(v), key=key, on_change=_on_precision, help=tip)


def _workload_controls(s: Scenario) -> None:
    with st.expander("Workload", expanded=True):
        preset_control(s)
        for label, field, value, step, key in (
            ("Concurrent sequences", "batch", s.workload.batch, 1, "_w_batch"),
            ("Input tokens / sequence", "input_len", s.workload.input_len, 256, "_w_isl"),
            ("Output tokens / sequence", "output_len", s.workload.output_len, 128, "_w_osl"),
        ):
            st.number_input(label, *_int_bounds(Workload, field), value, step=step, key=key, on_change=_on_workload)
        st.number_input(
            "Prefix-cache hits (% of each prompt)",
            0.0,
            99.0,
            100 * s.workload.prefix_reuse,
            5.0,
            key="_w_reuse",
            on_change=_on_workload,
            help="Prompt tokens a warm prefix cache serves (agentic ~90%, chat ~40%): read, not recomputed; the cache "
            "still holds the whole prompt. 0 = every prompt prefilled whole.",
        )


def _speculative_controls(cat: Catalog, s: Scenario) -> None:
    target = all_models(cat)[s.model_id]
    with st.expander("Speculative decoding", expanded=s.spec.enabled):
        methods = offered_methods(cat, target)  # shown_scenario made the scenario's method one of them
        st.selectbox(
            "Draft",
            methods,
            index=methods.index(s.spec.method),
            key="_w_sd",
            on_change=_on_spec,
            format_func=lambda m: _method_label(cat, m),
            help="The draft's weights and KV cache count in the Fit page's memory.",
        )
        if not s.spec.enabled:
            return
        if s.spec.method == "draft_model":
            ids = draft_candidates(cat, target)
            current_draft = s.spec.draft_model_id
            st.selectbox(
                "Draft model",
                ids,
                index=ids.index(current_draft),
                key="_w_draft",
                on_change=_on_spec,
                format_func=lambda i: f"{cat.models[i].name} ({billions(cat.models[i].total_params, 1)})",
            )
            opts = [_SAME_TARGET, *offered_dtypes(s.spec.draft_weights)]
            st.selectbox(
                "Draft weights",
                opts,
                index=opts.index(s.spec.draft_weights or _SAME_TARGET),
                key="_w_dw",
                on_change=_on_spec,
            )
            draft = cat.models[current_draft]
            if draft.tokenizer_family != target.tokenizer_family:
                st.warning(
                    f"{md_escape(draft.name)} ({draft.tokenizer_family or 'unknown'} tokenizer) does not share "
                    f"{md_escape(target.name)}'s tokenizer ({target.tokenizer_family or 'unknown'}): its tokens would be "
                    "verified against the wrong vocabulary and corrupt the output."
                )
        st.number_input(
            "Speculative tokens per step (γ)",
            *_int_bounds(SpecDecodeConfig, "num_speculative_tokens"),
            s.spec.num_speculative_tokens,
            step=1,
            key="_w_gamma",
            on_change=_on_spec,
        )


class Page(NamedTuple):
    """Every page's start: the scenario, the catalog, its model and GPU, and the deployment they resolve to (None
    where the model cannot run the layout: :func:`ui.layout_check.runnable_layout` says why)."""

    scenario: Scenario
    cat: Catalog
    model: ModelSpec
    gpu: GPUSpec
    deployment: Deployment | None


def page(title: str, icon: str) -> Page:
    """Every page's prologue: its config, the shared sidebar, and what the scenario names, resolved once."""
    page_setup(title, icon)
    scenario = sidebar()
    cat, model = catalog(), current_model(scenario)
    d = scenario_deployment(scenario, model)  # its model carries the precision's recurrent-state dtype
    return Page(scenario, cat, d.model if d is not None else model, cat.gpu(scenario.gpu_id), d)
