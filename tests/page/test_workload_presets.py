"""Workload presets (issue 23): the sidebar applies a published profile (catalogs/workloads.yaml) to the
scenario, the URL carries its numbers, and every page runs on the profiles' extremes."""

from pathlib import Path

import pytest

from core.serving.workload_profiles import load_profiles
from tests.page._util import ROOT, qp, run_page

PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]


def test_a_preset_sets_the_workload_and_the_url():
    at = run_page("app.py")
    assert at.sidebar.selectbox(key="_w_profile").value == "custom"
    at.sidebar.selectbox(key="_w_profile").set_value("agentic").run()
    # TraceLab's Codex row: 121,906-token mean prompt, 415-token mean output, 95.7% of prompt tokens cached
    params = qp(at)
    assert (params["isl"], params["osl"], params["reuse"]) == ("121906", "415", "95.7")
    assert params["batch"] == "64"  # the concurrency is kept
    assert at.sidebar.selectbox(key="_w_profile").value == "agentic"
    # editing a number leaves the preset: the sidebar says custom
    at.sidebar.number_input(key="_w_osl").set_value(1000).run()
    assert at.sidebar.selectbox(key="_w_profile").value == "custom" and qp(at)["osl"] == "1000"


def _query(profile_id: str) -> dict[str, str]:
    p = next(p for p in load_profiles() if p.id == profile_id)
    w = p.workload()
    return {"isl": str(w.input_len), "osl": str(w.output_len), "reuse": f"{100 * p.prefix_reuse:g}"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).stem)
def test_every_page_runs_the_agentic_profile(page):
    # the longest prompts (121,906 tokens) and the highest reuse of the catalog: no exception (run_page checks)
    at = run_page(page, timeout=180, model="qwen3-235b-a22b", gpu="h200", **_query("agentic"))
    assert qp(at)["reuse"] == "95.7"
    if page == "app.py":  # a link carrying the profile's numbers shows the profile (95.7 / 100 read back exactly)
        assert at.sidebar.selectbox(key="_w_profile").value == "agentic"
