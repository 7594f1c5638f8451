"""The shared sidebar: one scenario for every page, kept across page switches and in the URL.

Every page (and ``app.py``) starts with ``scenario = sidebar()``. The pattern (checked in AppTest and
headless Chromium, see the project's STREAMLIT notes):

1. once per session, seed ``st.session_state.scenario`` from ``st.query_params`` (each field
   validated; a bad one falls back to its default with a warning);
2. draw widgets with their own keys (``_w_*``) whose ``index=``/``value=`` come from the scenario
   (the "shadow"), and copy a changed widget back into the scenario in an ``on_change`` callback;
3. write the scenario back into the URL on every run, so a copied URL reopens it on any page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from pydantic import BaseModel, ValidationError
from streamlit.errors import StreamlitPageNotFoundError

from core.catalog import Catalog, load_catalog
from core.hf_config import decode_config, encode_config, model_from_config_text
from core.memory import check_layout
from core.scenario import scenario_from_params, scenario_to_params
from core.specs import (
    DTYPES,
    KV_DTYPES,
    Precision,
    Scenario,
    SpecDecodeConfig,
    Workload,
    describe_validation_error,
)
from core.summary import model_caveats

__all__ = [
    "PAGES",
    "catalog",
    "current_model",
    "default_draft_id",
    "imported_models",
    "page_setup",
    "register_model",
    "sidebar",
    "update_scenario",
]

_ROOT = Path(__file__).resolve().parent.parent

# (script relative to app.py, label in the sidebar). Our own navigation replaces Streamlit's default
# one (client.showSidebarNavigation = false) so the home page reads "Home", not "app", and each link
# carries the scenario in its query string (a middle-click opens the same scenario in a new tab).
PAGES: tuple[tuple[str, str], ...] = (
    ("app.py", "Home"),
    ("pages/1_Fit.py", "Fit"),
    ("pages/2_Intensity.py", "Intensity"),
    ("pages/3_Balance.py", "Balance"),
    ("pages/4_Speculative.py", "Speculative"),
    ("pages/5_Layouts.py", "Layouts"),
    ("pages/6_Validation.py", "Validation"),
    ("pages/7_Disaggregation_and_cost.py", "Disaggregation & cost"),
    ("pages/11_Single_box.py", "Single box"),
    ("pages/8_Catalog.py", "Catalog"),
    ("pages/9_Compare.py", "Compare & saved"),
    ("pages/10_Report.py", "Report"),
)

_SAME = "same as weights"
_SAME_TARGET = "same as target"
_SPEC_LABELS = {
    "none": "off",
    "draft_model": "separate draft model",
    "mtp": "MTP head (built in)",
    "eagle3": "EAGLE-3 head",
    "eagle": "EAGLE-1/2 head",
    "p_eagle": "P-EAGLE head",
    "medusa": "Medusa heads",
    "ngram": "n-gram / prompt lookup",
    "lookahead": "lookahead decoding",
    "suffix": "suffix decoding",
}
_SPEC_LABELS_INV = {v: k for k, v in _SPEC_LABELS.items()}

_DTYPE_HELP = (
    "Storage dtype of the weights. int4 = AWQ/GPTQ-style with group scales; nvfp4 / mxfp4 = 4-bit "
    "floats with block scales (Blackwell / MI355X run them natively)."
)


@st.cache_resource(show_spinner=False)
def catalog() -> Catalog:
    """The validated catalog, loaded once per server process (read-only: never mutate it)."""
    return load_catalog()


def imported_models() -> dict:
    """This session's imported models: id -> (ModelSpec, normalised config.json text)."""
    return st.session_state.setdefault("custom_models", {})


def register_model(text: str, name: str | None = None):
    """Parse an uploaded / pasted config.json and keep it in the session; returns the ModelSpec.
    Raises ValueError with a message naming the problem."""
    spec, normalised = model_from_config_text(text, name=name)
    imported_models()[spec.id] = (spec, normalised)
    return spec


def current_model(scenario: Scenario | None = None):
    """The scenario's model: a catalog entry or a model imported in this session."""
    s = scenario or st.session_state.scenario
    custom = imported_models().get(s.model_id)
    return custom[0] if custom else catalog().model(s.model_id)


def _all_models(cat: Catalog) -> dict:
    return {**{k: v[0] for k, v in imported_models().items()}, **dict(cat.models)}


def _params(s: Scenario) -> dict[str, str]:
    p = scenario_to_params(s)
    custom = imported_models().get(s.model_id)
    if custom is not None:
        try:
            p["cfg"] = encode_config(custom[1])
        except ValueError:
            pass  # too large for a URL: the scenario can still be saved
    return p


# Print / save as PDF (issue 13): the page states its scenario itself, so the sidebar's widgets and the app
# chrome are left out and the content gets the page's full width; landscape, because the charts are laid out
# for a wide screen and scale down to the paper's width (their text stays legible); charts and metrics are not
# split across pages. st.html with only a <style> goes to the event container: no element, no gap.
_PRINT_CSS = """<style>
@page { size: landscape; margin: 10mm; }
@media print {
  [data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
  [data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"],
  [data-testid="stStatusWidget"], [data-testid="stElementToolbar"], [data-testid="stSkipToContent"] {
    display: none !important;
  }
  [data-testid="stMain"], [data-testid="stMainBlockContainer"] {
    max-width: 100% !important; width: 100% !important; margin: 0 !important;
    padding-left: 0 !important; padding-right: 0 !important; padding-top: 0 !important;
  }
  [data-testid="stVegaLiteChart"] svg.marks, [data-testid="stVegaLiteChart"] canvas.marks {
    max-width: 100% !important; height: auto !important;
  }
  [data-testid="stVegaLiteChart"], [data-testid="stMetric"], [data-testid="stAlert"], [data-testid="stImage"],
  [data-testid="stTable"], [data-testid="stDataFrame"] { break-inside: avoid; }
  h1, h2, h3 { break-after: avoid; }
}
</style>"""


def page_setup(title: str, icon: str = "🧮") -> None:
    """Page config shared by every page (an emoji icon: a material icon would be fetched online)."""
    st.set_page_config(page_title=f"{title} · MoE Deployment Planner", page_icon=icon, layout="wide")
    st.html(_PRINT_CSS)


def update_scenario(**changes) -> None:
    """Apply changes to the session's scenario (validated; an invalid change is shown, not applied)."""
    _update(**changes)


def _update(**changes) -> None:
    s: Scenario = st.session_state.scenario
    try:
        # validate the new combination: the dump with the changed fields replaced (a changed sub-model may
        # come as a model or as a dict)
        new = {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in changes.items()}
        st.session_state.scenario = Scenario(**{**s.model_dump(), **new})
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    st.session_state.scenario_warnings = []  # URL warnings are about a scenario the user has now changed
    # every widget that shows a scenario field re-reads it on the next run (a preset or a reset may have
    # changed fields whose widgets still hold their old state)
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("_w_")]:
        del st.session_state[key]


def _on_model() -> None:
    s: Scenario = st.session_state.scenario
    new = _all_models(catalog())[st.session_state._w_model]
    changes: dict = {"model_id": new.id}
    if s.layout is not None and check_layout(new, s.layout, s.memory.redundant_experts):
        changes["layout"] = None  # the old layout does not suit the new model: back to the default
        st.session_state.scenario_notice = f"The layout was reset to the default: it did not suit {new.name}."
    if s.spec.method == "mtp" and not new.num_mtp_layers:
        changes["spec"] = SpecDecodeConfig()
        st.session_state.scenario_notice = f"{new.name} has no MTP module: speculative decoding was turned off."
    _update(**changes)


def _on_gpu() -> None:
    _update(gpu_id=st.session_state._w_gpu)


def _on_cluster() -> None:
    # a custom layout is tied to the GPU count: a new cluster starts from the default layout
    _update(num_nodes=int(st.session_state._w_nodes), gpus_per_node=int(st.session_state._w_gpn), layout=None)


def default_draft_id(cat: Catalog, target_id: str) -> str:
    """The smallest catalog model sharing the target's tokenizer (else the smallest model)."""
    target = _all_models(cat)[target_id]
    ids = [i for i in cat.models if i != target_id]
    return min(
        ids,
        key=lambda i: (
            cat.models[i].tokenizer_family != target.tokenizer_family or not target.tokenizer_family,
            cat.models[i].total_params,
        ),
    )


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
        )
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    if p != s.precision:
        _update(precision=p)


def _on_workload() -> None:
    try:
        wl = Workload(
            batch=int(st.session_state._w_batch),
            input_len=int(st.session_state._w_isl),
            output_len=int(st.session_state._w_osl),
        )
    except ValidationError as e:
        st.session_state.scenario_error = describe_validation_error(e)
        return
    _update(workload=wl)


def _on_spec() -> None:
    method = _SPEC_LABELS_INV[st.session_state._w_sd]
    s: Scenario = st.session_state.scenario
    cat = catalog()
    changed_method = method != s.spec.method
    draft = st.session_state.get("_w_draft") if s.spec.method == "draft_model" else None
    draft = draft or s.spec.draft_model_id or default_draft_id(cat, s.model_id)
    dw = st.session_state.get("_w_dw", _SAME_TARGET)
    gamma = int(st.session_state.get("_w_gamma", s.spec.num_speculative_tokens))
    if changed_method and method in cat.draft_methods:
        gamma = cat.draft_methods[method].default_gamma  # a new method starts from its own defaults
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
    _update(spec=spec)


def sidebar() -> Scenario:
    """Draw the shared scenario sidebar and return the current scenario."""
    cat = catalog()
    if "scenario" not in st.session_state:
        query = st.query_params.to_dict()
        url_warnings = []
        if query.get("cfg"):
            try:
                register_model(decode_config(str(query["cfg"])))
            except ValueError as e:
                url_warnings.append(f"URL parameter cfg: {e}; using the catalog models only")
        scenario, warnings = scenario_from_params(query, cat, tuple(imported_models()))
        warnings = url_warnings + warnings
        st.session_state.scenario = scenario
        st.session_state.scenario_warnings = warnings
    s: Scenario = st.session_state.scenario

    models = _all_models(cat)
    model_ids = sorted(
        models, key=lambda i: (not i.startswith("custom-"), not models[i].is_moe, models[i].name.lower())
    )
    gpu_ids = sorted(cat.gpus, key=lambda i: (cat.gpus[i].vendor, -(cat.gpus[i].release_year or 0), i))

    with st.sidebar:
        _navigation(_params(s))
        st.markdown("### Scenario")
        st.selectbox(
            "Model",
            model_ids,
            index=model_ids.index(s.model_id),
            key="_w_model",
            on_change=_on_model,
            format_func=lambda i: _model_label(cat, i),
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
        c1.number_input("Nodes", 1, 4096, s.num_nodes, step=1, key="_w_nodes", on_change=_on_cluster)
        c2.number_input(
            "GPUs / node",
            1,
            1024,
            s.gpus_per_node,
            step=1,
            key="_w_gpn",
            on_change=_on_cluster,
            help="GPUs per node. An NVL72 rack is 18 nodes x 4 GPUs in one NVLink domain.",
        )
        gpu = cat.gpus[s.gpu_id]
        st.caption(
            f"{s.total_gpus:,} GPUs · {s.total_gpus * gpu.hbm_capacity_gb:,.0f} GB HBM in total · "
            f"scale-up domain {min(s.total_gpus, max(s.gpus_per_node, gpu.scale_up_domain_gpus))} GPUs ({gpu.scale_up_link})"
        )

        with st.expander("Precision", expanded=True):
            dtypes = [d for d in DTYPES if d != "fp32"]
            st.selectbox(
                "Weights",
                dtypes,
                index=dtypes.index(s.precision.weights) if s.precision.weights in dtypes else 0,
                key="_w_weights",
                on_change=_on_precision,
                help=_DTYPE_HELP,
            )
            ex_opts = [_SAME, *dtypes]
            ex_val = s.precision.routed_experts or _SAME
            st.selectbox(
                "Routed experts",
                ex_opts,
                index=ex_opts.index(ex_val) if ex_val in ex_opts else 0,
                key="_w_experts",
                on_change=_on_precision,
                help="A different dtype for the routed experts only, e.g. int4 experts with bf16 elsewhere.",
            )
            st.selectbox(
                "KV cache",
                list(KV_DTYPES),
                index=list(KV_DTYPES).index(s.precision.kv_cache),
                key="_w_kv",
                on_change=_on_precision,
            )
            st.selectbox(
                "All-to-all dispatch",
                ["bf16", "fp8", "nvfp4"],
                index=["bf16", "fp8", "nvfp4"].index(s.precision.dispatch),
                key="_w_a2a",
                on_change=_on_precision,
                help="dtype of the tokens sent to the experts (DeepEP dispatches FP8, combines BF16).",
            )

        with st.expander("Workload", expanded=True):
            st.number_input(
                "Concurrent sequences", 1, 1_000_000, s.workload.batch, step=1, key="_w_batch", on_change=_on_workload
            )
            st.number_input(
                "Input tokens / sequence",
                1,
                10_000_000,
                s.workload.input_len,
                step=256,
                key="_w_isl",
                on_change=_on_workload,
            )
            st.number_input(
                "Output tokens / sequence",
                1,
                10_000_000,
                s.workload.output_len,
                step=128,
                key="_w_osl",
                on_change=_on_workload,
            )

        _speculative_controls(cat, s)

        for w in st.session_state.get("scenario_warnings", []):
            st.warning(w, icon="⚠️")
        notice = st.session_state.pop("scenario_notice", None)
        if notice:
            st.info(notice)
        err = st.session_state.pop("scenario_error", None)
        if err:
            st.error(f"Not applied: {err}")

    st.query_params.from_dict(_params(st.session_state.scenario))
    return st.session_state.scenario


def _speculative_controls(cat: Catalog, s: Scenario) -> None:
    target = _all_models(cat)[s.model_id]
    with st.expander("Speculative decoding", expanded=s.spec.enabled):
        methods = [
            m
            for m in _SPEC_LABELS
            if (m != "mtp" or target.num_mtp_layers)
            and (m == "none" or m in cat.draft_methods or not cat.draft_methods)
        ]
        current = s.spec.method if s.spec.method in methods else "none"
        st.selectbox(
            "Draft",
            [_SPEC_LABELS[m] for m in methods],
            index=methods.index(current),
            key="_w_sd",
            on_change=_on_spec,
            help="The draft's weights and KV cache count in the Fit page's memory.",
        )
        if not s.spec.enabled:
            return
        if s.spec.method == "draft_model":
            # same tokenizer first (a different tokenizer corrupts the output), then smaller models
            ids = sorted(
                (i for i in cat.models if i != target.id),
                key=lambda i: (cat.models[i].tokenizer_family != target.tokenizer_family, cat.models[i].total_params),
            )
            current_draft = s.spec.draft_model_id if s.spec.draft_model_id in ids else default_draft_id(cat, target.id)
            st.selectbox(
                "Draft model",
                ids,
                index=ids.index(current_draft),
                key="_w_draft",
                on_change=_on_spec,
                format_func=lambda i: f"{cat.models[i].name} ({cat.models[i].total_params / 1e9:,.1f}B)",
            )
            opts = [_SAME_TARGET, *[d for d in DTYPES if d != "fp32"]]
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
                    f"{draft.name} ({draft.tokenizer_family or 'unknown'} tokenizer) does not share "
                    f"{target.name}'s tokenizer ({target.tokenizer_family or 'unknown'}): its tokens would be "
                    "verified against the wrong vocabulary and corrupt the output."
                )
        st.number_input(
            "Speculative tokens per step (γ)",
            1,
            64,
            s.spec.num_speculative_tokens,
            step=1,
            key="_w_gamma",
            on_change=_on_spec,
        )


def _navigation(query: dict[str, str]) -> None:
    st.markdown("### MoE Deployment Planner")
    for path, label in PAGES:
        if (_ROOT / path).is_file():
            try:
                st.page_link(path, label=label, query_params=query)
            except StreamlitPageNotFoundError:
                # a page run on its own (AppTest.from_file("pages/...")) has no multipage app around it
                break
    st.divider()


def _model_label(cat: Catalog, model_id: str) -> str:
    m = _all_models(cat)[model_id]
    from core.params import active_params, total_params

    return f"{m.name} ({total_params(m) / 1e9:,.0f}B / {active_params(m) / 1e9:,.0f}B)"
