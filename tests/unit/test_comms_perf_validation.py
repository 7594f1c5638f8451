"""All-to-all arithmetic, the step-time model and the validation contract."""

import copy
import statistics

import pytest

from core import comms, perf, validation
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.efficiency import KernelFactors, LinkFactors, resolve_efficiency

cat = load_catalog()


def test_alltoall_bytes_deepseek_v3():
    # 4,096 tokens x 7,168 x top-8 x (1 B dispatch + 1 B combine) = 469,762,048 B ~ 470 MB per MoE layer
    b = comms.alltoall_bytes_per_layer(4096, 7168, 8, dispatch_bytes=1, combine_bytes=1)
    assert b == 4096 * 7168 * 8 * 2 == 469_762_048
    # over DeepSeek-V3's 58 MoE layers (61 - 3 dense; the blog's "29 GB over 61 layers" counts the dense ones)
    assert cat.model("deepseek-v3").num_moe_layers == 58
    assert 58 * b / 1e9 == pytest.approx(27.25, abs=0.01)


def test_alltoall_bytes_sources_example_is_4_3_gb():
    # 32 x 4,096 tokens, d = 4,096, k = 2, BF16 both ways: 131,072 x 4,096 x 2 x 4 = 4.29 GB (the source says 8.6)
    assert comms.alltoall_bytes_per_layer(32 * 4096, 4096, 2, 2, 2) / 1e9 == pytest.approx(4.295, abs=0.001)


def test_infiniband_vs_nvlink():
    nbytes = 470e6
    ib = comms.link_time_s(nbytes, 50)
    nvl = comms.link_time_s(nbytes, 900)
    assert ib / nvl == pytest.approx(18.0)  # 900 / 50


def test_split_and_allreduce():
    s = comms.alltoall_split(72e6, ep=72, domain_gpus=8)
    # 1/72 local, 7/72 over NVLink, 64/72 over InfiniBand
    assert (s.local, s.scale_up, s.scale_out) == pytest.approx((1e6, 7e6, 64e6))
    assert comms.alltoall_split(8e6, ep=8, domain_gpus=72).scale_out == 0  # EP inside an NVL72 rack
    assert comms.ring_allreduce_bytes(100.0, 8) == pytest.approx(175.0)  # 2 x 7/8
    assert comms.ring_allreduce_time_s(1e9, 1, 450) == 0.0
    assert comms.fp8_scale_bytes(7168) == 224  # 56 fp32 scales


def test_deepep_low_latency_arithmetic():
    # DeepEP's LL dispatch of 128 tokens x top-8 in FP8 moves 128 x 8 x (7168 + 224) B = 7.57 MB per GPU;
    # its README's 77 us at EP8 is 98 GB/s: the model with fitted H800 factors lands within 10%
    m, g = cat.model("deepseek-v3"), cat.gpu("h800")
    assert perf.token_copy_bytes(7168, "fp8") * 128 * 8 == 7_569_408
    eff = resolve_efficiency("h800", cat.efficiency)
    t = perf.alltoall_call_s(
        Deployment(m, g, ParallelLayout(attention_dp=8, ep=8), domain_gpus=8),
        128,
        "fp8",
        "low_latency",
        eff["alltoall_low_latency"],
    )
    assert t * 1e6 == pytest.approx(77, rel=0.10)


def test_bin_touch_probability_by_hand():
    from math import comb

    # DeepSeek-V3 (256 experts, top-8 of the 4 chosen groups of 8): an EP32 GPU holds 8 experts of one
    # group, reachable when its group is chosen (4/8), then missed by all 8 picks among 128 experts
    assert comms.bin_touch_probability(256, 8, 32, 8, 4) == pytest.approx(0.5 * (1 - comb(120, 8) / comb(128, 8)))
    # a node of EP32 holds 2 groups: j of them chosen with P = C(2,j) C(6,4-j) / C(8,4) = 15/70, 40/70, 15/70
    miss = 15 / 70 + 40 / 70 * comb(96, 8) / comb(128, 8) + 15 / 70 * comb(64, 8) / comb(128, 8)
    assert comms.bin_touch_probability(256, 8, 4, 8, 4) == pytest.approx(1 - miss)
    # no group limit: 16 bins of 16 experts, 8 distinct picks of 256
    assert comms.bin_touch_probability(256, 8, 16) == pytest.approx(1 - comb(240, 8) / comb(256, 8))
    assert comms.bin_touch_probability(8, 2, 1) == 1.0
    for bad in ((256, 8, 3), (256, 0, 8), (256, 8, 8, 8, 9), (4, 8, 2)):
        with pytest.raises(ValueError):
            comms.bin_touch_probability(*bad)


def test_normal_kernel_bytes_by_hand():
    from math import comb

    # EP32 over 4 H800 nodes, 4,096 tokens, FP8 copies of 7,168 + 224 B, DeepEP test routing (4 of 4 node
    # groups = uniform): distinct GPUs G = 32 x (1 - C(248,8)/C(256,8)), distinct nodes N = 4 x (1 - C(192,8)/C(256,8));
    # NVLink carries T x copy x G x 7/8 at 200 GB/s, InfiniBand T x copy x N x 3/4 at 50 GB/s; the slower one wins
    m, g = cat.model("deepseek-v3"), cat.gpu("h800")
    gpus = 32 * (1 - comb(248, 8) / comb(256, 8))
    nodes = 4 * (1 - comb(192, 8) / comb(256, 8))
    assert perf.normal_kernel_fanout(m, 32, 8, (4, 4)) == pytest.approx((gpus, nodes))
    nvl = 4096 * 7392 * gpus * 7 / 8 / 200e9
    ib = 4096 * 7392 * nodes * 3 / 4 / 50e9
    assert ib > nvl
    one = LinkFactors(scale_up_eff=1.0, scale_out_eff=1.0, latency_us=0.0)
    t = perf.alltoall_call_s(
        Deployment(m, g, ParallelLayout(attention_dp=32, ep=32), domain_gpus=8),
        4096,
        "fp8",
        "normal",
        one,
        routing_groups=(4, 4),
    )
    assert t == pytest.approx(max(nvl, ib))
    # inside one node: once per distinct other GPU, G x 7/8 of the copies over NVLink
    g8 = 8 * (1 - comb(224, 8) / comb(256, 8))
    t8 = perf.alltoall_call_s(
        Deployment(m, g, ParallelLayout(attention_dp=8, ep=8), domain_gpus=8),
        4096,
        "fp8",
        "normal",
        one,
        routing_groups=(1, 1),
    )
    assert t8 == pytest.approx(4096 * 7392 * g8 * 7 / 8 / 200e9)


def test_normal_kernel_matches_deepep_logical_bandwidth():
    # DeepEP's normal-kernel table (H800): 153 GB/s intranode EP8, 43 / 58 / 51 GB/s internode EP16 / 32 / 64
    # dispatch; with the fitted H800 factors the model lands within 10% of each
    for case in cat.validation_cases:
        if case["id"].startswith("deepep-normal-"):
            assert validation.predict(case) == pytest.approx(case["measured"]["value"], rel=0.10), case["id"]


def test_pipeline_stages_hold_their_own_layers_and_the_slowest_sets_the_pace():
    # DeepSeek-V3 on 4 x 8 H800 at TP8 x PP4: stages of 16 (3 dense + 13 MoE), 15, 15, 15 MoE layers. The two
    # middle stages hold the same layers and each sends its activations on; the last sends nothing and runs the
    # LM head. 8 sequences per GPU x 32 GPUs = 256 sequences: 4 micro-batches in flight, one per stage, each
    # stage serving them in turn, so a token waits 4 x the slowest stage (no bubble: enough sequences)
    m, g = cat.model("deepseek-v3"), cat.gpu("h800")
    eff = resolve_efficiency("h800", cat.efficiency)
    st = perf.step_time(
        Deployment(m, g, ParallelLayout(attention_tp=8, ep=8, pp=4), "fp8", eff), perf.StepConfig("decode", 8.0, 2048)
    )
    _s0, s1, s2, s3 = st.stage_s
    send = st.components["pp_send"] / 3
    assert s1 == pytest.approx(s2)
    assert s3 == pytest.approx(s1 - send + st.components["lm_head"])
    assert st.microbatches == 4 and st.step_s == pytest.approx(4 * max(st.stage_s))
    assert sum(st.stage_s) == pytest.approx(st.compute_s + st.comm_s)


def test_grouped_gemm_memory_bound_by_hand():
    # one H200 with 32 of DeepSeek-V3's experts, 16 tokens per rank x 8 GPUs x top-8 = 1,024 assignments:
    # practically all 32 experts touched: 32 x 44,040,192 params x (1 + 4/16384) B = 1.41 GB read
    m, g = cat.model("deepseek-v3"), cat.gpu("h200")
    f = KernelFactors(compute_eff=1.0, mem_eff=1.0, floor_us=0.0)
    lay = ParallelLayout(attention_dp=8, ep=8)
    t = perf.grouped_gemm_s(Deployment(m, g, lay, Precision.of("fp8")), 128, 1024, factors=f)
    touched = 32 * (1 - (1 - 8 / 256) ** 128)
    assert t == pytest.approx(touched * 3 * 7168 * 2048 * (1 + 4 / 16384) / 4.8e12)


def test_grouped_gemm_counts_distinct_experts_per_token():
    # 64 decode tokens on DP-attn8 x EP8 (8 per GPU): a token picks 8 DISTINCT experts of 256, so one expert
    # is missed by a token with probability 1 - 8/256 and by all 64 with 0.96875^64: 1 - 0.96875^64 =
    # 0.868916 of the 32 local experts are read (the audit's S1 figure; 0.865194 if the 512 picks were
    # independent draws): 32 x 0.868916 x 44,040,192 x (1 + 4/16384) B = 1.22485 GB / 4.8 TB/s = 255.18 us
    m, g = cat.model("deepseek-v3"), cat.gpu("h200")
    f = KernelFactors(compute_eff=1.0, mem_eff=1.0, floor_us=0.0)
    t = perf.grouped_gemm_s(
        Deployment(m, g, ParallelLayout(attention_dp=8, ep=8), Precision.of("fp8")), 64, 512, factors=f
    )
    assert t * 1e6 == pytest.approx(255.177, abs=0.001)


def test_step_time_two_batch_overlap():
    m, g = cat.model("deepseek-v3"), cat.gpu("h800")
    lay = ParallelLayout(attention_dp=32, ep=32)
    eff = resolve_efficiency("h800", cat.efficiency)
    none = perf.step_time(Deployment(m, g, lay, "fp8", eff), perf.StepConfig("decode", 128, 4096, "none"))
    tbo = perf.step_time(Deployment(m, g, lay, "fp8", eff), perf.StepConfig("decode", 128, 4096, "two_batch"))
    assert none.step_s == pytest.approx(none.compute_s + none.comm_s)
    o = eff["system"].overlap_eff
    assert tbo.step_s == pytest.approx(max(tbo.compute_s, tbo.comm_s) + (1 - o) * min(tbo.compute_s, tbo.comm_s))
    assert none.tokens_per_s_per_gpu == pytest.approx(128 / none.step_s)
    with pytest.raises(ValueError, match="tokens_per_gpu must be > 0"):
        perf.StepConfig("decode", 0, 100)


def test_efficiency_inheritance_is_stated():
    eff = resolve_efficiency("gb300", cat.efficiency)
    assert eff.source["grouped_gemm_decode"].startswith("gb300")  # its own measured kernels
    assert "inherited by gb300" in eff.source["alltoall_low_latency"]  # no GB300 all-to-all case: a relative's
    rtx = resolve_efficiency("rtx-5090", cat.efficiency)
    assert (
        rtx.source["grouped_gemm_decode"].startswith("h200")
        and "inherited by rtx-5090" in rtx.source["grouped_gemm_decode"]
    )
    for g in cat.gpus:  # every catalog GPU resolves every family
        e = resolve_efficiency(g, cat.efficiency)
        assert all("generic default" not in s for s in e.source.values())


def test_predict_answers_every_case_in_its_unit():
    assert len(cat.validation_cases) >= 20
    errors: dict[str, list[float]] = {}
    published = []
    calibrated = {str(c["gpu"]) for c in cat.validation_cases if validation.case_family(c, cat) != "system"}
    for case in cat.validation_cases:
        value = validation.predict(dict(case))
        assert value > 0 and value == value
        err = abs(value / case["measured"]["value"] - 1)
        errors.setdefault(validation.case_family(case, cat), []).append(err)
        if not str(case["id"]).startswith("aic-"):
            published.append(err)
            # published deployments and communication benchmarks, in-sample: none off by more than 60% on a GPU
            # with kernel cases of its own (the worst: SGLang v0.5.8-0.5.9 aggregated at 64 clients, +49..+53%);
            # on an AMD Instinct, whose kernels take the H200's fractions of peak, within 85% (DeepSeek-R1 on
            # MI325X, +80%: README)
            assert err < (0.6 if str(case["gpu"]) in calibrated else 0.85), case["id"]
    assert statistics.median(published) < 0.15
    for fam, errs in errors.items():  # measured kernel tables, in-sample: the typical case within 20%
        assert statistics.median(errs) < 0.2, fam


def test_predict_works_for_other_models_and_gpus():
    base = dict(next(c for c in cat.validation_cases if c["id"] == "lmsys-h100-decode-ep72"))
    for model, gpu in (("qwen3-235b-a22b", "b200"), ("kimi-k2", "gb200"), ("mixtral-8x22b", "mi300x")):
        case = copy.deepcopy(base)
        case.update(
            model=model,
            gpu=gpu,
            num_gpus=64,
            options={**base["options"], "redundant_experts": 0},
            layout={
                "attention_tp": 1,
                "attention_dp": 64,
                "ep": 64 if model != "mixtral-8x22b" else 8,
                "expert_tp": 1 if model != "mixtral-8x22b" else 8,
                "pp": 1,
            },
        )
        assert validation.predict(case) > 0


def test_predict_reports_bad_cases():
    base = dict(cat.validation_cases[0])
    bad = {k: v for k, v in base.items() if k != "layout"}
    with pytest.raises(ValueError, match="missing field 'layout'"):
        validation.predict(bad)
    with pytest.raises(ValueError, match="unknown metric 'latency'"):
        validation.predict({**base, "measured": {"metric": "latency", "value": 1}})
    with pytest.raises(ValueError, match="unknown model id"):
        validation.predict({**base, "model": "gpt-5"})


def test_efficiency_yaml_is_the_current_fit():
    from bench.calibrate import fitted_profiles

    fresh = fitted_profiles(cat)
    for owner, fam in validation.fitted_families(cat.validation_cases, cat):
        stored = getattr(cat.efficiency[owner], fam).model_dump()
        for k, v in getattr(fresh[owner], fam).model_dump().items():
            assert stored[k] == pytest.approx(v, abs=2e-3), (owner, fam, k)


def test_leave_one_out_accuracy_holds():
    """Regression guard on the accuracy the README reports (leave-one-out, cases never fitted on). Read from the
    shipped table (the full refit takes ~20 s on two cores); test_loo_table.py checks that it is the current one."""
    from core.validation.loo_table import read_loo_table

    results, why = read_loo_table(cat)
    assert results is not None, f"{why}: run `python -m bench.calibrate --write`"
    s = validation.error_summary(results)
    # issue #18's targets: whole step median <= 12% and max <= 30%; kernel families median <= 15%, p90 <= 35%.
    # Met: all-to-all, attention decode, the whole-step median. Guarded at what is reached where not (README).
    assert s["alltoall_low_latency"]["median"] < 0.10 and s["alltoall_normal"]["median"] < 0.10
    assert s["attention_decode"]["median"] < 0.15 and s["attention_decode"]["p90"] < 0.35
    assert s["attention_prefill"]["median"] < 0.16 and s["attention_prefill"]["p90"] < 0.40
    assert s["grouped_gemm_decode"]["median"] < 0.17 and s["grouped_gemm_decode"]["p90"] < 0.45
    assert s["dense_gemm"]["median"] < 0.15 and s["dense_gemm"]["p90"] < 0.35
    assert s["grouped_gemm_prefill"]["median"] < 0.25
    assert s["grouped_gemm_weight_only"]["median"] < 0.20
    # the whole step: median 12.9%, max 80% (DeepSeek-R1 on MI325X, an AMD GPU without kernel cases of its own)
    assert s["system"]["median"] < 0.14 and s["system"]["max"] < 0.85
    # the Layouts page's tiers use the per-phase whole-step error stored in catalogs/step_error.yaml: current
    from bench.calibrate import step_error

    for phase, v in step_error(cat, results).items():
        assert cat.step_error[phase] == pytest.approx(v["median_loo_error"], abs=1e-3), phase


def test_aggregated_cases_are_priced_by_the_served_model():
    # TensorRT-LLM's Best_perf_practice_on_DeepSeek-R1 trtllm-bench runs, DP8 x EP8 in-flight batching: 5,393 / 4,548
    # (B200, FP8 / 16-bit KV) and 1,436 (H200) output tok/s per GPU. A decode step plus a separate prefill step of
    # batch x 1,024 / 2,048 prompt tokens put them at +44% / +20% / +1%; the served model (the prompts' chunks in the
    # decode steps at a full chunk's rate, the stack's served step, a step carrying prompt work x 1.5412 at DP8:
    # tech blog 10's 39,552 / 25,664) puts all three within 13%: -2.2% / -5.0% / +12.1% (+10.9% on H200, within 12%,
    # before TensorRT-LLM's fixed cost fell from 2.39 to 1.61 ms a step with InferenceX's 1.3.0rc14 points; this H200
    # run is on the 2025 document's engine)
    from core import serving
    from core.deployment.bundle import Deployment
    from core.deployment.specs import MemoryAssumptions, Workload
    from core.hardware.served_step import served_step_for
    from core.validation.cases import parse_case

    by_id = {str(c["id"]): c for c in cat.validation_cases}
    for cid, published in (
        ("trtllm-b200-r1-0528-fp4-fp8kv-1k2k", 5393),
        ("trtllm-b200-r1-fp4-16bitkv-1k2k", 4548),
        ("trtllm-h200-r1-fp8-1k2k", 1436),
    ):
        case = by_id[cid]
        assert case["measured"]["value"] == published
        predicted = validation.predict(dict(case))
        assert abs(predicted / published - 1) < 0.13, cid
        # the same number as the serving model's own, at the batch the run states
        c = parse_case(case, cat)
        o = case["options"]
        d = Deployment(
            c.model,
            c.gpu,
            c.layout,
            c.precision,
            cat.efficiency_for(c.gpu.id, c.stack),
            domain_gpus=c.domain,
            workload=Workload(input_len=1024, output_len=2048),
            assumptions=MemoryAssumptions(max_num_batched_tokens=o["max_num_batched_tokens"]),
            served_step=served_step_for("trtllm", "none"),
        )
        running = case["workload"]["batch_per_gpu"] * 8
        costs = serving.replica_costs(d, batches=(running,))
        assert costs.mixed_step_scale == pytest.approx(39552 / 25664, abs=1e-4)
        assert predicted == pytest.approx(
            serving.serve_saturated(costs, d.workload, running).output_tokens_per_s_per_gpu
        )


def test_the_shared_whole_step_factors_fit_on_gpus_with_kernel_cases_of_their_own():
    # an AMD Instinct has no kernel case (its kernels take the H200's fractions of peak): its whole-step cases are
    # predicted, not fitted on; the H200's are both
    from core.validation.calibration import residual_cases

    cases = list(cat.validation_cases)
    kernel_h200 = next(c for c in cases if c["gpu"] == "h200" and validation.case_family(c, cat) != "system")
    sys_h200 = next(c for c in cases if c["gpu"] == "h200" and validation.case_family(c, cat) == "system")
    sys_mi325 = next(c for c in cases if c["gpu"] == "mi325x" and validation.case_family(c, cat) == "system")
    assert residual_cases([kernel_h200, sys_h200, sys_mi325], cat) == [sys_h200]
    assert residual_cases([sys_h200, sys_mi325], cat) == []  # no kernel case anywhere: nothing to anchor on
    fitted = {str(c["id"]) for c in residual_cases(cases, cat)}
    system = [c for c in cases if validation.case_family(c, cat) == "system"]
    assert len(system) == 30 and len(fitted) == 25
    assert {str(c["gpu"]) for c in system if str(c["id"]) not in fitted} == {"mi325x", "mi355x"}
