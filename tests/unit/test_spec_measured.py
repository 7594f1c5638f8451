"""Speculative decoding from measured acceptance curves (issue #20): the recommended draft length follows the
published curve and stops where it flattens; MTP without a curve is held to its module depth."""

import numpy as np
import pytest

from core import speculative as sd
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.speculative import acceptance
from core.speculative.measured import gamma_limit, measured_speedups

cat = load_catalog()
TP8 = ParallelLayout(attention_tp=8, ep=8)


def dep(model_id, gpu_id, layout, precision="fp8", **kw):
    """The deployment of a catalog model on a catalog GPU (its factors under SGLang)."""
    return Deployment(cat.model(model_id), cat.gpu(gpu_id), layout, precision, cat.efficiency_for(gpu_id), **kw)


def curve(curve_id):
    return next(c for c in acceptance.load_curves() if c.id == curve_id)


def test_measured_length_replaces_the_closed_form_in_the_batch_speedup():
    # the same steps, E replaced: speedup = L x decode / (verify + gamma c decode)
    d = dep("deepseek-v3", "h200", TP8)
    r = sd.batch_speedup(d, [1], alpha=0.5, gamma=1, context_len=2304, draft_cost=0.04, accepted_tokens=1.9)
    assert r.speedup[0] == pytest.approx(1.9 * r.decode_s[0] / (r.verify_s[0] + 0.04 * r.decode_s[0]))
    with pytest.raises(ValueError, match="accepted_tokens"):
        sd.batch_speedup(d, [1], alpha=0.5, gamma=1, context_len=2304, accepted_tokens=2.5)


def test_kimi_k25_eagle3_stops_where_its_curve_flattens():
    # InferenceX, thinking off: 1.80, 2.33, 2.75, 3.06, 3.25, 3.43, 3.46, 3.51 tokens at k = 1..8. From k = 4 each
    # token adds 0.19 or less while verifying one more token per sequence on a 1T MoE touches more experts
    c = curve("kimi-k2.5/eagle3/thinking-off/inferencex")
    assert [c.accepted_length[k] for k in (4, 8)] == [3.06, 3.51]
    mg = measured_speedups(dep("kimi-k2.5", "b200", TP8), c, batch=1, context_len=2304, draft_cost=0.04)
    assert mg.gammas == tuple(range(1, 9))
    assert 3 <= mg.best_gamma <= 5 and mg.speedups[-1] < mg.best_speedup
    # the constant-alpha what-if with the curve's own first position (alpha = 0.80) keeps climbing past 8
    assert sd.optimal_gamma(0.80, 0.04) > 8


def test_deepseek_v3_mtp_is_not_sent_to_twelve_tokens():
    # the page said "best gamma 12 -> 4.35x" from alpha 0.87 at every position; SGLang measured 1.9 tokens at k = 1
    c = curve("deepseek-v3/mtp/sglang-pr3582")
    mg = measured_speedups(dep("deepseek-v3", "h200", TP8), c, batch=1, context_len=2304, draft_cost=0.04)
    assert mg.best_gamma == 1 and 1.5 < mg.best_speedup < 1.9
    assert sd.optimal_gamma(0.87, 0.04) == 12  # the closed form's answer, kept as the what-if


def test_mtp_without_a_curve_is_held_to_its_module_depth():
    glm = cat.model("glm-5")
    assert not acceptance.curves_for("glm-5", "mtp")
    assert gamma_limit(glm, "mtp", has_curve=False) == glm.num_mtp_layers == 1
    assert gamma_limit(glm, "eagle3", has_curve=False) is None
    assert gamma_limit(cat.model("deepseek-v3"), "mtp", has_curve=True) is None


def test_measured_speedups_refuses_what_is_not_a_curve():
    with pytest.raises(ValueError, match="AcceptanceCurve"):
        measured_speedups(dep("deepseek-v3", "h200", TP8), {"k": 1}, batch=1, context_len=2304, draft_cost=0.04)
    assert np.isfinite(sd.optimal_gamma(0.5, 0.1))


def test_no_batch_is_sent_past_where_a_measured_curve_flattens():
    # every catalog model with a published multi-point curve, on 8 x B200 at its default layout: at batch 1, 8, 32
    # and 128 the best draft length stops before the first k whose draft adds under 0.06 tokens (DeepSeek-V4-Pro
    # MTP thinking on: 2.49 -> 2.54 at k = 4, so at most 3), and its speedup is above 1 and at most the L(k) tokens
    # a step emits (verification is never free)
    from core.scenario import resolved_layout, scenario_from_params

    seen, checked = set(), 0
    for c in acceptance.load_curves():
        if c.model_id not in cat.models or (c.model_id, c.method) in seen or len(c.accepted_length) < 2:
            continue
        seen.add((c.model_id, c.method))
        table = c.accepted_length
        flat = next((k for k in sorted(table) if k > 1 and k - 1 in table and table[k] - table[k - 1] < 0.06), None)
        sc, _ = scenario_from_params({"model": c.model_id, "gpu": "b200"}, cat)
        m = cat.model(c.model_id)
        cost = cat.draft_methods[c.method].draft_cost_c if c.method in cat.draft_methods else 0.05
        d = dep(c.model_id, "b200", resolved_layout(sc, m), sc.precision, assumptions=sc.memory)
        for batch in (1, 8, 32, 128):
            mg = measured_speedups(d, c, batch=batch, context_len=sc.workload.decode_context_len, draft_cost=cost)
            assert mg.best_gamma >= 1 and (flat is None or mg.best_gamma < flat), (c.id, batch, mg.best_gamma, flat)
            assert 1.0 < mg.best_speedup <= table[mg.best_gamma], (c.id, batch)
            checked += 1
    assert checked >= 24  # six models x four batches at least


def test_best_gamma_looks_at_every_published_curve_for_the_model_and_method():
    # numbers audit 3, B4.8: DeepSeek-V3 MTP on 8 x H200 as DP-attention 8 with EP8 (fp8, context 2,304, c 0.04).
    # The catalog holds SGLang's k = 1 curve (1.9 tokens) and Nebius' k = 7 curves (3.20 at T = 0, 3.09 at T = 1);
    # under the planner's own step model they give 1.729x, 1.934x and 1.867x at batch 1, so the advice is
    # gamma 7 at ~1.93x from the T = 0 curve, not gamma 1 at 1.73x from the first curve listed.
    from core.speculative.measured import recommend_gamma

    dp8 = ParallelLayout(attention_tp=1, attention_dp=8, ep=8)
    advice = recommend_gamma(dep("deepseek-v3", "h200", dp8), "mtp", 0.87, 0.04, 2304)
    assert advice.gamma == 7
    assert advice.speedup == pytest.approx(1.934, abs=0.01)
    assert advice.at_batch1.curve_id == "deepseek-v3/mtp/nebius-card/t0"
    assert "nebius-card/t0" in advice.note
    # on TP8 the k = 1 curve wins (the audit: 1.62 vs 1.50)
    tp8 = recommend_gamma(dep("deepseek-v3", "h200", TP8), "mtp", 0.87, 0.04, 2304)
    assert tp8.gamma == 1 and tp8.at_batch1.curve_id == "deepseek-v3/mtp/sglang-pr3582"
