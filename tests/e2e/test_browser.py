"""The app in a real browser (Debian chromium): renders, no exception, URL round trip."""

import re
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import expect

from tests.current_generation import CLUSTER, MODEL_FREE_PAGES, TRAITS
from tests.e2e.conftest import ARTIFACTS, wait_drawn, wait_rendered

pytestmark = pytest.mark.e2e


def qs(url):
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def no_exception(page):
    assert page.get_by_test_id("stException").count() == 0
    assert not page.errors, page.errors


def test_home_renders_default_scenario(server, new_page):
    page = new_page()
    page.goto(server.url)
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="MoE Deployment Planner")).to_be_visible()
    expect(page.get_by_test_id("stMetricValue")).to_have_count(5)
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    # DeepSeek-V3 671B; 576 x 2 B x 61 layers = 70.27 KB per token; 8 x 151.4 GB of device memory (141 GiB)
    assert values[0] == "671B" and "70.27 KB" in values and "1,201 GB" in values
    page.wait_for_url("**/?model=deepseek-v3*")
    assert qs(page.url)["gpu"] == "h200"
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)


def test_deep_link_to_catalog_is_first_request_to_fresh_server(fresh_server, new_page):
    page = new_page()
    page.goto(f"{fresh_server.url}/Catalog?model=kimi-k2&gpu=gb200&nodes=18&gpn=4&w=nvfp4&batch=256")
    wait_rendered(page)
    expect(page.get_by_role("heading", name="Catalog")).to_be_visible()
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Model")).to_have_value(re.compile("^Kimi-K2 "))
    expect(sidebar).to_contain_text("72 GPUs")
    # the shared sidebar is present on a deep link, the tables rendered, the URL kept the scenario
    expect(page.get_by_test_id("stDataFrame")).to_have_count(5)  # models, GPUs, links, hosts, workload profiles
    q = qs(page.url)
    assert (q["model"], q["gpu"], q["nodes"], q["gpn"], q["w"], q["batch"]) == (
        "kimi-k2",
        "gb200",
        "18",
        "4",
        "nvfp4",
        "256",
    )
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "catalog.png"), full_page=True)


def test_copied_url_reopens_same_scenario_in_fresh_browser(server, new_page):
    page = new_page()
    page.goto(f"{server.url}/?model=mixtral-8x22b&gpu=h100-sxm")
    wait_rendered(page)
    nodes = page.get_by_test_id("stSidebar").get_by_label("Nodes")
    nodes.fill("3")
    nodes.press("Enter")
    page.wait_for_url("**nodes=3**")
    wait_rendered(page)
    # navigate to another page through the sidebar: the scenario follows
    page.get_by_test_id("stSidebar").get_by_role("link", name="Catalog").click()
    page.wait_for_url("**/Catalog?**")
    wait_rendered(page)
    copied = page.url
    assert qs(copied)["nodes"] == "3" and qs(copied)["model"] == "mixtral-8x22b"

    other = new_page()  # a new browser context: no cookies, no session
    other.goto(copied)
    wait_rendered(other)
    sidebar = other.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Model")).to_have_value(re.compile("^Mixtral-8x22B "))
    expect(sidebar.get_by_label("Nodes")).to_have_value("3")
    expect(sidebar).to_contain_text("24 GPUs")
    no_exception(other)


def test_bad_url_shows_warning_not_traceback(server, new_page):
    page = new_page()
    page.goto(f"{server.url}/?model=not-a-model&nodes=0")
    wait_rendered(page)
    expect(page.get_by_test_id("stSidebar").get_by_test_id("stAlert")).to_have_count(2)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("model='not-a-model' is not a known model id")
    no_exception(page)


def test_fit_page_renders_charts_and_verdict(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3000})  # Streamlit scrolls inside its own container
    page.goto(f"{server.url}/Fit?model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8&kv=bf16&batch=64&isl=2048&osl=512")
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Fit")).to_be_visible()
    # the memory, concurrency and per-layer-type charts drew (SVG or canvas marks)
    expect(page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")).to_have_count(3)
    expect(page.get_by_test_id("stAlertContentSuccess")).to_contain_text("Fits.")
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    assert values[0].endswith(" GB") and values[3].endswith(" tokens")
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "fit.png"), full_page=True)


def test_fit_page_does_not_fit_message(server, new_page):
    page = new_page()
    page.goto(f"{server.url}/Fit?model=deepseek-v3&gpu=h100-sxm&nodes=1&gpn=8&w=bf16")
    wait_rendered(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("Does not fit.")
    no_exception(page)


def test_intensity_page_renders_all_charts(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3400})
    page.goto(f"{server.url}/Intensity?model=mixtral-8x7b&gpu=h100-sxm&w=bf16&batch=32")
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Intensity")).to_be_visible()
    expect(page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")).to_have_count(4)
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    # 32 tokens x top-2 / 8 experts = 8 tokens per expert; ~8 FLOP/byte in bf16
    assert values[0] == "8.0" and values[1] == "8.0"
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "intensity.png"), full_page=True)


def test_speculative_page_renders_all_charts(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 4200})
    page.goto(
        f"{server.url}/Speculative?model=llama-3-70b&gpu=h100-sxm&nodes=1&gpn=2&w=fp8&sd=draft_model&draft=llama-3-8b&gamma=5&alpha=0.75&c=0.1"
    )
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Speculative decoding")).to_be_visible()
    marks = page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")
    expect(marks).to_have_count(5)  # the simulator's chart comes on request
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    deltas = page.get_by_test_id("stMetricDelta").all_inner_texts()
    # alpha 0.75, gamma 5, c 0.1: 3.29 tokens per step; the closed form 3.29 / 1.5 = 2.19x beside the step-time
    # model's speedup at batch 1, which pays the step's fixed costs and so is below it
    assert values[0] == "3.29" and deltas[1].endswith("= 2.19×")
    assert 1.0 < float(values[1].rstrip("×")) < 2.19
    page.get_by_text("Run the simulator").click()
    expect(marks).to_have_count(6, timeout=60_000)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "speculative.png"), full_page=True)


def test_balance_page_renders_all_charts(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3600})
    page.goto(f"{server.url}/Balance?model=deepseek-v3&gpu=h200&nodes=4&gpn=8")
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Balance")).to_be_visible()
    marks = page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")
    expect(marks).to_have_count(3)
    page.get_by_text("Simulate the bias update on a skewed router").click()  # the router simulation, on request
    expect(marks).to_have_count(4, timeout=60_000)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "balance.png"), full_page=True)


def test_validation_page_renders(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3000})
    page.goto(f"{server.url}/Validation")
    wait_rendered(page, timeout_ms=120_000)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Validation")).to_be_visible()
    # predicted vs measured, the measured all-reduce curves and the published frontier beside the model
    charts = page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")
    expect(charts).to_have_count(3, timeout=60_000)
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("%")
    # the case tables (canvas grids) have drawn before the screenshot; those inside a collapsed expander (every
    # published frontier point, per curve) draw only when opened
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
        .filter(d => !d.closest('details:not([open])'))
        .every(d => d.getBoundingClientRect().height > 60 && d.querySelector('canvas'))""")
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "validation.png"), full_page=True)


def test_layouts_page_renders(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3200})
    page.goto(f"{server.url}/Layouts?model=deepseek-v3&gpu=h800&nodes=18&gpn=8")
    wait_rendered(page, timeout_ms=120_000)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Layouts", exact=True)).to_be_visible()
    # the prefill and decode breakdowns, the top decode layouts' frontier, their TTFT and TPOT under load, and the
    # all-to-all curve
    charts = page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")
    expect(charts).to_have_count(6, timeout=60_000)
    expect(page.get_by_test_id("stAlertContentSuccess")).to_have_count(2)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "layouts.png"), full_page=True)


def test_disaggregation_page_renders(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 2600})
    page.goto(f"{server.url}/Disaggregation_and_cost?model=llama-3-70b&gpu=h100-sxm&isl=1500&osl=800&w=fp8")
    wait_rendered(page, timeout_ms=120_000)
    expect(
        page.get_by_test_id("stMain").get_by_role("heading", name="Disaggregation & cost", exact=True)
    ).to_be_visible()
    expect(page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")).to_have_count(2)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "disaggregation.png"), full_page=True)


def test_save_compare_and_download_in_the_browser(server, new_page, tmp_path):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 2200})
    page.goto(f"{server.url}/Compare?model=mixtral-8x7b&gpu=h100-sxm&gpn=2&w=bf16")
    wait_rendered(page)
    main = page.get_by_test_id("stMain")
    main.get_by_role("textbox", name="Name", exact=True).fill("two-h100")
    main.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_test_id("stAlertContentSuccess")).to_contain_text("Saved “two-h100”")
    wait_rendered(page)
    # a second scenario: four GPUs, saved under another name
    sidebar = page.get_by_test_id("stSidebar")
    gpn = sidebar.get_by_role("spinbutton", name="GPUs / node")
    gpn.fill("4")
    gpn.press("Enter")
    page.wait_for_url("**gpn=4**")
    wait_rendered(page)
    main.get_by_role("textbox", name="Name", exact=True).fill("four-h100")
    main.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_test_id("stAlertContentSuccess")).to_contain_text("Saved “four-h100”")
    wait_rendered(page)
    # the side-by-side table lists the current scenario and a saved one
    expect(main.get_by_text("Side by side")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame")).to_have_count(2)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)

    # the report downloads and is a self-contained HTML page with its charts
    page.get_by_test_id("stSidebar").get_by_role("link", name="Report").click()
    page.wait_for_url("**/Report?**")
    wait_rendered(page, timeout_ms=120_000)
    with page.expect_download() as d:
        page.get_by_role("button", name="Download HTML report").click()
    path = tmp_path / "report.html"
    d.value.save_as(path)
    text = path.read_text()
    assert "<h1>Mixtral-8x7B on 4 × NVIDIA H100 SXM5 80GB</h1>" in text
    assert text.count("data:image/png;base64,") == 3
    no_exception(page)


def test_single_box_page_renders_placement_and_speed(server, new_page):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3600})
    page.goto(
        f"{server.url}/Single_box?model=deepseek-v3&host=server-ddr5-8ch-512&bgpu=rtx-4090&bn=1&q=iq4_xs&bctx=8192"
    )
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Single box")).to_be_visible()
    expect(page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")).to_have_count(3)
    expect(page.get_by_test_id("stAlertContentSuccess")).to_contain_text("Fits.")
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    assert values[0].endswith(" GB") and values[3].endswith(" tok/s")
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "single_box.png"), full_page=True)


@pytest.mark.parametrize(
    "model,nodes",
    [
        # the tour draws the Fit page of the TRAITS models on 2 nodes; here one model outside them on one node
        # and Kimi-K3 on the 4 nodes it needs to keep a cache (on the tour's 2 it does not fit)
        ("minimax-m3", 1),
        ("kimi-k3", 4),
    ],
)
def test_fit_page_for_current_generation_models(server, new_page, model, nodes):
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 3000})
    # Kimi-K3 (2.78T) needs 4 nodes of 8 B200 in FP8 to leave room for a cache
    page.goto(f"{server.url}/Fit?model={model}&gpu=b200&nodes={nodes}&gpn=8&w=fp8")
    wait_rendered(page)
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Fit")).to_be_visible()
    # memory per GPU, sequences vs context, cache per layer type
    expect(page.locator("[data-testid='stVegaLiteChart'] :is(svg.marks, canvas.marks)")).to_have_count(3)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / f"fit_{model}.png"), full_page=True)


# The tour: every page on the default scenario (no query: DeepSeek-V3 FP8 on 8 x H200) and on one scenario per
# model family, on the hardware that family is served on; then one current-generation model per architecture trait
# (tests/current_generation.py TRAITS) on 2 x 8 B200. The other current-generation models run every page through
# AppTest (tests/page/test_current_generation_pages.py); the browser adds the drawn charts and the browser's errors.
FAMILIES = {
    "default": "",
    "qwen3-moe": "model=qwen3-235b-a22b&gpu=h100-sxm&nodes=1&gpn=8&w=fp8",
    "mixtral": "model=mixtral-8x22b&gpu=h100-sxm&nodes=1&gpn=8&w=bf16",
    "llama4": "model=llama-4-maverick&gpu=h200&nodes=1&gpn=8&w=fp8",
    "kimi-k2-nvl72": "model=kimi-k2&gpu=gb200&nodes=18&gpn=4&w=fp8",
    "gpt-oss": "model=gpt-oss-120b&gpu=h100-sxm&nodes=1&gpn=1&w=mxfp4",
    "grok": "model=grok-1&gpu=mi300x&nodes=1&gpn=8&w=bf16",
    "hunyuan": "model=hunyuan-large&gpu=h200&nodes=1&gpn=8&w=fp8",
    "arctic": "model=snowflake-arctic&gpu=h100-sxm&nodes=2&gpn=8&w=fp8",
    "deepseek-v2-lite-4090": "model=deepseek-v2-lite&gpu=rtx-4090&nodes=1&gpn=2&w=bf16",
    "dense-llama3": "model=llama-3-70b&gpu=h100-sxm&nodes=1&gpn=8&w=fp8",
}
# issue 23: five families run on a workload profile each (its prompt, output and prefix-cache hits in the URL, as
# the sidebar's Preset sets them), so every profile crosses every page that depends on the workload, at no extra load
PROFILE_OF = {
    "qwen3-moe": "chat",
    "mixtral": "coding_assistant",
    "kimi-k2-nvl72": "agentic",
    "llama4": "long_document",
    "hunyuan": "batch_offline",
}


def _with_profile(family: str, query: str) -> str:
    if family not in PROFILE_OF:
        return query
    from core.deployment.specs import Scenario
    from core.scenario import scenario_to_params
    from core.serving.workload_profiles import profile

    params = scenario_to_params(Scenario().model_copy(update={"workload": profile(PROFILE_OF[family]).workload()}))
    return query + "".join(f"&{k}={params[k]}" for k in ("batch", "isl", "osl", "reuse") if k in params)


FAMILIES = {f: _with_profile(f, q) for f, q in FAMILIES.items()}
TOUR = {**FAMILIES, **{m: urlencode({"model": m, **CLUSTER}) for m in TRAITS}}


def _path(script: str) -> str:
    return "" if script == "app.py" else script.split("/", 1)[1].split("_", 1)[1].removesuffix(".py")


@pytest.mark.parametrize("scenario", list(TOUR))
def test_tour_every_page(server, new_page, scenario):
    """Every page renders with no exception block and no browser error, keeps the scenario, draws every chart
    it has, and (default scenario and model families) leaves a full-page screenshot in test-artifacts/tour/<scenario>/."""
    from ui.scenario import PAGES

    query = TOUR[scenario]
    model = dict(kv.split("=") for kv in query.split("&"))["model"] if query else "deepseek-v3"
    out = ARTIFACTS / "tour" / scenario
    out.mkdir(parents=True, exist_ok=True)
    page = new_page()
    page.set_viewport_size({"width": 1500, "height": 2200})  # Streamlit scrolls inside its own container
    # the first page by its URL, the others through the sidebar's links as a user goes (they carry the scenario
    # in their query; no reload of Streamlit's JS bundle, which kept the whole tour past CI's time); screenshots
    # for the default scenario and the model families
    shots = scenario in FAMILIES
    # Validation, Catalog and Compare do not read the scenario's model (their prologue drops it): the default
    # scenario and the families visit them; the current-generation models visit the nine pages that compute with it
    pages = PAGES if shots else [(s, lab) for s, lab in PAGES if s not in MODEL_FREE_PAGES]
    for i, (script, label) in enumerate(pages):
        if i == 0:
            page.goto(f"{server.url}/{_path(script)}" + (f"?{query}" if query else ""))
        else:
            page.get_by_test_id("stSidebar").get_by_role("link", name=label, exact=True).click()
            page.wait_for_function("t => document.title.startsWith(t)", arg=f"{label} · ", timeout=60_000)
        wait_rendered(page)
        assert page.get_by_test_id("stException").count() == 0, (scenario, label)
        # the sidebar kept the model: the scenario reached the page
        expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model")).not_to_have_value(
            "", timeout=30_000
        )
        page.wait_for_url(f"**model={model}*")
        wait_drawn(page)
        if shots:
            page.screenshot(path=str(out / f"{script.rsplit('/', 1)[-1].removesuffix('.py')}.png"), full_page=True)
    assert not page.errors, page.errors


def test_readme_screenshot_comes_from_the_tour():
    """README.md shows docs/screenshots/home.png, a copy of the tour's default Home page (refresh it with
    `cp test-artifacts/tour/default/app.png docs/screenshots/home.png` after a tour run)."""
    from tests.e2e.conftest import ROOT

    shot = ROOT / "docs" / "screenshots" / "home.png"
    assert "](docs/screenshots/home.png)" in (ROOT / "README.md").read_text()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_the_pages_the_model_tour_skips_do_not_read_the_model():
    """The current-generation tour skips MODEL_FREE_PAGES: each must drop the scenario's model in its prologue
    (``scenario, cat, *_ = page(...)``), so no model can change what it computes."""
    from tests.e2e.conftest import ROOT

    for script in MODEL_FREE_PAGES:
        assert "scenario, cat, *_ = page(" in (ROOT / script).read_text(encoding="utf-8"), script
