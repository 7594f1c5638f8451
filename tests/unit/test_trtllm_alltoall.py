"""TensorRT-LLM's wide EP times its own NVLink all-to-all (issue 35): the ``trtllm`` kernel path's
``alltoall_low_latency`` factors, fitted on NVIDIA aiconfigurator 0.12.0's measured TensorRT-LLM 1.2.0rc6 table on
GB200 (gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf.parquet; ``python -m bench.fit_trtllm_alltoall``), while
SGLang / vLLM keep DeepEP's.

Measured per MoE layer at EP8, hidden 7168, top-8 of 256, NVFP4 dispatch, BF16 combine (microseconds, from that table):
NVLinkOneSided dispatch + combine: 1 token 18.3 + 25.3 = 43.6; 256 tokens 28.1 + 56.4 = 84.5.
NVLinkTwoSided prepare + dispatch + combine: 1 token 12.8 + 12.3 + 14.2 = 39.3; 256 tokens 15.2 + 28.4 + 63.9 = 107.5.
"""

import pytest

from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.perf.layer_comm import moe_comm_s
from core.perf.step_config import StepConfig

cat = load_catalog()
DSV3 = cat.model("deepseek-v3")
DEP8 = ParallelLayout(attention_tp=1, attention_dp=8, ep=8)
NVFP4 = Precision(weights="nvfp4", dispatch="nvfp4")


def _layer_us(gpu: str, stack: str, tokens: int, path: str) -> float:
    d = Deployment(DSV3, cat.gpu(gpu), DEP8, NVFP4, cat.efficiency_for(gpu, stack))
    comm = moe_comm_s(d, StepConfig("decode", tokens, 1024), tokens, path)
    return (comm["dispatch"] + comm["combine"]) * 1e6


@pytest.mark.parametrize("gpu", ["b200", "gb200", "gb300", "b300"])
def test_blackwell_trtllm_path_has_its_own_alltoall(gpu):
    eff = cat.efficiency_for(gpu, "trtllm")
    f = eff.kernel("alltoall_low_latency", "trtllm")
    assert (f.latency_us, f.scale_up_eff) == (22.1, 0.639)
    assert eff.owner_of("alltoall_low_latency", "trtllm") == "b200@trtllm"
    base = eff["alltoall_low_latency"]  # DeepEP's, unmeasured on Blackwell: the planner's default
    assert (base.latency_us, base.scale_up_eff) == (30.0, 0.8)


def test_hopper_trtllm_path_keeps_deepep_factors():
    eff = cat.efficiency_for("h200", "trtllm")
    assert eff.kernel("alltoall_low_latency", "trtllm") == eff["alltoall_low_latency"]


def test_one_token_ep8_layer_by_hand():
    # 2 x 22.1 us + (dispatch 8 copies x (7,168 x 0.5 + 7,168 / 16 = 4,032 B) + combine 8 x 14,336 B) x 7/8 sent off
    # the GPU = 28,224 + 100,352 = 128,576 B over 900 GB/s x 0.639 = 575.1 B/us: 0.2236 us -> 44.42 us
    assert _layer_us("gb200", "trtllm", 1, "trtllm") == pytest.approx(44.2 + 128_576 / 575_100, rel=1e-9)
    # SGLang on the same GPUs runs DeepEP: 2 x 30 us + 128,576 B / (900 x 0.8 = 720 B/us) = 60.18 us
    assert _layer_us("gb200", "sglang", 1, "deepep") == pytest.approx(60.0 + 128_576 / 720_000, rel=1e-9)


@pytest.mark.parametrize(
    ("tokens", "one_sided_us", "two_sided_us"),
    [(1, 43.6, 39.3), (256, 84.5, 107.5)],
)
def test_fit_against_the_measured_table(tokens, one_sided_us, two_sided_us):
    got = _layer_us("gb200", "trtllm", tokens, "trtllm")
    # 256 tokens by hand: 44.2 + 256 x 128,576 B / 575.1 B/us = 44.2 + 57.23 = 101.4 us
    assert got == pytest.approx(44.2 + tokens * 128_576 / 575_100, rel=1e-9)
    # between the two kernels' measurements, within 20% of each (the fit's P90 is 17.3%)
    assert min(one_sided_us, two_sided_us) * 0.8 < got < max(one_sided_us, two_sided_us) * 1.2
    assert abs(got / one_sided_us - 1) < 0.21 and abs(got / two_sided_us - 1) < 0.14
