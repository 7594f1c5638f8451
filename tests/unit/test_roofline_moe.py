"""Roofline and MoE routing arithmetic against the sources' worked numbers, computed by hand."""

import numpy as np
import pytest

from core import moe, roofline
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.model import routing
from core.moe import GemmElementBytes

cat = load_catalog()
H100, H200 = cat.gpu("h100-sxm"), cat.gpu("h200")
BF16 = GemmElementBytes(2.0, 2.0, 2.0, "bf16")


def test_gemm_intensity_by_hand():
    # [1, 8192] x [8192, 8192] in bf16: 2*8192^2 FLOPs over (8192^2 + 8192 + 8192) * 2 bytes
    assert roofline.gemm_intensity(1, 8192, 8192) == pytest.approx(2 * 8192**2 / ((8192**2 + 2 * 8192) * 2))
    # batch 1 decode of a bf16 GEMM: ~1 FLOP per byte
    assert roofline.gemm_intensity(1, 8192, 28672) == pytest.approx(1.0, abs=0.001)
    # fp8 weights, bf16 activations and outputs
    w = roofline.gemm_intensity(16, 4096, 4096, weight_bytes=1, act_bytes=2, out_bytes=2)
    assert w == pytest.approx(2 * 16 * 4096**2 / (4096**2 + 16 * 4096 * 2 + 16 * 4096 * 2))


def test_ridge_points():
    # 989 TFLOPS / 3.35 TB/s = 295.2; / 4.8 TB/s = 206.0 (the sources' "about 295" and "about 206")
    assert roofline.ridge_point(H100, "bf16") == pytest.approx(295.2, abs=0.1)
    assert roofline.ridge_point("h200", "bf16") == pytest.approx(206.0, abs=0.1)
    with pytest.raises(ValueError, match="no native fp8"):
        roofline.ridge_point("a100-80gb", "fp8")


def test_attainable_broadcasts_over_gpus_and_intensities():
    peak, bw = roofline.gpu_arrays([H100, H200], "bf16")
    grid = roofline.attainable_tflops(peak, bw, np.array([[1.0, 100.0, 1000.0]]))
    # H100: 1 x 3.35 = 3.35 TFLOP/s; 100 x 3.35 = 335; capped at 989. H200: 4.8, 480, 989
    np.testing.assert_allclose(grid, [[3.35, 335.0, 989.0], [4.8, 480.0, 989.0]])


def test_llama3_70b_batch_1_decode_bound_on_h100():
    m = cat.model("llama-3-70b")
    # the sources' arithmetic: 140 GB / 3.35 TB/s = 41.8 ms memory-bound; 140 GFLOP / 989 TFLOPS = 0.14 ms
    assert roofline.time_lower_bound_s(140e9, 140e9, H100) == pytest.approx(41.8e-3, abs=0.05e-3)
    assert 140e9 / (989e12) == pytest.approx(0.1416e-3, abs=0.001e-3)
    step = moe.decode_step(Deployment(m, H100, ParallelLayout(), "bf16"), 1, 1)
    # the model's own weights read per step: 70.55B - the 1.05B input embedding (a lookup), x 2 bytes
    assert step.weight_bytes[0] == pytest.approx((70_553_706_496 - 128_256 * 8192) * 2, rel=1e-6)
    # 139,006,066,688 B / 3.35e12 B/s = 41.49 ms (the sources round the model to 140 GB: 41.8 ms)
    assert step.memory_time_s[0] * 1e3 == pytest.approx(41.49, abs=0.01)
    assert step.compute_time_s[0] * 1e3 == pytest.approx(0.14, abs=0.01)
    assert step.memory_bound[0]


def test_mixtral_tokens_and_intensity():
    m = cat.model("mixtral-8x7b")
    assert routing.tokens_per_expert(32, 2, 8) == 8  # 32 x 2 / 8
    assert routing.tokens_per_expert(256, 2, 8) == 64
    # an expert's GEMMs over 8 tokens do ~8 FLOP per byte; a dense FFN over all 32 tokens ~32
    assert moe.expert_gemm_intensity(m, 8, BF16) == pytest.approx(8, rel=0.01)
    assert moe.dense_equivalent_intensity(m, 32, BF16) == pytest.approx(32, rel=0.01)


def test_qwen3_tokens_per_expert():
    assert routing.tokens_per_expert(128, 8, 128) == 8


def test_deepseek_v3_experts_touched():
    # 1 token touches exactly top-k = 8 of 256; 1 - (1 - 8/256)^T -> all 256 at large batch
    assert routing.expected_experts_touched(1, 8, 256) == pytest.approx(8)
    assert routing.expected_experts_touched(10, 8, 256) == pytest.approx(256 * (1 - (248 / 256) ** 10))
    assert routing.expected_experts_touched(4096, 8, 256) == pytest.approx(256, abs=1e-6)
    np.testing.assert_allclose(
        routing.expected_experts_touched(np.array([1, 2]), 8, 256), [8, 256 * (1 - (248 / 256) ** 2)]
    )


def test_skew_touches_fewer_experts():
    uniform = routing.expected_experts_touched_skewed(64, 8, np.full(256, 1 / 256))
    assert uniform == pytest.approx(routing.expected_experts_touched(64, 8, 256))
    assert routing.expected_experts_touched_skewed(64, 8, routing.zipf_probs(256, 1.2)) < uniform
    with pytest.raises(ValueError, match="summing to 1"):
        routing.expected_experts_touched_skewed(8, 2, [0.5, 0.2])


def test_hottest_expert():
    # mean 8 tokens x imbalance 3.6 = 28.8, capped at the 32 tokens there are
    assert routing.hottest_expert_tokens(32, 2, 8, 3.6) == pytest.approx(28.8)
    assert routing.hottest_expert_tokens(32, 2, 8, 10) == 32
    with pytest.raises(ValueError, match="imbalance_ratio must be >= 1"):
        routing.hottest_expert_tokens(32, 2, 8, 0.5)


def test_batch_to_reach_the_ridge_inverts_the_intensity():
    m = cat.model("deepseek-v3")
    ridge = roofline.ridge_point(H100, "bf16")
    batch = moe.batch_for_expert_intensity(m, ridge, BF16)
    t = batch * 8 / 256
    assert moe.expert_gemm_intensity(m, t, BF16) == pytest.approx(ridge, rel=1e-9)
    # roughly ridge x N / k tokens: ~300 tokens per expert x 32 = ~10,000 per step
    assert 9_000 < batch < 12_000
    assert moe.batch_for_expert_intensity(m, 1e9, BF16) == np.inf  # beyond the saturation


def test_errors():
    with pytest.raises(ValueError, match=r"top_k \(9\) cannot exceed n_experts \(8\)"):
        routing.tokens_per_expert(10, 9, 8)
    with pytest.raises(ValueError, match="finite"):
        routing.tokens_per_expert(np.nan, 2, 8)
    with pytest.raises(ValueError, match="is dense"):
        moe.expert_gemm_intensity(cat.model("llama-3-8b"), 8)


def test_sweep_is_one_vectorised_call_matching_the_scalar_functions():
    m = cat.model("deepseek-v3")
    gpus = [cat.gpu(g) for g in ("h100-sxm", "h200", "b200", "a100-80gb")]
    batches = np.array([1, 64, 4096])
    sw = moe.intensity_sweep(m, gpus, batches, "fp8")
    assert sw["intensity"].shape == (4, 3)
    for i, g in enumerate(gpus):
        eb = moe.element_bytes(g, "fp8")
        for j, b in enumerate(batches):
            assert sw["intensity"][i, j] == pytest.approx(moe.expert_gemm_intensity(m, b * 8 / 256, eb))
            assert sw["ridge"][i, j] == pytest.approx(roofline.ridge_point(g, eb.compute_dtype))
    # A100 has no FP8 tensor cores: weight-only fp8, bf16 activations, bf16 ridge
    assert moe.element_bytes(gpus[3], "fp8").compute_dtype == "bf16"


def test_decode_step_touches_more_experts_with_batch():
    m = cat.model("deepseek-v3")
    step = moe.decode_step(
        Deployment(m, H200, ParallelLayout(attention_tp=8, ep=8), "fp8"), np.array([1, 64, 4096]), 2048
    )
    assert np.all(np.diff(step.weight_bytes) > 0)  # more experts touched
    assert step.experts_touched[0] == pytest.approx(8)
    assert step.memory_bound[0]


def test_gemm_intensity_vectorised():
    # m = 1: 20,000 FLOPs / (10,000 + 100 + 100) x 2 B; m = 2: 40,000 / (10,000 + 200 + 200) x 2 B
    np.testing.assert_allclose(roofline.gemm_intensity(np.array([1, 2]), 100, 100), [20_000 / 20_400, 40_000 / 20_800])


def test_each_step_gemm_is_rated_against_its_own_dtype():
    # audit M10: DeepSeek-V3 FP8 on an H200 at 64 tokens. The LM head (bf16) at 64 tokens does
    # 2 x 64 x 7,168 x 129,280 FLOPs over 7,168 x 129,280 x 2 B + activations: ~63.4 FLOP/byte, against the
    # bf16 ridge 989.4 / 4.8 = 206 it reaches 30.8% of its peak (the table rated it 15.4% against FP8's 412)
    m = cat.model("deepseek-v3")
    head = moe.step_gemms(Deployment(m, H200, ParallelLayout(), "fp8"), 64)[-1]
    assert head["compute_dtype"] == "bf16"
    flops = 2 * 64 * 7168 * 129_280
    moved = (7168 * 129_280 + 64 * 7168 + 64 * 129_280) * 2
    assert head["intensity"] == pytest.approx(flops / moved)
    assert head["ridge"] == pytest.approx(989.4 / 4.8, rel=1e-3)
    assert head["peak_fraction"] == pytest.approx(flops / moved / (989.4 / 4.8), rel=1e-3)
    assert 0.30 < head["peak_fraction"] < 0.31
    experts = moe.step_gemms(Deployment(m, H200, ParallelLayout(), "fp8"), 64)[0]
    assert experts["compute_dtype"] == "fp8" and experts["ridge"] == pytest.approx(1978.9 / 4.8, rel=1e-3)


def test_latent_moe_batch_to_ridge_by_hand():
    # Nemotron-3-Super: experts run at the latent width w = 1024 (not the hidden 4096), f = 2688, relu2 (2
    # matrices), 512 experts, top-22; FP8 on H200: weights 1 B (+ one fp32 scale per 128 x 128 block: x 1.000244),
    # activations 1 B, outputs 2 B; ridge R = 1978 / 4.8 = 412.083 FLOP/byte.
    # Per token A = 2 x (w f + f w) = 4 x 1024 x 2688 = 11,010,048 FLOPs; weights B = 2 x 1024 x 2688 x 1.000244
    # = 5,506,368 bytes; activations in + out per token C = (w + 2 f) + (f + 2 w) = 3 x (1024 + 2688) = 11,136.
    # t = R B / (A - R C) = 2.26908e9 / 6.42109e6 = 353.38 tokens per expert; batch = t x 512 / 22 = 8,224.
    m = cat.model("nemotron-3-super-120b-a12b")
    eb = moe.element_bytes(H200, "fp8")
    assert moe.batch_for_expert_intensity(m, 1978 / 4.8, eb) == pytest.approx(8224.1, rel=1e-4)


def test_expert_flops_are_twice_the_expert_parameters_for_every_moe_model():
    # one token through one expert multiplies each weight once: 2 FLOPs per parameter (biases aside, < 0.1%)
    from core.model import ffn

    checked = 0
    for mid, m in cat.models.items():
        if m.moe is None:
            continue
        flops, _ = moe.expert_ffn_flops_bytes(m, 1)
        assert flops == pytest.approx(2 * ffn.expert_params(m), rel=1e-3), mid
        checked += 1
    assert checked >= 40
