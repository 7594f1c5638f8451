"""Report: everything for the current scenario as one HTML or Markdown document."""

import streamlit as st

from core._util.validated import describe_validation_error
from core.report import build_report
from ui.format import md_escape
from ui.layout_check import runnable_layout
from ui.report import render_html, render_markdown
from ui.scenario import catalog, page

scenario, cat, model, _, d = page("Report", "📄")

st.title("Report")
st.markdown(
    f"The current scenario, **{md_escape(model.name)}** on **{scenario.total_gpus} × {cat.gpu(scenario.gpu_id).name}**, as one "
    "document: the inputs, every page's key figures with units, the charts as images, the assumptions and the sources. "
    'The same report comes from the command line: `moe-planner --url "…" --format html --out report.html`.'
)


@st.cache_data(show_spinner="Building the report…", max_entries=16)
def _report(scen, m):
    return build_report(scen, catalog(), m)


# The downloads render every chart to PNG on the server (vl-convert, 2-3 s): only when a button is clicked,
# not on every page load (Streamlit runs a callable `data` on the click)
@st.cache_data(show_spinner=False, max_entries=16)
def _html(scen, m) -> str:
    return render_html(_report(scen, m))


@st.cache_data(show_spinner=False, max_entries=16)
def _markdown(scen, m) -> str:
    return render_markdown(_report(scen, m))


if runnable_layout(scenario, model) is None:  # an error naming the layout's problem and what to change
    st.stop()
try:
    preview = render_markdown(_report(scenario, model), images=False)
except ValueError as err:
    st.error(f"The report could not be built for this scenario: {md_escape(describe_validation_error(err))}")
    st.stop()
stem = f"moe-plan-{model.id}-{scenario.gpu_id}-{scenario.total_gpus}gpu"
c = st.columns(2)
c[0].download_button(
    "Download HTML report",
    lambda: _html(scenario, model),
    file_name=f"{stem}.html",
    mime="text/html",
    type="primary",
    key="download_html",
)
c[1].download_button(
    "Download Markdown report",
    lambda: _markdown(scenario, model),
    file_name=f"{stem}.md",
    mime="text/markdown",
    key="download_md",
)
st.divider()
st.markdown(preview)
