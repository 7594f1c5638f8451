"""Prefix reuse (issue 23): prompt tokens a warm prefix cache serves are read, not recomputed. The computed tokens
still attend to the cached ones, the cache still holds the whole prompt, and a prefill pool sizes for the
computed tokens only. Hand values below; with no reuse every number is as before (the golden set is unchanged)."""

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Workload
from core.perf.kernels import layer_costs
from core.serving import disagg
from core.serving.operating_point import operating_point

cat = load_catalog()
LLAMA = cat.model("llama-3-8b")  # 32 layers of full GQA: 32 query heads of 128, 8 KV heads
H100 = cat.gpu("h100-sxm")
EFF = cat.efficiency_for("h100-sxm", "sglang")
ONE = ParallelLayout()


def test_the_cached_share_of_a_prompt():
    assert Workload(input_len=2048, prefix_reuse=0.9).cached_prompt_tokens == 1843  # round(1,843.2)
    assert Workload(input_len=1, prefix_reuse=0.9).cached_prompt_tokens == 0  # the last token is always computed
    assert Workload(input_len=100, prefix_reuse=0.99).cached_prompt_tokens == 99
    with pytest.raises(ValueError, match="prefix_reuse"):
        Workload(prefix_reuse=1.0)
    with pytest.raises(ValueError, match=r"cached_tokens must be a whole number in 0\.\.context_len - 1"):
        perf.StepConfig("prefill", 1024, 2048, cached_tokens=2048)
    with pytest.raises(ValueError, match="cached_tokens applies to prefill"):
        perf.StepConfig("decode", 64, 2048, cached_tokens=1)


def test_computed_tokens_attend_to_the_cached_ones():
    # an 8,192-token prompt, 6,144 from the cache: the 2,048 computed tokens see (8,192 + 6,144) / 2 = 7,168 keys
    # on average, against 4,096 for a prompt computed whole: 1.75x the score FLOPs per token. QK^T and PV:
    # 2 x (128 + 128) FLOPs per key and query head, 32 heads: 16,384 x 7,168 = 117,440,512 per token per layer
    warm = layer_costs(
        Deployment(LLAMA, H100, ONE, "bf16", EFF), perf.StepConfig("prefill", 2048, 8192, cached_tokens=6144)
    )
    cold = layer_costs(Deployment(LLAMA, H100, ONE, "bf16", EFF), perf.StepConfig("prefill", 2048, 8192))
    (w,), (c,) = warm.mixer, cold.mixer
    assert w["attention_scores"].flops / 2048 == pytest.approx(32 * 2 * 256 * 7168, rel=1e-12)
    assert c["attention_scores"].flops / 2048 == pytest.approx(32 * 2 * 256 * 4096, rel=1e-12)
    # the GEMMs see the same 2,048 tokens either way
    assert w["attention_projections"].flops == c["attention_projections"].flops
    assert warm.dense["dense_ffn"].flops == cold.dense["dense_ffn"].flops
    # the LM head: one logit row per prompt, 2,048 / 2,048 = 1 prompt in the warm step, 2,048 / 8,192 -> 1 as well
    assert warm.head["lm_head"].flops == cold.head["lm_head"].flops


def test_a_warm_prompt_prefills_faster_than_a_cold_one_but_slower_than_a_short_one():
    # a 32,768-token prompt alone on one H100, 90% cached (29,491 tokens): 3,277 computed tokens, which attend to
    # (32,768 + 29,491) / 2 = 31,130 keys on average. Against the cold prompt: GEMM work x 0.1, attention FLOPs
    # x 3,277 x 31,130 / (32,768 x 16,384) = 0.19; against a cold 3,277-token prompt: the same GEMMs, ~19x the
    # attention
    def prefill_s(tokens, prompt, cached=0):
        cfg = perf.StepConfig("prefill", tokens, prompt, cached_tokens=cached)
        return perf.step_time(Deployment(LLAMA, H100, ONE, "bf16", EFF), cfg).step_s

    warm, cold, short = prefill_s(3277, 32_768, 29_491), prefill_s(32_768, 32_768), prefill_s(3277, 3277)
    assert short < warm < 0.25 * cold


def test_the_prefill_plan_serves_more_requests_with_a_warm_cache():
    # the best prefill operating point (the chunk that maximises throughput within TTFT 60 s): prompts per GPU-second
    # = computed tokens/s / computed tokens per prompt; a 90% hit rate multiplies it by 1 / (0.1 GEMMs .. 0.19
    # attention): between 5 and 10
    def prompts_per_s(reuse):
        wl = Workload(batch=1, input_len=32_768, output_len=1, prefix_reuse=reuse)
        plan = operating_point(Deployment(LLAMA, H100, ONE, "bf16", EFF, workload=wl), "prefill", target_s=60.0)
        return plan.tokens_per_s_per_gpu / (32_768 - wl.cached_prompt_tokens)

    assert 5 < prompts_per_s(0.9) / prompts_per_s(0.0) < 10


def test_a_prefill_pool_sizes_for_the_computed_tokens():
    # 600 requests a minute of 10,000-token prompts: 100,000 prompt tokens/s; 90% cached leaves 10,000 to prefill
    cold = disagg.Traffic(600, 10_000, 200)
    warm = disagg.Traffic(600, 10_000, 200, prefix_reuse=0.9)
    assert cold.computed_input_tokens_per_s == 100_000 and warm.computed_input_tokens_per_s == 10_000
    assert warm.workload.prefix_reuse == 0.9
    with pytest.raises(ValueError, match="prefix_reuse must be in"):
        disagg.Traffic(600, 10_000, 200, prefix_reuse=1.5)


def test_the_url_carries_the_hit_rate():
    from core.scenario import scenario_from_params, scenario_to_params

    s, warnings = scenario_from_params({"model": "llama-3-8b", "isl": "32768", "reuse": "90"}, cat)
    assert not warnings and s.workload.prefix_reuse == 0.9 and s.workload.cached_prompt_tokens == 29_491
    assert scenario_to_params(s)["reuse"] == "90"
    assert "reuse" not in scenario_to_params(s.model_copy(update={"workload": Workload()}))  # 0: no key
    _, warnings = scenario_from_params({"reuse": "100"}, cat)
    assert warnings == ["URL parameter reuse=100 is outside 0-99 (% of each prompt from the prefix cache); using 0"]
    # a warm cache computes 3,277 of 32,768 prompt tokens: 10,000 computed tokens/s finish 3.05 prompts/s
    assert s.workload.prompts_per_s(10_000) == pytest.approx(10_000 / 3_277)


def test_what_a_miss_does_to_a_plan_chosen_for_the_hits():
    from core.serving.operating_point import cold_prefill

    # Llama-3-8B, one H100, 32,768-token prompts, 90% cached. One prompt alone: 3,277 computed tokens in one step
    # with the hits (the 0.186 s step above), 32,768 tokens (the plan's chunk allows one step) on a miss (1.393 s)
    wl = Workload(batch=1, input_len=32_768, output_len=1, prefix_reuse=0.9)
    d = Deployment(LLAMA, H100, ONE, "bf16", EFF, workload=wl)
    plan = operating_point(d, "prefill", target_s=60.0)
    miss = cold_prefill(d, plan)

    def step_s(tokens, cached=0):
        cfg = perf.StepConfig("prefill", tokens, 32_768, cached_tokens=cached)
        return perf.step_time(Deployment(LLAMA, H100, ONE, "bf16", EFF), cfg).step_s

    assert miss.lone_ttft_hit_s == pytest.approx(step_s(3277, 29_491), rel=1e-12)
    assert miss.lone_ttft_miss_s == pytest.approx(step_s(32_768), rel=1e-12)
    # capacity at the plan's chunk: the plan's own rate with the hits; on a miss 32,768 computed tokens a prompt
    assert miss.prompts_per_s_hit == pytest.approx(plan.tokens_per_s_per_gpu / 3277, rel=1e-12)
    assert miss.prompts_per_s_miss == pytest.approx(plan.tokens_per_gpu / step_s(plan.tokens_per_gpu) / 32_768)
    assert 5 < miss.prompts_per_s_hit / miss.prompts_per_s_miss < 10


def test_every_profile_round_trips_through_the_url():
    # "95.7" read back as 95.7 / 100 is 0.9570000000000001, not the agentic profile's 0.957: the sidebar's preset
    # then showed "custom" for a link made from the preset itself
    from core.deployment.specs import Scenario
    from core.scenario import scenario_from_params, scenario_to_params
    from core.serving.workload_profiles import load_profiles

    for p in load_profiles():
        s = Scenario().model_copy(update={"workload": p.workload()})
        back, warnings = scenario_from_params(scenario_to_params(s), cat)
        assert not warnings and back.workload == s.workload, p.id
    odd = Scenario().model_copy(update={"workload": Workload(prefix_reuse=0.123456789)})
    assert scenario_from_params(scenario_to_params(odd), cat)[0].workload.prefix_reuse == 0.123456789
