"""The accelerators of late 2026 (issue 22) on the pages that size and shape a deployment: Fit, Intensity and
Layouts give results for each, the Catalog page lists each with its runtime-visible memory, and a TPU or a
Trainium says which numbers apply (no GPU serving stack runs on them; their step times are uncalibrated)."""

import pytest

from core.catalog import load_catalog
from tests.page._util import run_page

cat = load_catalog()
NEW = ["vr200", "gb10", "h20", "a40", "mi455x", "tpu-v7", "trainium3"]
# Qwen3-30B-A3B in bf16 (61 GB of weights) fits one node of each: the smallest is GB10's 119.7 GiB alone,
# A40's 8 x 44.3 GiB
GPN = {"gb10": "1", "tpu-v7": "4", "trainium3": "8"}


@pytest.mark.parametrize("gpu", NEW)
def test_fit_intensity_and_layouts_work_on_every_new_accelerator(gpu):
    q = {"model": "qwen3-30b-a3b", "gpu": gpu, "nodes": "1", "gpn": GPN.get(gpu, "8"), "w": "bf16"}
    fit = run_page("pages/1_Fit.py", **q)
    assert not fit.exception and not fit.error, [e.value for e in fit.error]
    assert any("Fits" in s.value for s in fit.success)
    # the budget divides what the runtime reports, not the marketed size (issue 22: budgets use the former)
    g = cat.gpu(gpu)
    cluster_gb = int(q["gpn"]) * g.runtime_memory_bytes / 1e9
    assert f"{cluster_gb:,.0f} GB on the cluster" in " ".join(m.value for m in fit.markdown)
    intensity = run_page("pages/2_Intensity.py", **q)
    assert not intensity.exception and intensity.get("vega_lite_chart")
    layouts = run_page("pages/5_Layouts.py", timeout=180, **q)
    assert not layouts.exception and not layouts.error, [e.value for e in layouts.error]
    # a recommended layout for prefill and for decode, with a throughput table
    assert len(layouts.success) == 2
    table = next(d.value for d in layouts.dataframe if "tokens/s per GPU" in d.value.columns)
    assert (table["tokens/s per GPU"] > 0).all()
    caveat = [w.value for w in fit.sidebar.warning if "is not a GPU" in w.value]
    assert bool(caveat) == (g.accelerator != "gpu")
    if caveat:
        assert g.serving_stack in caveat[0] and "uncalibrated roofline estimate" in caveat[0]


def test_the_catalog_page_lists_marketed_and_runtime_memory():
    at = run_page("pages/8_Catalog.py")
    frame = next(df.value for df in at.dataframe if "runtime_gb" in df.value.columns)
    row = frame.set_index("id").loc["h200"]
    # H200: marketed 141 GB; CUDA reports 150,109,945,856 B = 150.11 GB
    assert row["hbm_gb"] == 141 and row["runtime_gb"] == pytest.approx(150.11, abs=0.005)
    assert set(NEW) <= set(frame["id"])
    assert "runtime_memory:" in frame.set_index("id").loc["tpu-v7", "source"]


def test_the_validation_page_says_whose_factors_each_new_accelerator_inherits():
    at = run_page("pages/6_Validation.py")
    frame = next(d.value for d in at.dataframe if "attention from" in d.value.columns).set_index("GPU")
    # catalogs/efficiency.yaml: vr200 inherits gb300 (measured), tpu-v7 and trainium3 the h200, a40 the a100
    for gpu, parent in (("vr200", "gb300"), ("tpu-v7", "h200"), ("trainium3", "h200"), ("a40", "a100-80gb")):
        row = frame.loc[cat.gpu(gpu).name]
        assert row["own factors"] == "none: every factor inherited" and row["measured cases"] == 0
        assert row["attention from"].startswith(parent), (gpu, row["attention from"])
