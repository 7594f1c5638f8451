"""Every current-generation model on every page that reads the model (issues 20, 22), through AppTest, on the
browser tour's cluster (2 x 8 B200, FP8 weights). The browser draws the pages of one model per architecture
trait (tests/current_generation.py TRAITS); this runs the page code of the others: no exception, the scenario keeps
the model, the page names it, and each chart page draws at least the charts it draws on the default scenario."""

import pytest

from core.catalog import load_catalog
from tests.current_generation import CLUSTER, CURRENT_GENERATION, MODEL_FREE_PAGES, TRAITS
from tests.page._util import run_page
from ui.scenario import PAGES

MODEL_PAGES = [s for s, _ in PAGES if s not in MODEL_FREE_PAGES]
# the charts each page draws at least, as the browser tests count them on the default scenario (Speculative draws a
# sixth, the measured acceptance curves, where the catalog has them for the model; Single box draws its three beside
# the error box that says the box cannot hold the model)
MIN_CHARTS = {
    "pages/1_Fit.py": 3,
    "pages/2_Intensity.py": 4,
    "pages/3_Balance.py": 3,
    "pages/4_Speculative.py": 5,
    "pages/5_Layouts.py": 6,
    "pages/7_Disaggregation_and_cost.py": 2,
    "pages/11_Single_box.py": 3,
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
        assert len(at.get("vega_lite_chart")) >= MIN_CHARTS.get(script, 0), script
