"""A colocated replica under a closed loop of clients (issue 23's throughput-vs-interactivity frontier). The first
tests use made-up step costs so every number can be worked by hand; the last ones run the catalog's models."""

import math

import pytest

from core import perf, serving
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision, Workload

# a decode step of n sequences takes 10 ms + 0.1 ms x n (two grid points: the interpolation is exact); a computed
# prompt token 10 us of the replica's time; 8 GPUs; a step carries 8,192 tokens; the cache holds 1,000 sequences
COSTS = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 1000, 8)
WL = Workload(input_len=1000, output_len=100)  # each prompt: 1,000 x 10 us = 10 ms of prefill work


def test_one_client_by_hand():
    # n = x 100 t(n) / (1 - 0.01 x) and n + x TTFT0(n) = 1, TTFT0 = 0.01 + ceil(1000 / (8192 - n)) t(n); below one
    # sequence a step still costs t(1) = 10.1 ms. So x = n / (1.01 + 0.01 n) and n + 0.0201 x = 1. By hand:
    # n = 0.98067 -> x = 0.98067 / 1.0198067 = 0.961624, n + 0.0201 x = 0.999999
    p = serving.serve_closed_loop(COSTS, WL, 1)
    assert p.decoding == pytest.approx(0.98067, abs=2e-5)
    assert p.requests_per_s == pytest.approx(0.961624, rel=2e-5)
    assert p.ttft_s == pytest.approx(0.0201, rel=1e-4)
    assert p.tpot_s == pytest.approx(0.0101 / (1 - 0.00961624), rel=1e-4)  # 10.198 ms: prefill's 1% share
    assert p.regime == "latency-bound"
    # Little's law holds: the client is either waiting for its first token or streaming
    assert p.requests_per_s * (p.ttft_s + 100 * p.tpot_s) == pytest.approx(1.0, rel=1e-6)


def test_a_full_token_budget_by_hand():
    # a step carries 1,100 tokens: prefill and decode finish requests at the same rate when n / 100 = (1100 - n) /
    # 1000, n = 100; each step then decodes 100 (t = 0.01 + 0.0001 x 100 = 20 ms) and prefills 1,000 tokens
    # (10 ms): 30 ms. x = 100 / (100 x 0.03) = 33.33 requests/s; 1,000 clients wait 1000 / 33.33 - 100 x 0.03 = 27 s
    # for their first token
    costs = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 1100, 1000, 8)
    p = serving.serve_closed_loop(costs, WL, 1000)
    assert p.regime == "token budget full"
    assert p.decoding == pytest.approx(100.0)
    assert p.tpot_s == pytest.approx(0.030)
    assert p.requests_per_s == pytest.approx(100 / 3)
    assert p.ttft_s == pytest.approx(27.0)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(100 / 3 * 100 / 8)  # 416.7
    assert p.total_tokens_per_s_per_gpu == pytest.approx(100 / 3 * 1100 / 8)  # 4,583.3
    assert p.prefill_share == pytest.approx(1 / 3)


def test_clients_beyond_the_cache_only_wait():
    costs = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 50, 8)
    at_cap, beyond = (serving.serve_closed_loop(costs, WL, c) for c in (50, 200))
    assert beyond.regime == "KV cache full" and beyond.running == 50
    assert beyond.requests_per_s == pytest.approx(at_cap.requests_per_s)
    assert beyond.tpot_s == pytest.approx(at_cap.tpot_s)
    # Little's law: 200 clients at the same rate, 150 more waiting
    assert beyond.ttft_s == pytest.approx(at_cap.ttft_s + 150 / at_cap.requests_per_s, rel=1e-6)
    sweep = serving.serving_sweep(costs, WL)
    assert [p.concurrency for p in sweep] == [1, 2, 4, 8, 16, 32, 64]  # stops at the first past the cache


def test_more_clients_trade_interactivity_for_throughput():
    pts = serving.serving_sweep(COSTS, WL)
    users = [p.tokens_per_s_per_user for p in pts]
    rates = [p.output_tokens_per_s_per_gpu for p in pts]
    assert users == sorted(users, reverse=True) and rates == sorted(rates)
    assert serving.pareto(pts) == sorted(pts, key=lambda p: -p.tokens_per_s_per_user)


def test_pareto_drops_dominated_points():
    def pt(user, rate):
        return serving.ServingPoint(1, 1, 1, 1, 0.1, 1 / user, rate, rate, 0.1, "latency-bound")

    a, b, c = pt(50, 100), pt(40, 90), pt(20, 300)  # b is slower for users and per GPU than a
    assert serving.pareto([c, b, a]) == [a, c]


cat = load_catalog()


def test_a_decode_only_replica_matches_the_step_time_model():
    # with the prompts' cost and the token budget out of the way, c clients decode c sequences (less the instant of
    # each prompt's one step): c / (t(c) x 8) output tokens/s per GPU
    kimi, b200 = cat.model("kimi-k2.6"), cat.gpu("b200")
    eff = cat.efficiency_for("b200", "vllm")
    lay, prec = ParallelLayout(attention_tp=8, ep=8, dcp=8), Precision(weights="nvfp4", kv_cache="fp8")
    wl = Workload(input_len=67_600, output_len=400)
    costs = serving.replica_costs(Deployment(kimi, b200, lay, prec, eff, workload=wl))
    assert costs.kv_capacity >= 300  # DCP 8: ~39 sequences of 68,000 tokens per GPU
    st = perf.step_time(
        Deployment(kimi, b200, lay, prec, eff), perf.StepConfig("decode", 64 / 8, wl.decode_context_len)
    )
    assert costs.decode_s(64) == pytest.approx(st.step_s)  # 64 is a grid point
    tiny = serving.ReplicaCosts(costs.batch, costs.decode_step_s, 1e-12, 10**9, costs.kv_capacity, 8)
    p = serving.serve_closed_loop(tiny, wl, 64)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(64 / (st.step_s * 8), rel=5e-3)
    assert p.tokens_per_s_per_user == pytest.approx(1 / st.step_s, rel=5e-3)
    assert math.isfinite(p.ttft_s)


def test_a_workload_too_long_for_the_cache_is_refused():
    # 2,000,000 tokens x 61 layers x 576 x 2 bytes (bf16) = 140.5 GB on every TP rank, beside 74 GB of weights
    with pytest.raises(ValueError, match="not one 2,000,000-token sequence"):
        serving.replica_costs(
            Deployment(
                cat.model("kimi-k2.6"),
                cat.gpu("b200"),
                ParallelLayout(attention_tp=8, ep=8),
                Precision(weights="nvfp4", kv_cache="bf16"),
                cat.efficiency_for("b200", "vllm"),
                workload=Workload(input_len=1_999_000, output_len=1000),
            )
        )


def test_speculation_by_hand():
    # one draft token, 1.5 accepted per step: a request takes 100 / 1.5 = 66.67 steps, each verifying 2 tokens per
    # sequence. The 1,100-token budget fills at n = 1100 x 66.67 / (1000 + 66.67 x 2) = 64.706 sequences; a step is
    # t(64.706) + (1100 - 2 x 64.706) x 10 us = 16.4706 + 9.7059 = 26.1765 ms; x = 64.706 / (66.67 x 0.0261765)
    # = 37.078 requests/s; TPOT = 26.1765 / 1.5 = 17.451 ms per output token
    costs = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 1100, 1000, 8, 1, 1.5)
    p = serving.serve_closed_loop(costs, WL, 1000)
    assert p.regime == "token budget full"
    assert p.decoding == pytest.approx(64.706, rel=1e-4)
    assert p.requests_per_s == pytest.approx(37.078, rel=1e-4)
    assert p.tpot_s == pytest.approx(0.017451, rel=1e-4)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(37.078 * 100 / 8, rel=1e-4)
    with pytest.raises(ValueError, match=r"accepted_length must be in \[1, draft_tokens \+ 1 = 2\]"):
        serving.ReplicaCosts((1.0,), (0.01,), 1e-6, 1100, 10, 8, 1, 2.5)


def test_disaggregated_pools_by_hand():
    # decode: COSTS on 2 replicas of 8 GPUs; prefill: 1 replica of 4 GPUs at 10 us a token: a 1,000-token prompt
    # takes 10 ms, 100 prompts/s at most. 2 clients, one per decode replica: n + 0.01 x = 1 with n = 100 x t and
    # t = t(1) = 10.1 ms below one sequence: 1.01 x + 0.01 x = 1, x = 0.980392 per replica (1.960784 in all);
    # TTFT = 2 / 1.960784 - 100 x 0.0101 = 10 ms; 20 GPUs
    prefill = serving.ReplicaCosts((1.0,), (0.01,), 10e-6, 8192, 1000, 4)
    p = serving.serve_disaggregated(COSTS, 2, prefill, 1, WL, 2)
    assert p.requests_per_s == pytest.approx(1.960784, rel=1e-5)
    assert p.tpot_s == pytest.approx(0.0101)
    assert p.ttft_s == pytest.approx(0.010, rel=1e-4)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(1.960784 * 100 / 20, rel=1e-5)
    assert p.prefill_share == pytest.approx(1.960784 / 100, rel=1e-5)
    # a slow prefill pool (1 ms a token: 1 prompt/s) sets the rate for 400 clients: 1 request/s, the decode
    # replicas each see the 0.5 requests/s it lets through (n = 50 x 0.0101 = 0.505 sequences); the rest wait:
    # TTFT = 400 / 1 - 100 x 0.0101 = 398.99 s
    slow = serving.ReplicaCosts((1.0,), (0.01,), 1e-3, 8192, 1000, 4)
    p = serving.serve_disaggregated(COSTS, 2, slow, 1, WL, 400)
    assert p.regime == "prefill pool full"
    assert p.requests_per_s == pytest.approx(1.0)
    assert p.decoding == pytest.approx(2 * 0.505, rel=1e-4)
    assert p.ttft_s == pytest.approx(398.99, rel=1e-5)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(100 / 20)


def test_a_decode_pool_by_hand():
    # prompts prefilled elsewhere in 10 ms: one client, n + 0.01 x = 1 with n = 100 x t(1) = 1.01 x: x = 1 / 1.02
    p = serving.serve_decode_pool(COSTS, WL, 1, 0.010)
    assert p.requests_per_s == pytest.approx(1 / 1.02, rel=1e-5)
    assert p.tpot_s == pytest.approx(0.0101) and p.prefill_share == 0.0
    assert p.ttft_s == pytest.approx(0.010, rel=1e-4)
    with pytest.raises(ValueError, match="ttft_s must be seconds"):
        serving.serve_decode_pool(COSTS, WL, 1, -1.0)


def test_a_saturated_replica_by_hand():
    # 64 sequences in decode (t = 0.0101 + 0.0001 x 63 x 0.109 / 999 ... interpolated: 0.0101 + (0.110 - 0.0101) x 63
    # / 999 = 0.016400 s), each prompt 10 ms of work, room 8,192 - 64 tokens: one chunk per prompt. x = 64 / (100 x
    # 0.016400 + 64 x 0.01) = 64 / 2.2800 = 28.070 requests/s; output 28.070 x 100 / 8 = 350.88 tok/s per GPU
    t64 = 0.0101 + (0.110 - 0.0101) * 63 / 999
    p = serving.serve_saturated(COSTS, WL, 64)
    assert t64 == pytest.approx(0.0164, abs=1e-6)
    assert p.requests_per_s == pytest.approx(64 / (100 * t64 + 0.64), rel=1e-9)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(350.88, rel=1e-4)
    assert p.decoding == 64 and p.ttft_s == pytest.approx(0.01 + t64)  # its own work and the step it rides
    with pytest.raises(ValueError, match="running"):
        serving.serve_saturated(COSTS, WL, 0)


def test_attention_dp_pacing_by_hand():
    # the same replica with a step carrying prompt work 1.5 times longer: the prefill work always (10 ms -> 15 ms
    # per prompt), the decode steps in the share carrying a chunk, 64 / 100 x 1 = 0.64: t = 0.016400 x (1 + 0.5 x
    # 0.64) = 0.021648 s. x = 64 / (100 x 0.021648 + 64 x 0.015) = 64 / 3.1248 = 20.481 requests/s (28.070 without)
    import dataclasses

    paced = dataclasses.replace(COSTS, mixed_step_scale=1.5)
    t = 0.0164 * (1 + 0.5 * 0.64)
    p = serving.serve_saturated(paced, WL, 64)
    assert p.requests_per_s == pytest.approx(64 / 3.1248, rel=1e-4)
    assert p.tpot_s == pytest.approx(t / (1 - p.requests_per_s * 0.015), rel=1e-6)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(256.01, rel=1e-4)
    # a decode pool carries no prompt work: nothing to pace
    pool = serving.serve_decode_pool(paced, WL, 64, 0.5)
    assert pool.tpot_s == pytest.approx(serving.serve_decode_pool(COSTS, WL, 64, 0.5).tpot_s)
    with pytest.raises(ValueError, match="mixed_step_scale"):
        dataclasses.replace(COSTS, mixed_step_scale=0.9)


def test_the_pacing_grows_with_the_attention_dp_ranks():
    # TensorRT-LLM tech blog 10: DeepSeek-V3 on 8 x GB200, DP8 x EP8 in-flight batching, 25,664 TPS against 39,552
    # with every iteration balanced: 39,552 / 25,664 = 1.54115. Other rank counts scale with the expected largest of
    # R standard normals (Tippett: 1 / sqrt(pi) = 0.564190 for 2, 1.029375 for 4, 1.423600 for 8, 1.765991 for 16)
    from core.serving.launch.spec import _expected_max_normal, mixed_step_scale

    assert _expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-5)
    assert _expected_max_normal(4) == pytest.approx(1.029375, abs=1e-5)
    assert _expected_max_normal(16) == pytest.approx(1.765991, abs=1e-5)
    s8 = 39552 / 25664
    assert mixed_step_scale("trtllm", 8) == pytest.approx(s8, abs=1e-4)
    assert mixed_step_scale("trtllm", 1) == 1.0
    assert mixed_step_scale("trtllm", 2) == pytest.approx(1 + (s8 - 1) * 0.564190 / 1.423600, abs=1e-4)  # 1.2145
    assert mixed_step_scale("sglang", 16) == pytest.approx(1 + (s8 - 1) * 1.765991 / 1.423600, abs=1e-4)  # 1.6714
    with pytest.raises(ValueError, match="attention_dp"):
        mixed_step_scale("vllm", 0)


def test_an_attention_dp_replica_is_paced_and_an_attention_tp_one_is_not():
    cat = load_catalog()
    d = Deployment(
        cat.model("deepseek-v3"),
        cat.gpu("b200"),
        ParallelLayout(attention_dp=8, ep=8),
        Precision(weights="fp8", kv_cache="fp8", routed_experts="nvfp4"),
        cat.efficiency_for("b200", "trtllm"),
        workload=Workload(input_len=1024, output_len=2048),
    )
    costs = serving.replica_costs(d, batches=(64.0, 512.0))
    assert costs.batch == (64.0, 512.0) and costs.mixed_step_scale == pytest.approx(39552 / 25664, abs=1e-4)
    tp = serving.replica_costs(d.with_layout(ParallelLayout(attention_tp=8, ep=8)), batches=(64.0,))
    assert tp.mixed_step_scale == 1.0
