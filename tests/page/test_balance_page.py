"""AppTest runs of the Balance page."""

import numpy as np
import pytest
from streamlit.proto.Metric_pb2 import Metric

from tests.page._util import metrics, qp, run_page  # noqa: F401


def test_default_deepseek_page_has_all_sections():
    at = run()
    assert len(at.get("vega_lite_chart")) == 3
    at.toggle(key="bias_sim").set_value(True).run()  # the router simulation, on request
    assert len(at.get("vega_lite_chart")) == 4 and not at.exception
    m = metrics(at)
    assert m["Expert groups"] == "8"
    # 64 sequences on 8 GPUs: 8 decode tokens per GPU, a memory-bound expert phase: the busiest GPU's extra
    # tokens cost next to nothing, while a compute-bound prefill chunk loses a real share and EPLB recovers it
    assert float(m["Lost to imbalance (decode, EP 8)"].rstrip("%")) < 2.0
    delta = next(x.delta for x in at.metric if x.label == "Lost to imbalance (decode, EP 8)")
    pre_before, pre_after = (float(x) for x in delta.split("prefill ")[1].rstrip("%").split("% → "))
    assert pre_after < pre_before
    # 32 redundant experts on EP 8: 4 more experts per GPU x 58 MoE layers x 44,040,192 params x (1 + 4/16,384) B
    # (FP8 with 128 x 128 block scales) = 10.22 GB per GPU
    text = " ".join(c.value for c in at.caption)
    assert "EPLB's 32 replicas add 10.22 GB per GPU" in text
    # the published EPLB runs beside the model: ATOM's 7.56 / 6.48 = 1.167x rearrange-only gain, LMSYS's
    # 50,302 / 59,337 = 0.848x of perfect balance
    frame = next(df.value for df in at.dataframe if "published (× baseline)" in df.value.columns)
    assert [round(x, 3) for x in frame["published (× baseline)"]] == [1.167, 1.244, 1.34, 0.848]
    assert (frame["gap (%)"].abs() < 10).all()


def test_redundant_experts_that_do_not_fit_are_refused():
    # Mixtral 8x7B BF16 on 8 RTX 4090 with DP-attention x EP8: one more expert per GPU is 3 x 4,096 x 14,336
    # params x 32 layers x 2 B = 11.27 GB, beyond what a 24 GB card has left
    at = run(model="mixtral-8x7b", gpu="rtx-4090", w="bf16", tp="1", etp="1")
    assert not at.exception
    assert any(
        "More than 0 redundant experts do not fit" in w.value and "adds 11.27 GB per GPU" in w.value for w in at.warning
    )
    assert "EPLB's 0 replicas add 0.00 GB per GPU" in " ".join(c.value for c in at.caption)


def test_hot_expert_capacity_example():
    at = run(model="mixtral-8x7b", gpu="h100-sxm", batch="512")
    at.selectbox[0].set_value("hot experts").run()
    # defaults: 1 hot expert with 38% of assignments; capacity factor slider default 1.25
    text = " ".join(md.value for md in at.markdown)
    # capacity = 512 x 2 / 8 x 1.25 = 160; the hot expert receives 0.38 x 1,024 = 389.1, overflows 229.1
    assert "**160.0 slots per expert**" in text
    assert "receives 389.1 assignments and overflows **229.1**" in text
    assert metrics(at)["Imbalance ratio (max / mean)"] == "3.04"  # 0.38 / 0.125
    # above the 2.0 alert: the note turns red (the other metrics' notes stay grey, with no arrow)
    ratio = next(x for x in at.metric if x.label == "Imbalance ratio (max / mean)")
    assert ratio.proto.delta == "alert" and ratio.proto.color == Metric.RED
    cv = next(x for x in at.metric if x.label == "Coefficient of variation")
    assert cv.proto.color == Metric.GRAY and cv.proto.direction == Metric.NONE


def test_dense_model_explains_itself():
    at = run(model="llama-3-70b")
    assert "dense model" in at.info[0].value and not at.get("vega_lite_chart")


def test_csv_upload_and_errors():
    at = run(model="mixtral-8x7b", gpu="h100-sxm")
    at.selectbox[0].set_value("paste / upload CSV").run()
    at.text_area[0].input("1,2,3\n4,5\n").run()
    assert any("line 2: 2 columns, but the first row has 3" in e.value for e in at.error)
    at.text_area[0].input("1,2,3\n").run()
    assert any("has 3 experts per row; Mixtral-8x7B has 8" in e.value for e in at.error)
    rows = "\n".join(",".join(str(v) for v in row) for row in np.array([[10, 10, 10, 10, 10, 10, 10, 50]] * 2))
    at.text_area[0].input(rows).run()
    assert at.success and "Read 2 layer(s) × 8 experts" in at.success[0].value
    # 50 / (120 / 8) = 3.33
    assert metrics(at)["Imbalance ratio (max / mean)"] == "3.33"


def test_prometheus_scrape():
    at = run(model="mixtral-8x7b", gpu="h100-sxm")
    at.selectbox[0].set_value("Prometheus scrape").run()
    lines = [f'sglang:expert_load{{layer="0",expert="{i}"}} {100 if i else 300}' for i in range(8)]
    at.text_area[0].input("\n".join(lines)).run()
    assert at.success
    assert metrics(at)["Imbalance ratio (max / mean)"] == pytest.approx("2.40")  # 300 / (1000 / 8)


@pytest.mark.parametrize("model_id", ["qwen3-30b-a3b", "gpt-oss-20b", "llama-4-maverick", "kimi-k2", "grok-1"])
def test_families(model_id):
    at = run(model=model_id, gpu="h200", nodes="2")
    at.toggle(key="bias_sim").set_value(True).run()
    assert len(at.get("vega_lite_chart")) == 4 and not at.exception


def run(**query):
    return run_page("pages/3_Balance.py", timeout=60, **query)


def test_csv_excel_bom_typo_and_huge_loads():
    """Issue #21: a BOM used to lose the first row, a typo ('12O') silently lost its row, and 1e308 loads
    (finite, but their sum is inf) raised an uncaught exception."""
    at = run(model="mixtral-8x7b", gpu="h100-sxm")
    at.selectbox[0].set_value("paste / upload CSV").run()
    # BOM + two rows: both kept; row 1 max / mean = 50 / (120 / 8) = 3.33
    at.text_area[0].input("\ufeff10,10,10,10,10,10,10,50\n10,10,10,10,10,10,10,50\n").run()
    assert not at.exception and "Read 2 layer(s) × 8 experts" in at.success[0].value
    assert metrics(at)["Imbalance ratio (max / mean)"] == "3.33"
    at.text_area[0].input("12O,10,10,10,10,10,10,50\n10,10,10,10,10,10,10,50\n").run()
    assert not at.exception and any("line 1, column 1" in e.value and "is not a number" in e.value for e in at.error)
    at.text_area[0].input(",".join(["1e308"] * 8)).run()
    assert not at.exception
    assert any("line 1, column 1" in e.value and "above the largest load accepted, 1e+30" in e.value for e in at.error)


def test_prometheus_duplicate_samples_past_the_float_range():
    at = run(model="mixtral-8x7b", gpu="h100-sxm")
    at.selectbox[0].set_value("Prometheus scrape").run()
    lines = [f'm{{layer="0",expert="{i}"}} 1e308' for i in range(8)] * 2
    at.text_area[0].input("\n".join(lines)).run()
    assert not at.exception
    assert any("line 1" in e.value and "above the largest load accepted, 1e+30" in e.value for e in at.error)


def test_4096_gpus_get_a_layout_the_model_runs():
    """512 x 8 GPUs is within the README's limits; the default layout there put 4,096 / 1 pipeline stages on
    DeepSeek-V3's 61 layers and the EPLB section raised. Now pipelines stop at one stage per layer and the rest
    are replicas (TP 8 x EP 8, PP 32 x DP 16), and the page runs."""
    at = run(nodes="512", gpn="8")
    assert not at.exception and not at.error
    assert metrics(at)["Expert groups"] == "8"
    # the same cluster with a layout of one's own: 4,096 / (8 stages x 64 replicas) = 8 GPUs per stage, EP 8
    at = run(nodes="512", gpn="8", tp="1", etp="1", pp="8", dp="64")
    assert not at.error and metrics(at)["Expert groups"] == "8"
