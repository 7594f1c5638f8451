"""Prefix-cache tiers (issue 23, core/serving/kv_tiers.py), by hand: Llama-3-8B's bf16 cache is 32 layers x 2 (K, V) x 8 KV
heads x 128 x 2 B = 131,072 B per token; a 32,768-token prompt 90% cached leaves 29,491 cached tokens, a prefix
of 29,491 x 131,072 = 3,865,444,352 B on one GPU (TP 1)."""

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Workload
from core.serving import kv_tiers

cat = load_catalog()
LLAMA, H100, B200 = cat.model("llama-3-8b"), cat.gpu("h100-sxm"), cat.gpu("b200")
EFF = cat.efficiency_for("h100-sxm", "sglang")
WARM = Workload(batch=1, input_len=32_768, output_len=1, prefix_reuse=0.9)
PREFIX = 29_491 * 131_072


def tiers_of(gpu, layout, workload, **kw):
    return kv_tiers.prefix_tiers(Deployment(LLAMA, gpu, layout, "bf16", EFF, workload=workload), **kw)


def test_each_tier_by_hand():
    tiers, recompute = tiers_of(H100, ParallelLayout(), WARM, kv_budget_bytes_per_gpu=40e9, store_gb_per_gpu=4000)
    hbm, host, store = tiers
    # HBM: resident, the 40 GB budget holds 40e9 / 3,865,444,352 = 10.35 prefixes
    assert hbm.load_s == 0 and hbm.sessions_per_gpu == pytest.approx(40e9 / PREFIX)
    # host DRAM: 1,024 GB per node over 8 GPUs = 128 GB each, 33.1 prefixes; PCIe Gen5 x16 64 GB/s x 0.8 + 10 us
    assert (host.link_gbps, host.capacity_bytes_per_gpu) == (64.0, 128e9)
    assert host.load_s == pytest.approx(10e-6 + PREFIX / 51.2e9, rel=1e-12)  # 75.5 ms
    assert host.sessions_per_gpu == pytest.approx(128e9 / PREFIX)
    # store: 4 TB per GPU over the H100's 400G NIC (50 GB/s) x 0.8 + 100 us: 96.7 ms
    assert store.link_gbps == 50.0 and store.load_s == pytest.approx(100e-6 + PREFIX / 40e9, rel=1e-12)
    # recomputing those 29,491 tokens is one prefill step of them on the GPU: longer than either load
    cfg = perf.StepConfig("prefill", 29_491, 29_491)
    assert recompute == pytest.approx(
        perf.step_time(Deployment(LLAMA, H100, ParallelLayout(), "bf16", EFF), cfg).latency_s
    )
    assert store.load_s < recompute


def test_tp_splits_the_prefix_and_no_reuse_has_nothing_to_load():
    # attention TP 2 splits the 8 KV heads: half the prefix on each GPU, half the load time over the same link
    (_, tp1, _), _ = tiers_of(B200, ParallelLayout(), WARM, kv_budget_bytes_per_gpu=1e9, store_gb_per_gpu=1)
    tp2_layout = ParallelLayout(attention_tp=2, expert_tp=2)
    (_, tp2, _), _ = tiers_of(B200, tp2_layout, WARM, kv_budget_bytes_per_gpu=1e9, store_gb_per_gpu=1)
    assert tp2.load_s - 10e-6 == pytest.approx((tp1.load_s - 10e-6) / 2, rel=1e-12)
    tiers, recompute = tiers_of(H100, ParallelLayout(), Workload(), kv_budget_bytes_per_gpu=1e9)
    assert recompute == 0 and all(t.load_s == 0 and t.sessions_per_gpu == 0 for t in tiers) and len(tiers) == 2
