"""The grouped-GEMM prefill form (issue #35, prefill): ``floor + max(compute, weights) + activations``, where the
activations are the batch's token rows and the local token-expert pairs, moved at HBM bandwidth outside the GEMMs'
overlap (``row_bytes``, ``pair_bytes`` per element).

The measured row is NVIDIA aiconfigurator 0.12.0's h200_sxm/moe/sglang/0.5.10/wideep_context_moe_perf.parquet
(DeepGEMM behind SGLang DeepEP, DeepSeek-V3 FP8, uniform routing), extracted into
catalogs/validation/aic_kernel_cases.yaml as ``aic-moe-deepep-h200-deepseek-v3-fp8-ep256-etp1-t2048``: 4.947 ms for
one MoE layer's routed experts on one H200 at EP 256 with 2,048 tokens per rank."""

from __future__ import annotations

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.efficiency import KernelFactors

cat = load_catalog()
DSV3 = cat.model("deepseek-v3")
H200 = cat.gpu("h200")
MEASURED_S = 4.947e-3  # the table row above
LAYOUT = ParallelLayout(attention_tp=1, attention_dp=256, ep=256, expert_tp=1)
PREC = Precision(weights="fp8", routed_experts="fp8", kv_cache="bf16")


def _work() -> perf.Work:
    # the collector's workload: 2,048 tokens per rank x EP 256 = 524,288 tokens, 8 experts each
    t = 2048 * 256
    return perf.routed_experts_work(Deployment(DSV3, H200, LAYOUT, PREC), t * 8 / 256, t * 8, "prefill", 0, "deepep")


def test_the_work_counts_the_batch_rows_and_the_pairs():
    w = _work()
    # one expert: 3 matrices x 7,168 x 2,048 = 44,040,192 parameters; 2,048 x 8 = 16,384 pairs on the rank
    assert w.flops == pytest.approx(2 * 16_384 * 44_040_192)  # 1.4431e12
    # its one local expert, touched for sure: FP8 + a 4-byte scale per 128 x 128 block (44,040,192 x 1.000244)
    assert w.weight_bytes == pytest.approx(44_040_192 * (1 + 4 / 128**2))
    assert w.family == "grouped_gemm_prefill"
    # rows: every token of the batch x hidden 7,168 = 524,288 x 7,168 = 3.758e9 elements
    assert w.row_elems == pytest.approx(524_288 * 7_168)
    # pairs: 16,384 x (7,168 + 3 x 2,048 = 13,312) = 2.181e8 elements
    assert w.pair_elems == pytest.approx(16_384 * 13_312)


def test_kernel_s_adds_the_activation_traffic_to_the_roofline():
    w = perf.Work(1e12, 1e9, 0.0, 1e15, "grouped_gemm_prefill", row_elems=2e9, pair_elems=5e8)
    f = KernelFactors(compute_eff=0.5, mem_eff=0.8, floor_us=50.0, row_bytes=4.0, pair_bytes=2.0)
    # 50 us + max(1e12 / 0.5e15 = 2 ms, 1e9 / (4e12 x 0.8) = 0.3125 ms) + (2e9 x 4 + 5e8 x 2 = 9e9 B) / 4e12 = 2.25 ms
    assert perf.kernel_s(w, 4e12, f) == pytest.approx(50e-6 + 2e-3 + 2.25e-3)
    # a family without activation factors (decode, weight-only, dense, attention) times the same work as before
    assert perf.kernel_s(w, 4e12, KernelFactors(compute_eff=0.5, mem_eff=0.8, floor_us=50.0)) == pytest.approx(
        50e-6 + 2e-3
    )


def test_the_ep256_row_is_within_the_target_where_the_floor_form_was_not():
    w = _work()
    # the form before the refit, with its shipped H200 factors (compute_eff 0.4623, floor 183.81 us, no activations):
    # 183.81 us + max(1.4431e12 / (1,978e12 x 0.4623) = 1.578 ms, 44.04e6 / (4.8e12 x 0.8) = 0.011 ms) = 1.762 ms,
    # 64% under the measured 4.947 ms (the target is 35% at the 90th percentile)
    old = perf.kernel_s(w, 4.8e12, KernelFactors(compute_eff=0.4623, mem_eff=0.8, floor_us=183.8115))
    assert old == pytest.approx(1.762e-3, rel=2e-3)
    assert abs(old / MEASURED_S - 1) > 0.35
    # the shipped refit: the batch's 524,288 rows x 7,168 channels are moved around the rank's one expert; within 15%
    f = cat.efficiency_for("h200").kernel("grouped_gemm_prefill", "deepep")
    assert f.row_bytes > 0 and f.pair_bytes >= 0
    assert perf.kernel_s(w, 4.8e12, f) == pytest.approx(MEASURED_S, rel=0.15)


def test_other_grouped_families_carry_no_activation_factors():
    eff = cat.efficiency_for("h200")
    for fam in ("grouped_gemm_decode", "grouped_gemm_weight_only"):
        for path in (None, "fused", "trtllm"):
            f = eff.kernel(fam, path)
            assert (f.row_bytes, f.pair_bytes) == (0.0, 0.0), (fam, path)


def _fused_case_work(case_id: str) -> perf.Work:
    from core.validation.case_work import moe_case_work
    from core.validation.cases import parse_case

    case = next(c for c in cat.validation_cases if c["id"] == case_id)
    return moe_case_work(parse_case(case, cat))[0]


def test_a_fused_deepseek_ep8_case_is_timed_on_the_slots_its_collector_computed():
    # h200_sxm/moe/sglang/0.5.14/moe_perf.parquet, DeepSeek-V3 FP8, EP 8, 4,096 tokens entering the layer (512 per
    # GPU x 8). The 0.5.14 collector runs SGLang's FusedMoE on all 4,096 tokens with balanced logits: token t picks
    # experts r, r + 32, ..., r + 224 (r = t mod 32), one in each 32-expert group, so all 8 group scores tie and the
    # grouped top-k keeps groups 0-3 and fills its last 4 slots with experts 0-3. Rank 0 holds experts 0-31 (group
    # 0): 1 routed + 4 filler slots per token = 5 x 4,096 = 20,480 multiplied slots, not the 4,096 of uniform routing.
    w = _fused_case_work("aic-moe-fused-h200-deepseek-v3-fp8-ep8-etp1-t4096")
    # 20,480 slots x 2 x 44,040,192 parameters (3 x 7,168 x 2,048) = 1,803,886,264,320 FLOPs
    assert w.flops == pytest.approx(1_803_886_264_320)
    # every one of the 4,096 x 8 = 32,768 slots passes the buffers (remote ones as zero tiles): x (7,168 + 3 x 2,048)
    assert w.pair_elems == pytest.approx(32_768 * 13_312)  # 436,207,616
    assert w.row_elems == pytest.approx(4_096 * 7_168)  # the 4,096 tokens' rows, as before


def test_a_fused_qwen3_case_at_sglang_0_5_10_computes_every_slot_of_the_tokens_it_holds():
    # a100_sxm/moe/sglang/0.5.10/moe_perf.parquet, Qwen3-235B BF16, EP 4 x expert-TP 2, 4,096 tokens (512 x 8). Balanced
    # logits give token t the experts r, r + 16, ..., r + 112 (r = t mod 16): 2 of them on rank 0's experts 0-31, so
    # every token reaches rank 0, and the 0.5.10 collector computes all 8 slots of each (the 6 remote ones on local
    # expert 0 at weight 0): 32,768 slots instead of 8,192. One slot: 3 x 4,096 x (1,536 / 2) = 9,437,184 parameters.
    w = _fused_case_work("aic-moe-fused-a100-80gb-qwen3-235b-a22b-bf16-ep4-etp2-t4096")
    assert w.flops == pytest.approx(2 * 32_768 * 9_437_184)  # 618,475,290,624
    assert w.row_elems == pytest.approx(4_096 * 4_096)
    assert w.pair_elems == pytest.approx(32_768 * (4_096 + 3 * 768))  # 209,715,200
