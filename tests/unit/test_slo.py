"""Percentile latencies under random arrivals and goodput (issue 23). Made-up step costs, so every number can be
worked by hand: a decode step of n sequences takes 10 ms + 0.1 ms x n, a computed prompt token 10 us, a step
carries 8,192 tokens, 8 GPUs; prompts of 1,000 tokens, 100 output tokens."""

import math

import pytest

from core.deployment.specs import Workload
from core.serving import ReplicaCosts, slo

COSTS = ReplicaCosts((1.0, 1000.0), (0.0101, 0.110), 10e-6, 8192, 1000, 8)
WL = Workload(input_len=1000, output_len=100)


def test_ten_requests_a_second_by_hand():
    # the prompts' work: a = 10 x 1000 x 10 us = 0.1 of the time; decodes: n = 10 x 100 x (0.01 + 0.0001 n) / 0.9
    # -> n = 12.5, t = 11.25 ms. Budget left 8,179.5 tokens: a step with a chunk takes t_mix = 11.25 + 81.795 =
    # 93.045 ms; the prompt queue's load rho = 10 x 1000 x 0.093045 / 8179.5 = 0.113754
    p99 = slo.load_point(COSTS, WL, 10.0, 0.99)
    assert p99.stable and p99.decoding == pytest.approx(12.5)
    assert p99.prefill_load == pytest.approx(0.113754, rel=1e-5)
    # M/D/1 mean wait 0.113754 x 0.093045 / (2 x 0.886246) = 5.9714 ms; P99 of an exponential tail with that mean:
    # 5.9714 / 0.113754 x ln(0.113754 / 0.01) = 127.64 ms; TTFT = 93.045 + 127.64 = 220.68 ms
    assert p99.ttft_s == pytest.approx(0.220683, rel=1e-4)
    # a share f = 0.113754 x 11.25 / (11.25 + 0.886246 x 81.795) = 1.5282% of the steps carry a chunk; over a
    # request's 100 steps, P99 = 11.25 + 1.25 + 2.326348 x 81.795 x sqrt(0.015282 x 0.984718 / 100) = 14.834 ms
    assert p99.tpot_s == pytest.approx(0.0148343, rel=1e-4)
    assert p99.itl_s == pytest.approx(0.093045)  # 1.5% of the gaps are chunk steps: above the 1% tail
    assert p99.output_tokens_per_s_per_gpu == pytest.approx(125.0)  # 10 x 100 / 8
    p50 = slo.load_point(COSTS, WL, 10.0, 0.5)
    assert p50.ttft_s == pytest.approx(0.093045)  # the median prompt does not wait (rho < 0.5)
    assert p50.tpot_s == pytest.approx(0.0125)  # the mean step, 11.25 / 0.9
    assert p50.itl_s == pytest.approx(0.01125)


def test_beyond_capacity_nothing_is_finite():
    # the prompts alone would take all the time at 100 requests/s (100 x 1000 x 10 us); the budget saturates earlier
    assert not slo.load_point(COSTS, WL, 100.0).stable
    top = slo._max_rate(COSTS, WL, 0.99)
    assert 30 < top < 100
    assert slo.load_point(COSTS, WL, 0.999 * top).stable and not slo.load_point(COSTS, WL, 1.001 * top).stable
    assert math.isinf(slo.load_point(COSTS, WL, 1.001 * top).ttft_s)


def test_higher_rates_and_higher_percentiles_wait_longer():
    sweep = slo.rate_sweep(COSTS, WL, 0.9, points=10)
    assert all(p.stable for p in sweep)
    ttft = [p.ttft_s for p in sweep]
    assert ttft == sorted(ttft) and ttft[-1] > 3 * ttft[0]
    for r in (5.0, 20.0, 40.0):
        p50, p90, p99 = (slo.load_point(COSTS, WL, r, q) for q in (0.5, 0.9, 0.99))
        assert p50.ttft_s <= p90.ttft_s <= p99.ttft_s and p50.tpot_s <= p90.tpot_s <= p99.tpot_s


def test_goodput_is_the_highest_rate_meeting_both_targets():
    g = slo.goodput(COSTS, WL, 0.5, 0.020, 0.99)
    assert g.binding == "TPOT" and g.at.tpot_s == pytest.approx(0.020, rel=1e-6)
    assert g.at.ttft_s <= 0.5
    beyond = slo.load_point(COSTS, WL, 1.01 * g.rate, 0.99)
    assert beyond.tpot_s > 0.020
    assert g.tokens_per_s_per_gpu() == pytest.approx(g.rate * 100 / 8)
    assert slo.goodput(COSTS, WL, 0.5, 0.005).binding == "none met"  # 5 ms is below one decode step
    loose = slo.goodput(COSTS, WL, 3600, 60)  # only the queue's growth near saturation binds
    assert loose.rate > 0.99 * slo._max_rate(COSTS, WL, 0.99)
    tight_ttft = slo.goodput(COSTS, WL, 0.15, 0.060, 0.99)
    assert tight_ttft.binding == "TTFT" and tight_ttft.at.ttft_s <= 0.15


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="quantile must be in"):
        slo.load_point(COSTS, WL, 1.0, 1.0)
    with pytest.raises(ValueError, match="rate must be"):
        slo.load_point(COSTS, WL, 0.0)
    with pytest.raises(ValueError, match="ttft_target_s must be"):
        slo.goodput(COSTS, WL, 0.0, 0.1)


def test_a_prefill_worker_behind_a_cache_miss():
    # 6.81 prompts/s with the hits, 0.98 on a miss (the Layouts page's Llama-3-8B example); traffic at 70% of the
    # hit capacity, 4.767 prompts/s. Hits: rho = 0.7, mean wait 0.7 / 6.81 / 0.6 = 171.3 ms, P99 wait
    # 0.1713 / 0.7 x ln(0.7 / 0.01) = 1.0397 s; TTFT = 0.148 + 1.0397 = 1.188 s. A miss: 4.87x its capacity
    rate = 0.7 * 6.81
    assert slo.queued_ttft_s(0.148, 6.81, rate) == pytest.approx(
        0.148 + 0.7 / 6.81 / 0.6 / 0.7 * math.log(70), rel=1e-9
    )
    assert slo.queued_ttft_s(0.148, 6.81, rate) == pytest.approx(1.1877, rel=1e-3)
    assert math.isinf(slo.queued_ttft_s(1.023, 0.98, rate))
    assert slo.queued_ttft_s(0.148, 6.81, 0.05, 0.9) == 0.148  # rho 0.7% < 10%: the P90 prompt finds no queue
    with pytest.raises(ValueError, match="capacity_per_s must be > 0"):
        slo.queued_ttft_s(0.1, 0.0, 1.0)
