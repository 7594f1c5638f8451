"""The Layouts page's throughput-vs-interactivity sweep reaches each replica's own KV capacity (layouts review 3
M10): the clients grid no longer stops at 4,096 per replica, and a decode pool's cache fills with sequences in
decode (its prompts wait in the prefill pool), so the top decode plan's curve ends at the table's operating point."""

from urllib.parse import parse_qsl

import pytest

from core import serving
from core.catalog import load_catalog
from core.deployment.specs import Workload
from core.scenario import scenario_from_params
from core.serving import layout

# a decode step of n sequences takes 10 ms + 0.1 ms x (n - 1) (two grid points: the interpolation is exact); a
# computed prompt token 10 us; 8 GPUs; a step carries 8,192 tokens; the cache holds 50 sequences
SMALL = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 50, 8)
WL = Workload(input_len=1000, output_len=100)


def test_a_decode_pool_fills_its_cache_by_hand():
    # t(50) = 10.1 + 99.9 x 49 / 999 = 15.0 ms; with its cache full (50 in decode) the replica finishes
    # x = 50 / (100 x 0.015) = 33.33 requests/s; clients prefilled elsewhere in 1 s: 50 + 33.33 x 1 = 83.3 fill it.
    # 128 clients: 50 in decode, TPOT 15 ms, TTFT = 128 / 33.33 - 100 x 0.015 = 2.34 s, 33.33 x 100 / 8 = 416.7
    # output tok/s per GPU. Before, the prompts waiting for prefill held the decode cache too (n + x = 50: ~28 in
    # decode whatever the clients)
    p = serving.serve_decode_pool(SMALL, WL, 128, 1.0)
    assert p.decoding == pytest.approx(50.0, rel=1e-9)
    assert p.tpot_s == pytest.approx(0.015, rel=1e-9)
    assert p.requests_per_s == pytest.approx(100 / 3, rel=1e-9)
    assert p.ttft_s == pytest.approx(128 * 0.03 - 1.5, rel=1e-9)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(416.67, rel=1e-4)
    assert p.regime == "KV cache full"
    # the sweep runs 1, 2, 4, ... to the first that fills it (83.3 clients): 128
    sweep = serving.serving_sweep(SMALL, WL, ttft_s=1.0)
    assert [q.concurrency for q in sweep] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert sweep[-2].regime == "latency-bound" and sweep[-2].decoding < 50
    # colocated, a prompt in prefill holds the cache: the sweep stops at the first past the 50 it holds
    assert [q.concurrency for q in serving.serving_sweep(SMALL, WL)][-1] == 64


def test_the_clients_grid_has_no_4096_cap():
    # a replica holding 20,880 sequences (DP-attn72 · EP72 at 290 per GPU): the grid reaches 32,768 = 2^15, the
    # first power of two past 20,880 (it stopped at 4,096 = 57 per GPU)
    big = serving.ReplicaCosts((1.0, 30000.0), (0.0101, 0.110), 10e-6, 8192 * 72, 20880, 72)
    sweep = serving.serving_sweep(big, WL)
    assert sweep[-1].concurrency == 32768 and sweep[-1].regime == "KV cache full"
    assert len(sweep) == 16


def test_the_top_decode_plans_curve_reaches_the_table():
    # the review's S2d (LMSYS's decode pool: DeepSeek-V3 FP8 on 9 x 8 H100, 2,000 in / 100 out): the table's #1 is
    # DP-attn72 · EP72 with two-batch overlap at 290 sequences per GPU (its KV capacity), TPOT 91.14 ms:
    # 290 / 0.09114 = 3,182 output tok/s per GPU (3,163 at 91.68 ms before the refit with MiniMax-M3's 64-client runs
    # raised the overlap efficiency, 3,115 at 93.11 ms before the whole-step refit on the served composition). As a
    # decode pool fed at the best prefill plan's TTFT, its curve
    # ends there (it stopped at 4,096 clients = 57 per GPU, 1,238 tok/s per GPU)
    cat = load_catalog()
    url = "model=deepseek-v3&gpu=h100-sxm&nodes=9&gpn=8&w=fp8&isl=2000&osl=100"
    sc, _ = scenario_from_params(dict(parse_qsl(url)), cat)
    d = layout.search_deployment(sc, cat, cat.model(sc.model_id))
    best = layout.recommend(d, "decode", catalog=cat, target_s=0.1)[0]
    prefill = layout.recommend(d, "prefill", catalog=cat, target_s=3.0)[0]
    assert (best.label, best.overlap, round(best.tokens_per_gpu)) == ("DP-attn72 · EP72", "two_batch", 290)
    assert best.tokens_per_s_per_gpu == pytest.approx(3182, rel=2e-3)
    one = d.with_layout(best.layout.model_copy(update={"dp": 1}), best.redundant_experts)
    costs = serving.replica_costs(one, overlap=best.overlap)
    assert costs.kv_capacity == 290 * 72
    end = serving.serving_sweep(costs, sc.workload, ttft_s=prefill.latency_s)[-1]
    assert end.concurrency / 72 >= 290
    assert end.decoding / 72 == pytest.approx(290, rel=1e-9)
    assert end.tpot_s == pytest.approx(0.09114, rel=2e-3)
    assert end.output_tokens_per_s_per_gpu == pytest.approx(3182, rel=2e-3)
    with pytest.raises(ValueError, match="overlap must be none or two_batch"):
        serving.replica_costs(one, overlap="both")
    # the Layouts page's curves and SLO runs time each top plan the same way: its own overlap, one replica (it
    # timed every plan without overlap: the EP72 pool's curve ended at 2,876 tok/s per GPU, not the table's 3,155 then)
    from ui.layout_frontiers import top_costs

    ((label, page_costs),) = top_costs(d, [best])
    assert label == "DP-attn72 · EP72" and page_costs == costs
