"""Every current-generation model on every page that reads the model (issues 20, 22), through AppTest, on the
browser tour's cluster (2 x 8 B200, FP8 weights). The browser draws the pages of one model per architecture
trait (tests/current_generation.py TRAITS); this runs the page code of the others: no exception, the scenario keeps
the model, the page names it, and each page draws its charts or says in an error box why it cannot."""

import pytest

from core.catalog import load_catalog
from tests.current_generation import CLUSTER, CURRENT_GENERATION, MODEL_FREE_PAGES, TRAITS
from tests.page._util import run_page
from ui.scenario import PAGES

MODEL_PAGES = [s for s, _ in PAGES if s not in MODEL_FREE_PAGES]
# the pages whose content is charts; Home and Report are text, tables and metrics
CHART_PAGES = {
    "pages/1_Fit.py",
    "pages/2_Intensity.py",
    "pages/3_Balance.py",
    "pages/4_Speculative.py",
    "pages/5_Layouts.py",
    "pages/7_Disaggregation_and_cost.py",
    "pages/11_Single_box.py",
}


# the TRAITS models run the same page code in the browser tour, which also draws their charts
@pytest.mark.parametrize("model_id", [m for m in CURRENT_GENERATION if m not in TRAITS])
def test_every_model_page_runs_the_model(model_id):
    name = load_catalog().models[model_id].name
    for script in MODEL_PAGES:
        at = run_page(script, timeout=120, model=model_id, **CLUSTER)  # run_page: no exception
        assert at.session_state.scenario.model_id == model_id, script
        shown = [e.value for e in (*at.title, *at.header, *at.subheader, *at.markdown, *at.caption, *at.info)]
        assert any(name in t for t in shown), (script, name)
        if script in CHART_PAGES:
            assert at.get("vega_lite_chart") or at.error, (script, "no chart and no error saying why")
