"""The engine simulator (issue 35). The first tests use made-up step costs so every number can be worked by hand;
the ones marked "catalog" run DeepSeek-V3 FP8 on 8 x H200 against the analytical model of core.serving."""

import dataclasses
import math

import numpy as np
import pytest

from core import serving
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Workload
from core.serving.engine_sim import (
    SWEEP_SHARES,
    EngineKnobs,
    Lengths,
    SimResult,
    acceptance_rate,
    emitted_per_step,
    goodput,
    goodput_rate,
    load_sweep,
    open_capacity,
    simulate_closed,
    simulate_disaggregated,
    simulate_open,
    sweep_goodput,
    weighted_quantile,
    workload_knobs,
    workload_lengths,
)
from core.serving.engine_sim.engine import run_engine
from core.serving.workload_profiles import profile

# a decode step of n sequences takes 10 ms + 0.1 ms x n (n >= 1; below one sequence, and a prefill-only step,
# 10.1 ms: the grid's first point); a computed prompt token 10 us; a step carries 8,192 tokens; the KV cache holds
# 1,000 sequences; 8 GPUs
COSTS = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 1000, 8)


def test_one_request_alone_by_hand():
    # a 20,000-token prompt takes ceil(20000 / 8192) = 3 chunk steps of 8,192, 8,192 and 3,616 tokens, none
    # decoding: (0.0101 + 0.08192) x 2 + (0.0101 + 0.03616) = 0.23030 s to the first token; then 99 decode steps of
    # one sequence, t(1) = 10.1 ms each: TPOT 10.1 ms, end to end 0.2303 + 0.9999 = 1.2302 s. One client: each
    # request alone; the span from request 0's arrival to request 2's holds two finishes: 1 / 1.2302 requests/s
    r = simulate_closed(COSTS, Lengths.exact(20_000, 100), 1, requests=3, warmup=0)
    assert r.ttft_s == pytest.approx([0.2303] * 3, rel=1e-9)
    assert r.tpot_s == pytest.approx([0.0101] * 3, rel=1e-9)
    assert r.e2e_s == pytest.approx([1.2302] * 3, rel=1e-9)
    assert r.percentile("itl", 0.99) == pytest.approx(0.0101)
    assert r.gap_count.sum() == 2 * 99  # the span's two requests' gaps
    assert r.requests_per_s == pytest.approx(1 / 1.2302, rel=1e-9)
    assert r.output_tokens_per_s_per_gpu == pytest.approx(100 / 1.2302 / 8, rel=1e-9)


def test_a_calibrated_ttft_offset_by_hand():
    # the same lone requests with a served calibration's 0.3 s per-request offset (front end, queue; no GPU time):
    # TTFT 0.2303 + 0.3 = 0.5303 s, end to end 1.5302 s, TPOT unchanged; the client's next request reaches the
    # engine 0.3 s later, so 1 / 1.5302 requests/s
    late = dataclasses.replace(COSTS, ttft_offset_s=0.3)
    r = simulate_closed(late, Lengths.exact(20_000, 100), 1, requests=3, warmup=0)
    assert r.ttft_s == pytest.approx([0.5303] * 3, rel=1e-9)
    assert r.tpot_s == pytest.approx([0.0101] * 3, rel=1e-9)
    assert r.e2e_s == pytest.approx([1.5302] * 3, rel=1e-9)
    assert r.requests_per_s == pytest.approx(1 / 1.5302, rel=1e-9)
    # open loop: the same arrivals (same seed) reach the engine; every TTFT is 0.3 s longer, no TPOT moves
    lens = Lengths.exact(2000, 100)
    a, b = simulate_open(COSTS, lens, 5.0, requests=200), simulate_open(late, lens, 5.0, requests=200)
    assert b.ttft_s == pytest.approx(a.ttft_s + 0.3, rel=1e-12)
    assert np.array_equal(a.tpot_s, b.tpot_s, equal_nan=True)


cat = load_catalog()
DS, H200, EFF = cat.model("deepseek-v3"), cat.gpu("h200"), cat.efficiency_for("h200", "vllm")
WL = Workload(input_len=2048, output_len=512)


def _costs(layout: ParallelLayout) -> serving.ReplicaCosts:
    return serving.replica_costs(Deployment(DS, H200, layout, "fp8", EFF, workload=WL))


def test_a_lone_prompt_waits_for_its_own_prefill_not_a_full_budget_catalog():
    # numbers audit 3 B3.7: DP-attn8 x EP8, a 2,048-token prompt at near-zero load rides a step carrying its own
    # 2,048 tokens: t(0) + 2048 x 1.3452e-5 = 0.0124 + 0.0275 = 0.0400 s, not the full 65,536-token step's
    # 0.0124 + 65,536 x 1.3452e-5 = 0.0124 + 0.8816 = 0.894 s (before the refit with MiniMax-M3's 64-client cookbook
    # runs: 1.3274e-5 s per prompt token, 0.0396 / 0.882 s; before the whole-step refit on the served composition:
    # 1.2810e-5 s, 0.0386 / 0.852 s). The step carrying it runs on one of the 8 attention ranks, the others waiting at
    # every MoE layer: x 1.5412 (TensorRT-LLM tech blog 10's DP8 pacing, assumed for vLLM), 0.0616 s
    costs = _costs(ParallelLayout(attention_dp=8, ep=8))
    own = costs.decode_s(0) + 2048 * costs.prefill_s_per_token
    full = costs.decode_s(0) + costs.budget_tokens * costs.prefill_s_per_token
    assert own == pytest.approx(0.0400, abs=5e-4) and full == pytest.approx(0.894, abs=5e-3)
    assert costs.mixed_step_scale == pytest.approx(39552 / 25664, abs=1e-4)
    r = simulate_open(costs, Lengths.exact(2048, 512), 0.01, requests=200)
    assert r.stable and r.percentile("ttft", 0.5) == pytest.approx(own * 1.5412, rel=1e-6)
    assert float(np.mean(r.ttft_s)) < 1.1 * 1.5412 * own < full / 10
    # the closed loop at one client says the same as serving's (0.062 s)
    one = simulate_closed(costs, Lengths.exact(2048, 512), 1, requests=20)
    assert one.percentile("ttft", 0.99) == pytest.approx(serving.serve_closed_loop(costs, WL, 1).ttft_s, rel=1e-3)


@pytest.mark.parametrize("c", [1, 16, 128, 512])
def test_the_closed_loop_agrees_with_the_analytical_steady_state_catalog(c):
    # TP8 x EP8 (a 253-sequence cache: 512 clients fill it). Staggered clients (the analytical model's steady
    # state): throughput and mean TPOT within 5%, median TTFT within 10% (measured at c = 1 / 16 / 128 / 512: rates
    # +1.6 / +0.4 / -0.2 / +2.2%, TPOT -1.4 / -0.2 / -0.1 / -0.1%, TTFT 0 / -0.9 / -0.1 / -0.6%; the simulator counts
    # 511 decode steps after the first token where serving counts 512)
    costs = _costs(ParallelLayout(attention_tp=8, ep=8))
    a = serving.serve_closed_loop(costs, WL, c)
    r = simulate_closed(costs, Lengths.exact(2048, 512), c, stagger=True)
    assert r.requests_per_s == pytest.approx(a.requests_per_s, rel=0.05)
    assert r.output_tokens_per_s_per_gpu == pytest.approx(a.output_tokens_per_s_per_gpu, rel=0.05)
    assert r.summary().mean_tpot_s == pytest.approx(a.tpot_s, rel=0.05)
    assert r.percentile("ttft", 0.5) == pytest.approx(a.ttft_s, rel=0.10)
    # clients starting together (a benchmark's start) stay in lockstep with equal lengths: same throughput, but a
    # prompt shares its step with its wave's (TTFT up to the wave's prefill: 2 clients 0.105 s against 0.056 s).
    # In lockstep the requests finish in bursts, and the rate counts the finishes between the first and the last
    # measured arrival: a window of 2,000 requests over waves of up to 253 counts part of a burst too many. At
    # 512 clients: 1,997 finishes in 266.2 s = 7.502 requests/s against the analytical 7.008 (+7.1%; +6.1% before
    # f872da5's fused prefill refit cut a prompt's prefill from 0.0700 to 0.0495 s, which moved the waves against
    # the window), +1.3% over 8,000 requests, +0.19% over 20,000. Over 20,000 requests, c = 1 / 16 / 128 / 512: +1.6 / +0.4 /
    # +0.3 / +0.2% (at one client the analytical model stretches TPOT by the prefill share, as for the staggered run)
    lock = simulate_closed(costs, Lengths.exact(2048, 512), c, requests=20_000)
    assert lock.requests_per_s == pytest.approx(a.requests_per_s, rel=0.03)
    assert lock.percentile("ttft", 0.5) >= 0.99 * r.percentile("ttft", 0.5)


def test_clients_beyond_the_kv_cache_queue_by_hand():
    # a 4-sequence cache, 1,000-token prompts, 100 output tokens, clients in lockstep. 4 clients: one prefill step of
    # 4,000 tokens (0.0101 + 0.04 = 0.0501 s), 99 steps of t(4) = 10.4 ms: 1.0797 s a wave, 4 / 1.0797 = 3.7048
    # requests/s. 8 clients: two waves take turns; each request waits for the other wave's 1.0797 s, then its own
    # prefill step: TTFT 1.1298 s, the same 3.7048 requests/s (Little: 8 = 3.7048 x (1.1298 + 1.0296))
    costs = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 4, 8)
    four, eight = (simulate_closed(costs, Lengths.exact(1000, 100), c, requests=200) for c in (4, 8))
    assert four.ttft_s == pytest.approx([0.0501] * 200, rel=1e-6)
    assert four.requests_per_s == pytest.approx(4 / 1.0797, rel=1e-3)
    assert eight.ttft_s == pytest.approx([1.1298] * 200, rel=1e-6)
    assert eight.requests_per_s == pytest.approx(4 / 1.0797, rel=1e-3)
    assert eight.percentile("tpot", 0.99) == pytest.approx(0.0104)
    # the running limit binds the same way when it, not the cache, is the smaller
    capped = simulate_closed(COSTS, Lengths.exact(1000, 100), 8, EngineKnobs(max_running_requests=4), requests=200)
    assert capped.ttft_s == pytest.approx(eight.ttft_s, rel=1e-9)


def test_poisson_arrivals_light_and_beyond_capacity():
    # 0.05 requests/s of 1,000 in / 100 out: a request lives ~1.02 s, so ~5% arrive while another runs (and wait
    # for its step to end, at most 10.2 ms). Alone: t(0) + 1,000 x 10 us = 20.1 ms to the first token
    light = simulate_open(COSTS, Lengths.exact(1000, 100), 0.05)
    assert light.stable and light.percentile("ttft", 0.5) == pytest.approx(0.0201, rel=1e-9)
    assert float(np.mean(light.ttft_s)) == pytest.approx(0.0201, rel=0.05)
    assert light.requests_per_s == pytest.approx(0.05, rel=0.1)
    # prompts alone take 10 ms of every request: 100 requests/s at most; at 200/s the queue grows
    over = simulate_open(COSTS, Lengths.exact(1000, 100), 200.0)
    assert not over.stable and over.requests_per_s < 110
    assert math.isinf(over.percentile("ttft", 0.99)) and math.isinf(over.summary().ttft_s["P50"])
    assert over.ttft_s[-100:].mean() > 5 * over.ttft_s[:100].mean()  # each later arrival waits longer


def test_speculative_verify_by_hand():
    # one draft token, every draft accepted (accepted_length 2 = draft + 1): each step emits 2 tokens. The verify
    # step costs what the plain one does (draft cost 0, verify = plain): 100 tokens after the first in 50 steps of
    # 10.1 ms, TPOT = 0.505 s / 100 = 5.05 ms, half the plain 10.1 ms
    spec = serving.ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 1000, 8, 1, 2.0)
    plain = simulate_closed(COSTS, Lengths.exact(1000, 101), 1, requests=20)
    r = simulate_closed(spec, Lengths.exact(1000, 101), 1, requests=20)
    assert plain.tpot_s == pytest.approx([0.0101] * 20) and r.tpot_s == pytest.approx([0.00505] * 20)
    assert r.percentile("itl", 0.5) == pytest.approx(0.0101)  # one gap per step: two tokens arrive together
    # three drafts, 2 accepted on average (random per step): alpha solves 1 + a + a^2 + a^3 = 2 (a = 0.5437)
    alpha = acceptance_rate(3, 2.0)
    assert 1 + alpha + alpha**2 + alpha**3 == pytest.approx(2.0) and alpha == pytest.approx(0.5437, abs=1e-4)
    draws = emitted_per_step(3, 2.0, 200_000, np.random.default_rng(1))
    assert draws.min() == 1 and draws.max() == 4 and draws.mean() == pytest.approx(2.0, rel=0.01)
    three = simulate_closed(COSTS, Lengths.exact(1000, 1001), 1, EngineKnobs(draft_tokens=3, accepted_length=2.0))
    assert float(np.mean(three.tpot_s)) == pytest.approx(0.00505, rel=0.02)
    # a step verifies 4 tokens per sequence: an 8-token budget decodes 2 sequences at most
    assert EngineKnobs(token_budget=8, draft_tokens=3, accepted_length=2.0).resolve(COSTS).cap == 2


def _gaps(prefill_first: bool):
    # request 0 (1,000-token prompt, 100 out) at t = 0, request 1 at t = 0.5 s, straight through the loop
    table = [0.0101 + 0.0001 * max(n - 1, 0) for n in range(3)]  # t(0) = t(1) = 10.1 ms, t(2) = 10.2 ms
    return run_engine(
        table, 10e-6, 8192, 1, 2, prefill_first, np.array([1000, 1000]), np.array([99, 99]), arrivals=np.array([0, 0.5])
    )


def test_prefill_first_stalls_the_decodes_by_hand():
    # request 0: first token at 0.0201 s, then a step every 10.1 ms; request 1 arrives during the 48th, which ends
    # at 0.0201 + 48 x 0.0101 = 0.5049 s. Decode first: the next step decodes request 0 and prefills request 1,
    # 0.0101 + 0.01 = 20.1 ms (request 0's longest gap); TTFT 0.5250 - 0.5 = 0.025 s. Prefill first: a prefill-only
    # step (20.1 ms, request 0 stalls), then both decode (t(2) = 10.2 ms): request 0 waits 0.5352 - 0.5049 = 30.3 ms
    df, pf = _gaps(False), _gaps(True)
    assert df.first_t[1] - 0.5 == pytest.approx(0.025) and pf.first_t[1] - 0.5 == pytest.approx(0.025)
    assert df.gap_s.max() == pytest.approx(0.0201)
    assert pf.gap_s.max() == pytest.approx(0.0303) and pf.gap_count[np.argmax(pf.gap_s)] == 1


def test_the_same_seed_gives_the_same_run():
    lengths = Lengths.from_profile(profile("chat"))
    knobs = EngineKnobs(prefix_hit=0.4, draft_tokens=2, accepted_length=1.8, seed=7)
    a, b = (simulate_open(COSTS, lengths, 20.0, knobs, requests=300) for _ in range(2))
    for f in ("ttft_s", "tpot_s", "e2e_s", "input_tokens", "output_tokens", "gap_s", "gap_count"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
    c = simulate_open(COSTS, lengths, 20.0, EngineKnobs(prefix_hit=0.4, draft_tokens=2, accepted_length=1.8, seed=8))
    assert not np.array_equal(a.input_tokens, c.input_tokens)


def test_the_lognormal_fit_reproduces_the_profiles_median_and_p90():
    # chat: prompts median 1,020, p90 2,735 (sigma = ln(2735 / 1020) / 1.2816 = 0.7696); outputs 129 / 424
    lengths = Lengths.from_profile(profile("chat"))
    assert lengths.sigma("input") == pytest.approx(0.7696, abs=1e-4)
    inp, out = lengths.draw(200_000, np.random.default_rng(3))
    assert np.median(inp) == pytest.approx(1020, rel=0.01) and np.quantile(inp, 0.9) == pytest.approx(2735, rel=0.015)
    assert np.median(out) == pytest.approx(129, rel=0.015) and np.quantile(out, 0.9) == pytest.approx(424, rel=0.015)
    # clipped to [1, the 99.9th percentile]: 1,020 x exp(3.0902 x 0.7696) = 11,003
    assert inp.min() >= 1 and inp.max() == lengths.clip("input") == 11_003
    fixed_in, fixed_out = Lengths.exact(8192, 1024).draw(5, np.random.default_rng(0))
    assert fixed_in.tolist() == [8192] * 5 and fixed_out.tolist() == [1024] * 5


def test_bad_knobs_are_refused_naming_the_field_and_range():
    cases = [
        (
            lambda: EngineKnobs(max_running_requests=0),
            r"max_running_requests must be a whole number in 1\.\.10,000,000",
        ),
        (lambda: EngineKnobs(token_budget=2.5), r"token_budget must be a whole number in 1\.\.1,000,000,000"),
        (lambda: EngineKnobs(policy="fifo"), "policy must be one of decode_first, prefill_first"),
        (lambda: EngineKnobs(prefix_hit=1.0), r"prefix_hit must be a share in \[0, 0.99\]"),
        (lambda: EngineKnobs(draft_tokens=65), r"draft_tokens must be a whole number in 0\.\.64"),
        (lambda: EngineKnobs(draft_tokens=1, accepted_length=2.5).resolve(COSTS), r"accepted_length must be in \[1, "),
        (lambda: EngineKnobs(seed=-1), "seed must be a whole number"),
        (lambda: Lengths(1000, 500, 10, 10), "input_p90 must be at least input_median"),
        (lambda: Lengths(1000, 1000, 10, 20, fixed=True), "output_p90 must be equal to output_median"),
        (lambda: simulate_closed(COSTS, Lengths.exact(10, 10), 0), r"concurrency must be a whole number in 1\.\."),
        (
            lambda: simulate_open(COSTS, Lengths.exact(10, 10), -1.0),
            r"rate must be a finite number in \[1e-06, 1e\+09\]",
        ),
        (lambda: simulate_open(COSTS, Lengths.exact(10, 10), 1e-9), r"rate must be a finite number in \[1e-06, "),
        (
            lambda: simulate_open(COSTS, Lengths.exact(10, 10), 1.0, requests=10**7),
            r"requests must be .* 1\.\.1,000,000",
        ),
        # 2,200 requests (200 warm-up) x 1,000,000 prompt tokens / 8,192 = 268,555 steps is allowed; x 2 is not
        (
            lambda: simulate_open(COSTS, Lengths.exact(2_000_000, 10), 1.0, requests=2000, warmup=200),
            r"requests x mean computed prompt tokens / token_budget must be at most 500,000 prefill steps in one run, "
            r"got 5\.37e\+05 \(2,200 requests",
        ),
        # at least 1,350 requests (1,000 measured, a tenth more warm-up, a quarter more after) of 200,000 tokens after
        # the first, 3.9 a step: ~51,282 steps each, ~69 million in all
        (
            lambda: simulate_open(
                COSTS, Lengths.exact(10, 200_001), 1.0, EngineKnobs(draft_tokens=3, accepted_length=3.9), requests=1000
            ),
            r"requests x output tokens / accepted_length must be at most 50,000,000 speculative decode steps",
        ),
        (lambda: emitted_per_step(1, 1.5, 10**9, np.random.default_rng(0)), r"size must be a whole number in 0\.\."),
        (
            lambda: emitted_per_step(1, 2.5, 10, np.random.default_rng(0)),
            r"accepted_length must be a finite number in \[1, 2\]",
        ),
        (lambda: acceptance_rate(65, 2.0), r"draft_tokens must be a whole number in 0\.\.64"),
        (lambda: weighted_quantile(np.array([1.0]), np.array([-1.0]), 0.5), r"weights must be numbers in \[0, 1e12\]"),
        (lambda: weighted_quantile(np.array([math.nan]), np.array([1.0]), 0.5), "values must be finite"),
        (lambda: goodput([], math.nan, 0.1), r"ttft_target_s must be a finite number in \(0, 3600\]"),
        (lambda: Lengths(10, 10, 10, 10, fixed="yes"), "fixed must be True or False"),
        (lambda: simulate_closed(COSTS, Lengths.exact(10, 10), 1, think_s=-1), r"think_s must be a finite number"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_goodput_is_the_last_load_meeting_both_targets():
    def point(load, ttft, tpot, stable=True):
        n = np.ones(10)
        return SimResult("open", load, ttft * n, tpot * n, n, n, n, n, n, 10, 1000, 1.0, 8, stable)

    sweep = [point(1, 0.1, 0.02), point(2, 0.2, 0.03), point(4, 0.5, 0.06), point(8, 2.0, 0.04)]
    g = goodput(sweep, ttft_target_s=1.0, tpot_target_s=0.05)
    assert g.load == 2 and g.binding == "TPOT" and g.output_tokens_per_s_per_gpu == pytest.approx(1000 / 8)
    assert goodput(sweep, 0.05, 0.05).binding == "none met"
    assert goodput([point(1, 0.1, 0.02), point(2, 0.1, 0.02, stable=False)], 1, 1).binding == "unstable"
    # by bisection on Poisson rates: the point found meets both targets
    found = goodput_rate(COSTS, Lengths.exact(1000, 100), 0.5, 0.015, requests=300, iterations=6)
    assert found.at is not None and found.at.percentile("tpot", 0.99) <= 0.015 and found.binding in ("TPOT", "TTFT")


def test_disaggregated_pools_by_hand():
    # a lone request: the prefill replica computes 1,000 tokens alone (20.1 ms: TTFT); the KV moves in 50 ms; the
    # idle decode replica's first step ends 10.1 ms later: the first gap 60.1 ms, then 98 of 10.1 ms:
    # TPOT = (0.0601 + 98 x 0.0101) / 99 = 10.606 ms
    prefill = serving.ReplicaCosts((1.0,), (0.0101,), 10e-6, 8192, 1000, 4)
    r = simulate_disaggregated(prefill, 1, COSTS, 1, Lengths.exact(1000, 100), 0.01, handoff_s=0.05, requests=100)
    assert r.stable and r.gpus == 12
    assert r.percentile("ttft", 0.5) == pytest.approx(0.0201, rel=1e-9)
    assert r.percentile("tpot", 0.5) == pytest.approx((0.0601 + 98 * 0.0101) / 99, rel=1e-9)
    assert r.percentile("itl", 0.999) == pytest.approx(0.0601, rel=1e-9)


def test_the_load_sweep_by_hand():
    # 1,000 in / 100 out: a request costs 1,000 x 10 us = 10 ms of prefill and 99 decode steps; with n running,
    # t(n) = 10 ms + 0.1 ms x n, so n running serve n / (99 x t(n) + n x 0.01 s) requests/s, rising with n: at the
    # 1,000-sequence cache, 1,000 / (99 x 0.110 + 10) = 1,000 / 20.89 = 47.870 requests/s
    lengths = Lengths.exact(1000, 100)
    top = open_capacity(COSTS, lengths)
    assert top == pytest.approx(1000 / 20.89, rel=1e-9)
    sweep = load_sweep(COSTS, lengths)
    assert [r.load for r in sweep] == pytest.approx([f * top for f in SWEEP_SHARES])
    # 1% of it (0.48 requests/s, ~0.5 requests in the replica): the median prompt is alone, t(0) + 10 ms = 20.1 ms
    assert sweep[0].percentile("ttft", 0.5) == pytest.approx(0.0201, rel=1e-9)
    # up to 95% of the capacity the queue settles, and every percentile grows with the rate (measured P50 TTFT
    # 0.020, 0.028, 0.034, 0.045, 0.065, 0.098, 0.187 s; P50 TPOT 10.2 .. 112.5 ms)
    stable = [r for r in sweep if r.stable]
    assert [r.load for r in stable] == [r.load for r in sweep[:-1]]
    for metric in ("ttft", "tpot"):
        for q in (0.5, 0.99):
            pts = [r.percentile(metric, q) for r in stable]
            assert pts == sorted(pts), (metric, q, pts)
    assert stable[-1].percentile("ttft", 0.5) > 5 * stable[0].percentile("ttft", 0.5)
    # beyond it (125%: 59.8 requests/s) the queue grows: every percentile infinite, the replica serves about its
    # capacity (measured 49.9 requests/s)
    beyond = sweep[-1]
    assert not beyond.stable and math.isinf(beyond.percentile("ttft", 0.5))
    assert beyond.requests_per_s == pytest.approx(top, rel=0.1)
    # goodput at P99 TTFT 0.5 s, TPOT 50 ms: 75% of the capacity meets both (P99 TPOT 45.0 ms), 85% misses TPOT
    # (65.5 ms); two runs in between find the rate to within a quarter of that step (measured 37.1 requests/s)
    g = sweep_goodput(COSTS, lengths, sweep, 0.5, 0.05, 0.99)
    assert g.binding == "TPOT" and 0.75 * top <= g.load < 0.85 * top
    assert g.at.percentile("tpot", 0.99) <= 0.05 and g.at.percentile("ttft", 0.99) <= 0.5
    # bisection added: the grid alone gives 75%
    assert goodput(sweep, 0.5, 0.05, 0.99).load == pytest.approx(0.75 * top)


def test_a_warm_start_is_the_steady_state():
    # simulate_open(warm=True) starts with the sequences the rate keeps decoding already running: the same medians
    # as from an empty replica with three lifetimes of warm-up (measured, 2,000 requests: 30% of the capacity
    # TPOT 14.15 / 14.15 ms, TTFT 30.7 / 30.5 ms; 60% 23.43 / 23.43 ms, 45.0 / 45.0 ms; 85% 53.6 / 55.2 ms)
    lengths = Lengths.exact(1000, 100)
    for share, rel in ((0.3, 0.02), (0.6, 0.02), (0.85, 0.05)):
        cold, warm = (simulate_open(COSTS, lengths, share * 47.87, warm=w) for w in (False, True))
        assert warm.stable and warm.requests_per_s == pytest.approx(cold.requests_per_s, rel=0.03)
        assert warm.percentile("tpot", 0.5) == pytest.approx(cold.percentile("tpot", 0.5), rel=rel)
        assert warm.percentile("ttft", 0.5) == pytest.approx(cold.percentile("ttft", 0.5), rel=2 * rel)


def test_a_workloads_lengths_and_prefix_hits():
    # the default workload (2,048 / 512, no reuse) is no catalog profile: every request exactly its lengths
    assert workload_lengths(Workload()) == Lengths.exact(2048, 512)
    assert workload_knobs(Workload()).prefix_hit == 0.0
    # the chat profile's workload (the sidebar's preset, any concurrency): the lognormal of its medians and p90s,
    # prompts 1,020 / 2,735, outputs 129 / 424, its 40% prefix hits
    chat = profile("chat")
    assert workload_lengths(chat.workload(batch=7)) == Lengths(1020, 2735, 129, 424)
    assert workload_knobs(chat.workload()).prefix_hit == chat.prefix_reuse
    # the chat workload with one length edited is custom: exact again
    edited = chat.workload().model_copy(update={"output_len": 300})
    assert workload_lengths(edited) == Lengths.exact(edited.input_len, 300)
