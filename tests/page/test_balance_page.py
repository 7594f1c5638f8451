"""AppTest runs of the Balance page."""

import numpy as np
import pytest

from tests.page._util import metrics, qp, run_page  # noqa: F401


def test_default_deepseek_page_has_all_sections():
    at = run()
    assert len(at.get("vega_lite_chart")) == 4
    m = metrics(at)
    assert m["Expert groups"] == "8"
    lost = m["Throughput lost on EP 8"]
    before = float(lost.rstrip("%"))
    after = float(next(x.delta for x in at.metric if x.label == "Throughput lost on EP 8").split("%")[0])
    assert after < before  # EPLB recovers throughput


def test_hot_expert_capacity_example():
    at = run(model="mixtral-8x7b", gpu="h100-sxm", batch="512")
    at.selectbox[0].set_value("hot experts").run()
    # defaults: 1 hot expert with 38% of assignments; capacity factor slider default 1.25
    text = " ".join(md.value for md in at.markdown)
    # capacity = 512 x 2 / 8 x 1.25 = 160; the hot expert receives 0.38 x 1,024 = 389.1, overflows 229.1
    assert "**160.0 slots per expert**" in text
    assert "receives 389.1 assignments and overflows **229.1**" in text
    assert metrics(at)["Imbalance ratio (max / mean)"] == "3.04"  # 0.38 / 0.125


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
    assert len(at.get("vega_lite_chart")) == 4


def run(**query):
    return run_page("pages/3_Balance.py", timeout=60, **query)
