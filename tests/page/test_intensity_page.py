"""AppTest runs of the Intensity page."""

import pytest

from core.catalog import load_catalog
from tests.page._util import metrics, qp, run_page  # noqa: F401


def test_mixtral_batch_32_is_memory_bound_at_8_flop_per_byte():
    at = run(model="mixtral-8x7b", gpu="h100-sxm", w="bf16", batch="32")
    m = metrics(at)
    assert m["Tokens per expert"] == "8.0"  # 32 x 2 / 8
    assert m["Expert GEMM (FLOP/B)"] == "8.0"
    assert m["GPU ridge (FLOP/B)"] == "295"  # 989 / 3.35
    assert "memory-bound" in at.warning[0].value
    assert len(at.get("vega_lite_chart")) == 4


def test_deepseek_v3_batch_1_touches_8_experts():
    at = run(model="deepseek-v3", gpu="h200", batch="1")
    assert metrics(at)["Experts touched / layer"] == "8.0 of 256"


def test_qwen3_batch_128_gives_8_tokens_per_expert():
    at = run(model="qwen3-235b-a22b", gpu="h100-sxm", batch="128")
    assert metrics(at)["Tokens per expert"] == "8.0"


def test_dense_model_has_no_expert_charts():
    at = run(model="llama-3-70b", gpu="h100-sxm", w="bf16", batch="1")
    m = metrics(at)
    assert m["FFN GEMM (FLOP/B)"] == "1.0"  # batch 1 bf16: ~1 FLOP per byte
    assert len(at.get("vega_lite_chart")) == 3  # no experts-touched chart


def test_large_batch_on_fp8_can_become_compute_bound():
    at = run(model="mixtral-8x7b", gpu="h100-sxm", w="bf16", batch="8192")
    assert at.success and "compute-bound" in at.success[0].value


@pytest.mark.parametrize("model_id", sorted(load_catalog().models))
def test_every_model_renders(model_id):
    at = run(model=model_id, gpu="h200", nodes="2", gpn="8")
    assert len(at.get("vega_lite_chart")) >= 3


def run(**query):
    return run_page("pages/2_Intensity.py", timeout=60, **query)
