"""Pool sizing, KV hand-off and cost arithmetic."""

import numpy as np
import pytest

from core.catalog import load_catalog
from core.deployment.specs import ParallelLayout
from core.hardware import ClusterSpec
from core.serving import cost, disagg
from tests.unit._search import search

cat = load_catalog()
L70 = cat.model("llama-3-70b")
NODE = ClusterSpec(gpu=cat.gpu("h100-sxm"), num_nodes=1, gpus_per_node=8)


def test_kv_per_request_llama3_70b():
    # 2 x 80 layers x 8 KV heads x 2,048 tokens x 128 x 2 B = 671,088,640 B ~ 0.67 GB (the source's "8 GB" is an erratum)
    assert disagg.kv_bytes_per_request(L70, 2048) == 2 * 80 * 8 * 2048 * 128 * 2


def test_review_scenario_kv_stream_vs_infiniband_hdr():
    # 3,000 req/min x 1,500-token prompts: 50/s x 1,500 x 327,680 B = 24.58 GB/s, 98% of one HDR port (25 GB/s)
    t = disagg.Traffic(3000, 1500, 800)
    s = disagg.size_pools(search(L70, NODE, precision="bf16"), t, catalog=cat)
    assert s.kv_bytes_per_s == pytest.approx(50 * 1500 * 327_680)
    assert disagg.link_utilisation(s.kv_bytes_per_s, 1, 25) == pytest.approx(0.983, abs=0.001)
    assert disagg.link_utilisation(s.kv_bytes_per_s, s.prefill_gpus, 25) < 0.2  # spread over the pool's NICs


def test_pool_sizes_follow_the_per_gpu_rates():
    t = disagg.Traffic(3000, 1500, 800)
    s = disagg.size_pools(search(L70, NODE), t, catalog=cat)
    p, d = s.prefill_plan, s.decode_plan
    # pools: whole replicas covering the work; 50 x 1,500 = 75,000 prompt tokens/s, 50 x 800 = 40,000 output tokens/s
    assert (
        s.prefill_gpus >= 75_000 / p.tokens_per_s_per_gpu
        and s.prefill_gpus % (p.layout.gpus_per_stage * p.layout.pp) == 0
    )
    assert s.decode_gpus >= 40_000 / d.tokens_per_s_per_gpu
    assert s.prefill_gpus - 75_000 / p.tokens_per_s_per_gpu < p.layout.gpus_per_stage * p.layout.pp
    # colocated: both works x (1 + interference)
    work = 75_000 / p.tokens_per_s_per_gpu + 40_000 / d.tokens_per_s_per_gpu
    assert s.colocated_gpus >= 1.3 * work
    # Little's law: sequences in flight = output tokens/s x step time
    assert s.concurrent_sequences == pytest.approx(40_000 * d.step_s)
    faster = disagg.size_pools(search(L70, NODE), t, catalog=cat, decode_speedup=2.0, plans=(p, d))
    assert faster.decode_gpus < s.decode_gpus


def test_break_even_exists_and_disaggregation_pays_at_scale():
    t = disagg.Traffic(3000, 1500, 800)
    rates = np.geomspace(10, 100_000, 25)
    colo, dis, even = disagg.break_even_rate(search(L70, NODE), t, rates, catalog=cat)
    assert even is not None and 10 < even < 100_000
    assert dis[-1] <= colo[-1] and dis[0] >= colo[0]


def test_cost_arithmetic():
    # 8 GPUs x $3/h = $24/h for 10,000 tokens/s = 36M tokens/h -> $0.667 per million
    assert cost.dollars_per_million_tokens(8, 3.0, 10_000) == pytest.approx(24 / 36)
    # the chapter's 2.52x on 2 x H100 at $3/GPU-hour: 2 x 1.52 x 3 x 8760 = $79,891 a year
    assert cost.yearly_saving(2, 3.0, 2.52) == pytest.approx(79_891.2)
    with pytest.raises(ValueError, match="tokens_per_s"):
        cost.dollars_per_million_tokens(8, 3.0, 0)


def test_bad_traffic():
    with pytest.raises(ValueError, match="requests_per_min"):
        disagg.Traffic(0, 100, 100)
    with pytest.raises(ValueError, match="input_len"):
        disagg.Traffic(10, 0, 100)


def test_pool_utilisation_and_the_yearly_value_of_whole_gpus():
    from core.serving import cost, disagg
    from core.serving import layout as L

    # a decode plan of 2,000 output tokens/s per GPU on 8-GPU replicas: 1,000 tokens/s of traffic needs 0.5 GPU,
    # the pool is one replica of 8 GPUs: 0.5 / 8 = 6.25% busy
    q = cat.model("deepseek-v3")
    lay = ParallelLayout(attention_dp=8, ep=8)
    dec = L.Plan(lay, "decode", 0, 100.0, 0.05, 2000.0, 1.0)
    pre = L.Plan(lay, "prefill", 0, 8192.0, 1.0, 8000.0, 1.0)
    t = disagg.Traffic(requests_per_min=60.0, input_len=4000, output_len=1000)  # 4,000 in / 1,000 out per s
    h200 = ClusterSpec(gpu=cat.gpu("h200"), num_nodes=1)
    s = disagg.size_pools(search(q, h200), t, catalog=cat, plans=(pre, dec), interference=0.0)
    assert s.decode_gpus == 8 and s.decode_utilisation == pytest.approx(0.5 / 8)
    assert s.prefill_gpus == 8 and s.prefill_utilisation == pytest.approx(0.5 / 8)  # 4,000 / 8,000 = 0.5 GPU
    assert s.colocated_gpus == 8 and s.colocated_utilisation == pytest.approx(1.0 / 8)
    # 3 whole GPUs at $2.50/h around the clock: 3 x 2.5 x 8,760 = $65,700 a year
    assert cost.yearly_gpu_cost(3, 2.5) == pytest.approx(65_700.0)
