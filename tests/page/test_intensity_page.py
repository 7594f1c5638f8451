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


def test_replicas_share_the_scenarios_sequences_as_the_fit_page_does():
    # numbers audit 3, B8.5: Kimi-K2 on the GB200 rack, default DP-attn24 · EP24 · DP3. The sidebar's 64 sequences
    # are the deployment's (Fit spreads them over all 72 GPUs); the busiest of the 3 replicas holds ceil(64 / 3) =
    # 22, i.e. 22 / 24 sequences per GPU x 2,304 tokens x 70,272 B = 148,414,464 B = 0.15 GB of cache per GPU
    # (Intensity used to put all 64 in one replica: 0.43 GB).
    at = run(model="kimi-k2", gpu="gb200", nodes="18", gpn="4", w="fp8")
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "At 22 tokens per replica" in text and "0.15 GB of cache" in text, text[-600:]
    assert any("64 sequences over 3 replicas: the busiest holds 22" in c.value for c in at.caption)


def test_a_batch_that_does_not_fit_is_said_on_the_intensity_page():
    # numbers audit 3: Mixtral int4 on 2 x RTX 4090 holds 46 sequences of 2,304 tokens; the scenario asks for 64
    at = run(model="mixtral-8x7b", gpu="rtx-4090", nodes="1", gpn="2", w="int4")
    assert not at.exception
    warned = [w.value for w in at.warning if "do not fit" in w.value]
    assert warned and "64 sequences" in warned[0] and "46" in warned[0], [w.value for w in at.warning]
