"""The session's state behind every page: the catalog, the models imported in this session, the scenario and
how a change to it is applied, the page list and the shared page setup.

A page starts with ``scenario = sidebar()`` (:mod:`ui.scenario`, which draws the widgets); the functions here
are what the sidebar, the page-level controls and the pages share.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from pydantic import BaseModel, ValidationError
from streamlit.errors import StreamlitPageNotFoundError

from core._util.validated import describe_validation_error
from core.catalog import Catalog, load_catalog
from core.deployment.specs import SPEC_METHOD_KINDS, Scenario, SpecDecodeConfig
from core.hf import decode_config, encode_config, model_from_config_text
from core.model import ModelSpec
from core.model.dtypes import DTYPES
from core.scenario import scenario_from_params, scenario_to_params
from ui.format import md_escape

__all__ = [
    "MAX_IMPORTED_MODELS",
    "PAGES",
    "all_models",
    "bound_imports",
    "catalog",
    "current_model",
    "default_draft_id",
    "draft_candidates",
    "imported_models",
    "navigation",
    "offered_dtypes",
    "offered_methods",
    "page_setup",
    "register_model",
    "reset_widgets",
    "scenario_params",
    "seed_from_url",
    "shown_scenario",
    "update_scenario",
]

ROOT = Path(__file__).resolve().parent.parent

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


def catalog() -> Catalog:
    """The validated catalog, loaded once per server process (read-only: never mutate it)."""
    return load_catalog()


def imported_models() -> dict:
    """This session's imported models: id -> (ModelSpec, normalised config.json text)."""
    return st.session_state.setdefault("custom_models", {})


# imported models a session keeps (each a config.json of up to 1 MB and its ModelSpec), the oldest dropped first
MAX_IMPORTED_MODELS = 20


def register_model(text: str, name: str | None = None):
    """Parse an uploaded / pasted config.json and keep it in the session; returns the ModelSpec.
    Raises ValueError with a message naming the problem."""
    spec, normalised = model_from_config_text(text, name=name)
    imported_models()[spec.id] = (spec, normalised)
    bound_imports(keep=spec.id)
    return spec


def bound_imports(keep: str | None = None) -> list[str]:
    """Keep at most :data:`MAX_IMPORTED_MODELS` imported models in the session: the oldest go first, never
    ``keep`` nor the current scenario's model. Says so in a toast; returns the names dropped."""
    models = imported_models()
    scenario = st.session_state.get("scenario")
    protected = {keep, scenario.model_id if scenario is not None else None}
    dropped = []
    for mid in [m for m in models if m not in protected][: max(0, len(models) - MAX_IMPORTED_MODELS)]:
        dropped.append(models.pop(mid)[0].name)
    if dropped:
        st.toast(
            md_escape(
                f"At most {MAX_IMPORTED_MODELS} imported models are kept per session: dropped the oldest, "
                f"{', '.join(dropped)}. Import it again to use it."
            )
        )
    return dropped


def current_model(scenario: Scenario | None = None):
    """The scenario's model: a catalog entry or a model imported in this session."""
    s = scenario or st.session_state.scenario
    custom = imported_models().get(s.model_id)
    return custom[0] if custom else catalog().model(s.model_id)


def all_models(cat: Catalog) -> dict:
    """Every model a scenario may name: this session's imported ones and the catalog's."""
    return {**{k: v[0] for k, v in imported_models().items()}, **dict(cat.models)}


def scenario_params(s: Scenario) -> dict[str, str]:
    """The URL query of a scenario, with an imported model's config when it fits in a URL."""
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
    # changed fields whose widgets still hold their old state): its key is deleted by reset_widgets() when the
    # script starts, not here, because another on_change callback of the same rerun (two widgets changed in one
    # rerun message) still reads its own key and its siblings' after this one has run
    st.session_state[_RESET_WIDGETS] = True


_RESET_WIDGETS = "_reset_widgets"


def reset_widgets() -> None:
    """Delete every ``_w_*`` widget key once the rerun's callbacks have applied their changes (the sidebar calls
    this first, before any widget is drawn), so each widget takes its value from the scenario again."""
    if st.session_state.pop(_RESET_WIDGETS, False):
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("_w_")]:
            del st.session_state[key]


def draft_candidates(cat: Catalog, target: ModelSpec) -> list[str]:
    """Catalog models that can draft for ``target``: the same tokenizer first (a different one corrupts the
    output), then the smallest."""
    return sorted(
        (i for i in cat.models if i != target.id),
        key=lambda i: (
            cat.models[i].tokenizer_family != target.tokenizer_family or not target.tokenizer_family,
            cat.models[i].total_params,
        ),
    )


def default_draft_id(cat: Catalog, target_id: str) -> str:
    """The smallest catalog model sharing the target's tokenizer (else the smallest model)."""
    return draft_candidates(cat, all_models(cat)[target_id])[0]


def seed_from_url(cat: Catalog) -> None:
    """The session's first scenario, from the URL: every value of every key (``get_all``), so that a repeated
    or unknown key is named in a warning rather than dropped silently."""
    query = {k: st.query_params.get_all(k) for k in st.query_params}
    url_warnings = []
    cfg = (query.get("cfg") or [""])[-1]
    if cfg:
        try:
            register_model(decode_config(cfg))
        except ValueError as e:
            url_warnings.append(f"URL parameter cfg: {e}; using the catalog models only")
    imported = imported_models()
    scenario, warnings = scenario_from_params(query, cat, tuple(imported), {k: v[0] for k, v in imported.items()})
    st.session_state.scenario = scenario
    st.session_state.scenario_warnings = url_warnings + warnings


def offered_dtypes(current: str | None = None) -> list[str]:
    """The dtypes a sidebar picker lists: all but fp32 (nobody serves fp32 weights), and ``current`` too when it
    is a valid one the list leaves out, so that a picker always shows the value the pages compute with."""
    opts = [d for d in DTYPES if d != "fp32"]
    return [*opts, current] if current in DTYPES and current not in opts else opts


def offered_methods(cat: Catalog, target: ModelSpec) -> list[str]:
    """The speculative methods the sidebar offers for ``target``: MTP only with an MTP module, and only the
    methods the draft-method catalog describes."""
    return [
        m
        for m in SPEC_METHOD_KINDS
        if (m != "mtp" or target.num_mtp_layers) and (m == "none" or m in cat.draft_methods or not cat.draft_methods)
    ]


def shown_scenario(cat: Catalog, s: Scenario) -> tuple[Scenario, list[str]]:
    """``s`` with each value the sidebar (or the Single box page's ``--n-cpu-moe`` slider, 0 to the model's
    layers) cannot offer replaced by one it shows, and a sentence per replacement: the pages compute what the
    controls show (a URL, a saved scenario or a model change may bring either)."""
    target = all_models(cat)[s.model_id]
    spec, notes = s.spec, []
    if spec.method not in offered_methods(cat, target):
        why = f"{target.name} has no MTP module" if spec.method == "mtp" else f"{spec.method} is not in the catalog"
        notes.append(f"{why}: speculative decoding is off")
        spec = SpecDecodeConfig()
    elif spec.method == "draft_model" and spec.draft_model_id not in draft_candidates(cat, target):
        new = default_draft_id(cat, target.id)
        what = "cannot be the target itself" if spec.draft_model_id == target.id else "is not in the catalog"
        name = target.name if spec.draft_model_id == target.id else spec.draft_model_id
        notes.append(f"the draft model {what} ({name}); using {cat.models[new].name}")
        spec = SpecDecodeConfig(**{**spec.model_dump(), "draft_model_id": new})
    box = s.box
    if box is not None and box.n_cpu_moe is not None and box.n_cpu_moe > target.num_layers:
        # the URL key allows 0-10,000 (any model); the Single box slider offers 0 to this model's layers
        layers = target.num_layers
        notes.append(
            f"--n-cpu-moe (URL key ncm={box.n_cpu_moe:,}) is more than {target.name}'s {layers:,} layers; using "
            f"{layers:,} (every layer's routed experts in host RAM). Allowed for this model: 0-{layers:,}"
        )
        box = box.model_copy(update={"n_cpu_moe": layers})
    return (s.model_copy(update={"spec": spec, "box": box}) if notes else s), notes


def navigation(query: dict[str, str]) -> None:
    """The sidebar's links to every page, each carrying the scenario's URL keys."""
    st.markdown("### MoE Deployment Planner")
    for path, label in PAGES:
        if (ROOT / path).is_file():
            try:
                st.page_link(path, label=label, query_params=query)
            except StreamlitPageNotFoundError:
                # a page run on its own (AppTest.from_file("pages/...")) has no multipage app around it
                break
    st.divider()
