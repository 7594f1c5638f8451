"""Expert imbalance and EPLB's redundant experts priced by the step-time model (issue #20)."""

import numpy as np
import pytest

from core import balance as bal
from core.balance import cost as bc
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout

cat = load_catalog()
DSV3, H200 = cat.model("deepseek-v3"), cat.gpu("h200")
LAY = ParallelLayout(attention_dp=8, ep=8)
D = Deployment(DSV3, H200, LAY, "fp8")  # the default workload: 64 x (2,048 + 512) tokens


def test_mean_gpu_imbalance_by_hand():
    # layer 1: loads 3, 1, 1, 1 -> max / mean = 3 / 1.5 = 2; layer 2: balanced -> 1; mean over layers 1.5
    assert bc.mean_gpu_imbalance([[3, 1, 1, 1], [2, 2, 2, 2]]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="some load"):
        bc.mean_gpu_imbalance([[0, 0]])


def test_redundant_expert_memory_by_hand():
    # 32 replicas over EP 8 = 4 more experts per GPU x 58 MoE layers x 3 x 7,168 x 2,048 params
    # x (1 + 4/16,384) B (FP8 with one fp32 scale per 128 x 128 block) = 10.22 GB (the audit's M6 figure)
    r = bc.redundant_memory(D, 32)
    hand = 4 * 58 * 3 * 7168 * 2048 * (1 + 4 / 16384)
    assert r.extra_bytes == pytest.approx(hand, rel=1e-6) and r.fits
    # Mixtral 8x7B BF16 on RTX 4090s: one more expert per GPU = 3 x 4,096 x 14,336 x 32 layers x 2 B = 11.27 GB
    mixtral = Deployment(cat.model("mixtral-8x7b"), cat.gpu("rtx-4090"), LAY, "bf16")
    mix = bc.redundant_memory(mixtral, 8)
    assert mix.extra_bytes == pytest.approx(3 * 4096 * 14336 * 32 * 2) and not mix.fits
    assert bc.max_fitting_redundant(mixtral) == 0


def test_max_fitting_redundant_is_the_last_round_that_fits():
    most = bc.max_fitting_redundant(D)
    assert most % 8 == 0 and 0 < most < 256
    assert bc.redundant_memory(D, most).fits
    assert not bc.redundant_memory(D, most + 8).fits


def test_imbalance_costs_little_when_memory_bound_and_its_share_when_compute_bound():
    loads = np.stack([bal.zipf_loads(256, 0.8, seed=i) for i in range(58)])
    plan = bal.placement_plan(loads, 8, 1, 8, 32)
    eff = cat.efficiency_for("h200")
    d = D.with_(efficiency=eff)
    dec = bc.imbalance_cost(d, plan, "decode", 8, 2304, 32)
    pre = bc.imbalance_cost(d, plan, "prefill", 8192, 2048, 32)
    assert dec.imbalance_before == pytest.approx(bc.mean_gpu_imbalance(plan.gpu_before))
    assert dec.imbalance_before > 1.3 and dec.imbalance_after < 1.05
    # 8 tokens per GPU: the experts' weight reads set the time, so the busiest GPU's extra tokens cost < 1%,
    # and the 4 extra experts per GPU EPLB places are read too: EPLB makes the decode step slower here
    assert dec.lost_before < 0.01 and dec.lost_after > dec.lost_before
    # an 8K-token prefill chunk: compute-bound experts, the busiest GPU sets the pace; EPLB recovers most of it
    assert pre.lost_before > 0.10 and pre.lost_after < 0.25 * pre.lost_before
    # the token-count bound (all compute) is an upper bound on the priced loss
    assert pre.lost_before < 1 - plan.throughput_before


def test_cold_experts_dead_memory_by_hand():
    # uniform loads over 256 experts: each serves 1/256, so the coldest 25 (25 / 256 = 9.8% <= 10%) are "cold";
    # on EP 8 that is 25 / 8 experts per GPU x 58 MoE layers x 44,040,192 params x (1 + 4/16,384) B = 7.98 GB
    n_cold, nbytes = bc.cold_expert_memory(DSV3, LAY, "fp8", np.ones((58, 256)), 0.1)
    assert n_cold == 25
    assert nbytes == pytest.approx(25 / 8 * 58 * 3 * 7168 * 2048 * (1 + 4 / 16384), rel=1e-6)
    # one hot expert with 90% of the load: the other 255 share 10%, all of them cold
    hot = np.full((1, 256), 0.1 / 255)
    hot[0, 0] = 0.9
    assert bc.cold_expert_memory(DSV3, LAY, "fp8", hot, 0.1)[0] == 255
    with pytest.raises(ValueError, match="fractions"):
        bc.cold_expert_memory(DSV3, LAY, "fp8", np.ones((2, 8)), 0.1)
