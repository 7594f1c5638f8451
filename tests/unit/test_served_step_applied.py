"""The served decode step (issue 35): a scenario's deployment pays its stack's fitted per-step costs on top of the
kernel step (core.hardware.served_step, catalogs/served_step.yaml); kernel-level deployments do not."""

from __future__ import annotations

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.specs import ParallelLayout, Precision, Scenario
from core.scenario.deploy import resolve

cat = load_catalog()
B200_MINLAT = Scenario(
    gpu_id="b200",
    precision=Precision(weights="bf16", routed_experts="nvfp4", kv_cache="bf16", dispatch="bf16"),
    layout=ParallelLayout(attention_tp=8, ep=4, expert_tp=2),
    serving_stack="trtllm",
)

GLM5_B200 = Scenario(  # GLM-5 FP8 on 8 x B200, TP8: 78 layers, each running its own DSA indexer
    model_id="glm-5",
    gpu_id="b200",
    precision=Precision(weights="fp8", kv_cache="fp8"),
    layout=ParallelLayout(attention_tp=8, expert_tp=8),
    serving_stack="sglang",
)
GLM5_DECODE = perf.StepConfig("decode", 4 / 8, 8192 + 512)  # 4 sequences over 8 GPUs, 8.7k context


def test_a_trtllm_decode_step_pays_the_fitted_fixed_cost_and_a_prefill_step_does_not():
    d = resolve(B200_MINLAT, cat)
    kernel = d.with_(served_step=None)
    # catalogs/served_step.yaml, TensorRT-LLM (cuda graph, no drafting): fixed 1.6051 ms per step, 0 per layer (2.3941
    # before InferenceX's TensorRT-LLM 1.3.0rc14 FP8 points joined the fit)
    dec = perf.StepConfig("decode", 1 / 8, 1024 + 1024)
    assert perf.step_time(d, dec).step_s - perf.step_time(kernel, dec).step_s == pytest.approx(1.6051e-3, abs=1e-9)
    assert perf.step_time(d, dec).components["engine_step"] == pytest.approx(1.6051e-3)
    pre = perf.StepConfig("prefill", 1024, 1024)
    assert perf.step_time(d, pre).step_s == perf.step_time(kernel, pre).step_s


def test_the_b200_min_latency_step_stands_next_to_the_published_one():
    # TensorRT-LLM tech blog 1 (B200, DeepSeek-R1 FP4, attention TP8, experts EP4 x TP2, no MTP): 111 tokens/s per
    # user = 1000 / 111 = 9.01 ms per step at one sequence (1k in, 2k out: mean context ~2,048). The kernel step alone
    # was 28% short of it (numbers audit 3, B7.1); the served step must be within 20%.
    d = resolve(B200_MINLAT, cat)
    served_ms = perf.step_time(d, perf.StepConfig("decode", 1 / 8, 2048)).step_s * 1e3
    assert served_ms == pytest.approx(1000 / 111, rel=0.20)
    kernel_ms = perf.step_time(d.with_(served_step=None), perf.StepConfig("decode", 1 / 8, 2048)).step_s * 1e3
    assert abs(kernel_ms / (1000 / 111) - 1) > abs(served_ms / (1000 / 111) - 1)


def test_sglang_and_vllm_pay_no_fixed_cost_without_drafting():
    # the fits found no per-step term that lowers the leave-one-out error for SGLang (0) and only a per-draft cost for
    # vLLM: their plain decode steps are the kernel step
    for stack in ("sglang", "vllm"):
        d = resolve(B200_MINLAT.model_copy(update={"serving_stack": stack}), cat)
        dec = perf.StepConfig("decode", 1 / 8, 2048)
        assert perf.step_time(d, dec).step_s == perf.step_time(d.with_(served_step=None), dec).step_s


def test_built_in_drafts_cost_the_stacks_fitted_draft_pass():
    # catalogs/served_step.yaml: TensorRT-LLM 0.6634 ms per MTP draft pass (0.4192 before the 1.3.0rc14 points); MTP at
    # gamma 3 drafts three times: 3 x 0.6634 = 1.9902 ms per verification cycle, in place of draft_cost x the plain step
    from core import speculative as sd
    from core.deployment.specs import SpecDecodeConfig

    s = B200_MINLAT.model_copy(update={"spec": SpecDecodeConfig(method="mtp", num_speculative_tokens=3)})
    d = resolve(s, cat)
    assert d.served_step.mode == "mtp" and sd.served_draft_s(d, 3) == pytest.approx(0.6634e-3)
    r = sd.batch_speedup(d, [1.0], alpha=0.8, gamma=3, context_len=2048, draft_cost=0.1)
    assert r.draft_s[0] == pytest.approx(3 * 0.6634e-3)
    # without a fitted drafting cost (SGLang's and vLLM's forms price no draft pass) the draft is draft_cost x the
    # plain step
    for stack in ("sglang", "vllm"):
        g = resolve(s.model_copy(update={"serving_stack": stack}), cat)
        assert g.served_step.mode == "cuda_graph" and sd.served_draft_s(g, 3) is None
        r = sd.batch_speedup(g, [1.0], alpha=0.8, gamma=3, context_len=2048, draft_cost=0.1)
        assert r.draft_s[0] == pytest.approx(3 * 0.1 * r.decode_s[0])


def test_a_dsa_model_pays_its_stacks_indexer_cost_per_indexer_layer():
    # catalogs/served_step.yaml: SGLang 90.5 us per layer running a DSA indexer, vLLM 24.1 us (read from the file);
    # GLM-5 FP8 on 8 x B200, TP8: 78 indexer layers, so SGLang's decode step adds 78 x 90.5 us = 7.06 ms, vLLM's
    # 78 x 24.1 us = 1.88 ms; DeepSeek-V3 (no indexer) adds nothing. (SGLang's was 107.7 us before its ROCm term took
    # the MI355X points' excess off the indexer.)
    from core.hardware.served_step import served_step_cost

    for stack in ("sglang", "vllm"):
        d = resolve(GLM5_B200.model_copy(update={"serving_stack": stack}), cat)
        per = served_step_cost(stack).per_indexer_s
        assert per == pytest.approx({"sglang": 90.5e-6, "vllm": 24.1e-6}[stack], abs=0.2e-6)
        assert perf.step_time(d, GLM5_DECODE).components["engine_step"] == pytest.approx(78 * per)
    v3 = resolve(B200_MINLAT.model_copy(update={"serving_stack": "sglang"}), cat)
    assert "engine_step" not in perf.step_time(v3, perf.StepConfig("decode", 1 / 8, 2048)).components


def test_sglang_on_an_amd_gpu_pays_its_rocm_build_per_step_cost():
    # catalogs/served_step.yaml, SGLang: rocm_s 3.5569 ms per decode step on an AMD GPU (fitted on its two MI355X
    # points, 4 clients, with the indexer term: GLM-5 23.79 ms measured against 13.52 ms of kernels + 78 x 90.5 us,
    # Qwen3.5 13.29 against 9.62). GLM-5 FP8 on 8 x MI355X, TP8, 4 sequences: 78 x 90.5 us + 3.5569 ms = 10.62 ms over
    # the kernels; the same on 8 x B200 pays 7.06 ms, the indexers alone (3.5596 ms and 90.6 us before the
    # system factors were refitted with TensorRT-LLM's 1.3.0rc14 points). vLLM has no AMD point: no ROCm term.
    from core.hardware.served_step import served_step_cost

    assert served_step_cost("sglang").rocm_s == pytest.approx(3.5569e-3, abs=1e-7)
    assert served_step_cost("vllm").rocm_s == 0.0 and served_step_cost("trtllm").rocm_s == 0.0
    glm = GLM5_B200.model_copy(update={"gpu_id": "mi355x"})
    amd = resolve(glm, cat)
    step = perf.step_time(amd, GLM5_DECODE).components["engine_step"]
    assert step == pytest.approx(78 * 90.5e-6 + 3.5569e-3, abs=2e-6)
    nv = resolve(GLM5_B200, cat)
    assert perf.step_time(nv, GLM5_DECODE).components["engine_step"] == pytest.approx(78 * 90.5e-6, abs=2e-6)
    v = resolve(glm.model_copy(update={"serving_stack": "vllm"}), cat)
    assert perf.step_time(v, GLM5_DECODE).components["engine_step"] == pytest.approx(78 * 24.1e-6, abs=2e-6)


def test_attention_dp_layouts_pay_the_fixed_cost_where_no_dp_attention_term_is_fitted():
    # TensorRT-LLM's fit has no batch-1 attention-DP point since the two InferenceX decode points were read as the
    # recipes ran them (TEP8, not DEP8): dp_attention_s is None, so a DP8 x EP8 layout pays the fixed 1.6051 ms too
    d = resolve(B200_MINLAT.model_copy(update={"layout": ParallelLayout(attention_dp=8, ep=8)}), cat)
    assert d.served_step.dp_attention_s is None
    dec = perf.StepConfig("decode", 1 / 8, 2048)
    assert perf.step_time(d, dec).step_s - perf.step_time(d.with_(served_step=None), dec).step_s == pytest.approx(
        1.6051e-3, abs=1e-9
    )


def test_one_helper_picks_a_stacks_costs_for_a_drafting_method():
    from core.hardware.served_step import served_step_cost, served_step_for

    assert served_step_for("trtllm", "mtp") == served_step_cost("trtllm", "mtp")
    # a mode the stack has no fit for, no drafting, or another method: the plain step's costs
    for method in ("eagle3", "none", "draft_model", "cuda_graph"):
        assert served_step_for("trtllm", method) == served_step_cost("trtllm")
    with pytest.raises(ValueError, match="no fitted served-step cost for stack"):
        served_step_for("tgi", "mtp")
    with pytest.raises(ValueError, match="method must be a text"):
        served_step_for("trtllm", 3)


def test_sglangs_indexer_cost_is_its_nsa_chains_and_minimax_m3s_fused_msa_decode_pays_none():
    # SGLang cookbook, MiniMax-M3 MXFP8 on 4 x B300, TP4, SGLang 0.5.16 (minimax-m3-benchmarks.jsx): 8,192 in /
    # 1,024 out exactly (range ratio 1.0), num_prompts = 2 x the concurrency, so each wave's prompts all arrive at
    # once; SGLang prefills first, one 8,192-token chunk a step. Prompt i of a wave gets its first token after i x p
    # and then waits (c - i) x p for the rest of the wave's prompts before decoding, so the medians give
    # p = 2 x TTFT / c and the decode step d = TPOT - TTFT / 1,023:
    #   c = 64:  TTFT 6,795 ms, TPOT 28.2 ms  -> d = 28.2 - 6.642 = 21.56 ms (p = 212.3 ms; check: 64 x 9,216 tokens /
    #            (64 x 0.2123 + 1,023 x 0.02156 s) / 4 GPUs = 4,136 tok/s/GPU against the published 4,140)
    #   c = 256: TTFT 26,480 ms, TPOT 61.5 ms -> d = 61.5 - 25.88 = 35.62 ms
    # SGLang's per-indexer cost was fitted on GLM-5's DSA (MLA) layers, SGLang's NSA backend chain; MiniMax-M3's MSA
    # layers (GQA + indexer) run MiniMax's fused fmha_sm100 kernel on Blackwell. Charged 57 x 107.7 us = 6.14 ms a
    # step, the decode step was 29.6 / 40.3 ms (+37% / +13%); the kernel step is 23.5 / 34.1 ms.
    from core.hardware.served_step import served_step_cost

    m3 = Scenario(
        model_id="minimax-m3",
        gpu_id="b300",
        gpus_per_node=4,
        precision=Precision(weights="fp8", kv_cache="bf16"),
        layout=ParallelLayout(attention_tp=4, expert_tp=4),
        serving_stack="sglang",
    )
    d = resolve(m3, cat)
    for clients, derived_ms in ((64, 21.56), (256, 35.62)):
        step = perf.step_time(d, perf.StepConfig("decode", clients / 4, 8192 + 512))
        assert step.step_s * 1e3 == pytest.approx(derived_ms, rel=0.15)
        assert "engine_step" not in step.components
    assert served_step_cost("sglang").indexer_mixers == ("mla",)
    # vLLM's fit holds DeepSeek-V3.2's (MLA) and MiniMax-M3's (GQA) indexers alike
    assert served_step_cost("vllm").indexer_mixers == ("gqa", "mla")
