"""Speculative decoding closed forms, edge cases and the rejection-sampling simulator."""

import numpy as np
import pytest

from core import speculative as sd
from core.speculative import sim as speculative_sim


def test_sources_worked_examples():
    # alpha 0.75, gamma 5: 0.75^6 = 0.177978515625 -> E = 0.822021484375 / 0.25 = 3.2880859375; / 1.5 = 2.192
    assert sd.expected_tokens(0.75, 5) == pytest.approx(3.2880859375)
    assert sd.speedup(0.75, 5, 0.1) == pytest.approx(3.2880859375 / 1.5)
    assert round(sd.expected_tokens(0.75, 5), 2) == 3.29 and round(sd.speedup(0.75, 5, 0.1), 2) == 2.19
    # alpha 0.85: 0.85^6 = 0.377149515625 -> E = 4.15234; speedup 2.768
    assert sd.expected_tokens(0.85, 5) == pytest.approx(0.622850484375 / 0.15)
    assert round(sd.speedup(0.85, 5, 0.1), 2) == 2.77


def test_code_assistant_blend():
    a = sd.blended_alpha([0.7, 0.3], [0.88, 0.72])
    assert a == pytest.approx(0.832)  # 0.616 + 0.216
    # 0.832^6 = 0.33169...; E = (1 - 0.33169) / 0.168 = 3.978; c = 16 / 140; speedup = 3.978 / 1.5714 = 2.53
    e = (1 - 0.832**6) / 0.168
    assert sd.expected_tokens(a, 5) == pytest.approx(e)
    assert sd.expected_tokens(a, 5) == pytest.approx(3.97, abs=0.015)
    assert sd.speedup(a, 5, 16 / 140) == pytest.approx(e / (5 * 16 / 140 + 1))
    assert sd.speedup(a, 5, 16 / 140) == pytest.approx(2.5, abs=0.05)


def test_chapter_review_answer_at_alpha_055_is_an_erratum():
    # the chapter says E = 1.87 and 1.25x; the formula gives (1 - 0.55^6) / 0.45 = 2.161 and 1.44x
    assert sd.expected_tokens(0.55, 5) == pytest.approx((1 - 0.55**6) / 0.45)
    assert sd.expected_tokens(0.55, 5) == pytest.approx(2.161, abs=0.001)
    assert sd.speedup(0.55, 5, 0.1) == pytest.approx(1.44, abs=0.005)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [0, 1, 5])
def test_expected_tokens_equals_the_geometric_sum(alpha, gamma):
    assert sd.expected_tokens(alpha, gamma) == pytest.approx(sum(alpha**i for i in range(gamma + 1)))


def test_edge_cases():
    assert sd.expected_tokens(1.0, 7) == 8 and sd.expected_tokens(0.0, 7) == 1
    assert sd.expected_tokens(0.999999999999, 3) == pytest.approx(4)  # no 0/0 near alpha = 1
    assert sd.speedup(0.8, 0, 0.5) == 1  # gamma 0: no speculation
    assert sd.speedup(0.8, 5, 0.0) == pytest.approx(sd.expected_tokens(0.8, 5))  # free draft
    assert sd.ceiling(0.7) == pytest.approx(1 / 0.3) and sd.ceiling(0.9) == pytest.approx(10)
    assert sd.ceiling(1.0) == np.inf and sd.ceiling(0.0) == 1


def test_bad_inputs_raise_value_errors_with_the_name():
    with pytest.raises(ValueError, match="alpha"):
        sd.expected_tokens(1.2, 5)
    with pytest.raises(ValueError, match="gamma"):
        sd.expected_tokens(0.5, 2.5)
    with pytest.raises(ValueError, match="gamma"):
        sd.speedup(0.5, -1, 0.1)
    with pytest.raises(ValueError, match="c "):
        sd.speedup(0.5, 3, np.nan)


def test_break_even_alpha():
    a = sd.break_even_alpha(5, 0.1)
    assert sd.speedup(a, 5, 0.1) == pytest.approx(1.0, abs=1e-9)
    assert sd.speedup(a - 0.01, 5, 0.1) < 1 < sd.speedup(a + 0.01, 5, 0.1)
    # gamma 1: E = 1 + alpha = 1 + c -> alpha = c exactly
    assert sd.break_even_alpha(1, 0.3) == pytest.approx(0.3)
    assert sd.break_even_alpha(4, 0.0) == 0.0 and sd.break_even_alpha(4, 1.5) == 1.0
    assert np.isnan(sd.break_even_alpha(0, 0.1))
    np.testing.assert_allclose(sd.break_even_alpha(np.array([1, 1]), np.array([0.2, 0.4])), [0.2, 0.4])


def test_optimal_gamma_matches_brute_force():
    for alpha in (0.5, 0.7, 0.8, 0.9, 0.95):
        for c in (0.02, 0.1, 0.3):
            brute = max(range(17), key=lambda g: sum(alpha**i for i in range(g + 1)) / (g * c + 1))
            assert sd.optimal_gamma(alpha, c) == brute
    assert sd.optimal_gamma(0.1, 0.5) == 0  # speculation does not pay
    grid = sd.optimal_gamma(np.array([0.6, 0.9]), 0.05)
    assert list(grid) == [sd.optimal_gamma(0.6, 0.05), sd.optimal_gamma(0.9, 0.05)]


def test_alpha_matters_more_than_gamma():
    # at alpha 0.8, c 0.1, gamma 5: +0.10 alpha gains far more than +3 draft tokens (K 5 -> 8 even loses)
    by_alpha, _ = sd.sensitivity(0.8, 5, 0.1, d_alpha=0.10)
    assert by_alpha == pytest.approx(sd.speedup(0.9, 5, 0.1) - sd.speedup(0.8, 5, 0.1))
    assert sd.speedup(0.8, 8, 0.1) < sd.speedup(0.8, 5, 0.1)
    assert by_alpha > 0.5


def test_surface_shape_and_values():
    alphas, gammas = np.linspace(0, 1, 201), np.arange(1, 17)
    s = sd.speedup_surface(alphas, gammas, 0.1)
    assert s.shape == (201, 16)
    assert s[150, 4] == pytest.approx(sd.speedup(alphas[150], 5, 0.1))


def test_temperature_and_short_outputs():
    assert sd.alpha_at_temperature(0.85, 1.0) == pytest.approx(0.725)  # 12.5 points lower at T = 1
    assert sd.alpha_at_temperature(0.05, 2.0) == 0.0
    # 10 tokens, 2.5x per step, 1 step of setup: 9 / (1 + 9 / 2.5) = 1.957
    assert sd.short_output_speedup(2.5, 10, 1.0) == pytest.approx(9 / (1 + 3.6))
    assert sd.short_output_speedup(2.5, 1_000_000, 1.0) == pytest.approx(2.5, rel=1e-4)
    assert sd.short_output_speedup(2.5, 1) == 1.0


def test_simulator_matches_the_closed_form_and_p():
    rng = np.random.default_rng(7)
    v = 1000
    p = rng.dirichlet(np.full(v, 0.3))
    q = 0.6 * p + 0.4 * rng.dirichlet(np.full(v, 0.3))
    res = speculative_sim.simulate(p, q, 4, 100_000, seed=1)
    alpha = np.minimum(p, q).sum()
    assert res.alpha == pytest.approx(alpha)
    # mean tokens per step within 4 standard errors of (1 - a^5) / (1 - a)
    se = np.sqrt(np.var(np.arange(1, 6)) / 100_000)  # generous: the spread of 1..5 tokens
    assert abs(res.tokens_per_step - sd.expected_tokens(alpha, 4)) < 4 * se
    assert res.measured_acceptance == pytest.approx(alpha, abs=0.01)
    # emitted tokens follow p: the TV distance shrinks as samples accumulate
    assert res.tv_distance[-1] < res.tv_distance[0]
    assert res.final_tv < 0.05
    assert res.emitted.sum() == round(res.tokens_per_step * 100_000)


def test_simulator_identical_draft_accepts_everything():
    p = np.full(10, 0.1)
    res = speculative_sim.simulate(p, p, 3, 1000, seed=0)
    assert res.tokens_per_step == 4 and res.alpha == pytest.approx(1.0)


def test_simulator_rejects_bad_distributions():
    with pytest.raises(ValueError, match="sum to 1"):
        speculative_sim.simulate([0.5, 0.6], [0.5, 0.5], 2, 10)
    with pytest.raises(ValueError, match="same vocabulary"):
        speculative_sim.simulate([0.5, 0.5], [0.2, 0.3, 0.5], 2, 10)
    with pytest.raises(ValueError, match="gamma"):
        speculative_sim.simulate([0.5, 0.5], [0.5, 0.5], 0, 10)


def test_batch_speedup_crossover_for_dense_and_moe():
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.parallel import default_layout

    cat = load_catalog()
    h100 = cat.gpu("h100-sxm")
    eff = cat.efficiency_for(h100.id)
    dense = cat.model("llama-3-70b")
    lay = default_layout(dense, 8)
    b = np.array([1, 4, 16, 64, 256, 1024, 4096])
    r = sd.batch_speedup(
        Deployment(dense, h100, lay, "fp8", eff), b, alpha=0.8, gamma=5, context_len=256, draft_cost=0.05
    )
    # memory-bound at batch 1: verification is nearly free, so the speedup is close to E / (1 + gamma c)
    assert r.speedup[0] == pytest.approx(sd.speedup(0.8, 5, 0.05), rel=0.05)
    # short context, large batch: compute-bound, verification costs ~gamma + 1 steps -> below 1
    assert r.crossover_batch is not None and r.speedup[-1] < 1
    assert np.all(r.speedup[b >= r.crossover_batch] < 1)
    # a MoE: verifying 6 tokens touches more experts than decoding 1 -> lower speedup at batch 1
    moe_model = cat.model("mixtral-8x7b")
    rm = sd.batch_speedup(
        Deployment(moe_model, h100, default_layout(moe_model, 8), "fp8", eff),
        b,
        alpha=0.8,
        gamma=5,
        context_len=256,
        draft_cost=0.05,
    )
    assert rm.speedup[0] < r.speedup[0]
    # exact: speedup = E x decode / (verify + gamma c decode)
    e = sd.expected_tokens(0.8, 5)
    np.testing.assert_allclose(r.speedup, e * r.decode_s / (r.verify_s + 5 * 0.05 * r.decode_s))


def test_crossover_ignores_a_dip_at_small_batch():
    res = sd.BatchSpeedup(np.array([1, 2, 4, 8]), np.ones(4), np.ones(4), np.zeros(4), np.array([0.9, 1.2, 1.1, 0.8]))
    assert res.crossover_batch == 8
    res = sd.BatchSpeedup(np.array([1, 2]), np.ones(2), np.ones(2), np.zeros(2), np.array([0.9, 1.2]))
    assert res.crossover_batch is None and not res.pays[0]


def test_speedup_curves_on_the_alpha_grid():
    # γ = 3, c = 0.1, α = 0.8: E = (1 - 0.8^4) / 0.2 = 2.952 tokens per step over 3 x 0.1 + 1 = 1.3 -> 2.2708x
    curves = sd.speedup_curves(0.1)
    assert sorted(curves) == [3, 5, 8] and len(sd.ALPHA_GRID) == 51
    i = int(np.argmin(abs(sd.ALPHA_GRID - 0.8)))
    assert curves[3][i] == pytest.approx(2.952 / 1.3)


def test_mtp_speedup_falls_with_the_batch_as_sglang_measures():
    # SGLang's DeepSeek-V3 guide (H200, TP8, MTP): 1.8x at batch 1, 1.5x at batch 32 (catalogs/draft_methods.yaml).
    # The step-time model with the MTP defaults (alpha 0.87, gamma 1, c 0.04) at 2K context must stand within 15%
    # of both and fall between them; the roofline version rose from 1.28x at batch 1 (audit M1)
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout

    cat = load_catalog()
    d = Deployment(
        cat.model("deepseek-v3"),
        cat.gpu("h200"),
        ParallelLayout(attention_tp=8, ep=8),
        "fp8",
        cat.efficiency_for("h200"),
    )
    r = sd.batch_speedup(
        d,
        np.array([1, 32]),
        alpha=0.87,
        gamma=1,
        context_len=2304,
        draft_cost=0.04,
    )
    assert r.speedup[0] == pytest.approx(1.8, rel=0.15)
    assert r.speedup[1] == pytest.approx(1.5, rel=0.15)
    assert r.speedup[1] < r.speedup[0]
    # every step carries fixed costs: one sequence's plain step is milliseconds, not the 1.2 ms weight-read bound
    assert r.decode_s[0] > 3e-3


def test_a_separate_draft_drafts_at_its_own_step():
    # Llama-3-70B on 2 x H100 (TP2) with Llama-3-8B as the deployment's draft: each of the gamma draft passes is
    # the 8B's own decode step on the same two GPUs (TP2, its KV heads split that way), not c x the 70B's step;
    # c is then not used
    from core import perf
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout

    cat = load_catalog()
    h100, tp2 = cat.gpu("h100-sxm"), ParallelLayout(attention_tp=2, expert_tp=2)
    target, draft = cat.model("llama-3-70b"), cat.model("llama-3-8b")
    d = Deployment(target, h100, tp2, "bf16", cat.efficiency_for("h100-sxm"), draft=draft)
    r = sd.batch_speedup(d, [1, 16], alpha=0.8, gamma=5, context_len=2048, draft_cost=0.5)
    own = Deployment(draft, h100, tp2, "bf16", cat.efficiency_for("h100-sxm"), redundant_experts=0)
    for i, b in enumerate((1, 16)):
        step = perf.step_time(own, perf.StepConfig("decode", b / 2, 2048, redundant_experts=0)).step_s
        assert r.draft_s[i] == pytest.approx(5 * step, rel=1e-12)
    assert r.draft_s[0] < 0.5 * 5 * r.decode_s[0]  # the 8B's step is far below half the 70B's
    with pytest.raises(ValueError, match="Deployment"):
        sd.batch_speedup(target, [1], alpha=0.8, gamma=5, context_len=2048)
