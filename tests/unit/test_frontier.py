"""Published frontier points and the planner's model of them (issue 23). The data checks are independent of the
planner: each published point against the arithmetic its own numbers must satisfy, each case's reading of a
deployment against the GPU count the source published."""

import pytest

from core import serving
from core.catalog import load_catalog
from core.serving import frontier
from core.serving.frontier import Deployment, PoolSpec

CAT = load_catalog()
POINTS = frontier.load_frontier_points()
CASES = {c.id: c for c in frontier.load_frontier_cases()}


def test_the_points_hold_their_own_arithmetic():
    # a fixed-length run with c clients each streaming u tokens/s can deliver at most c x u output tokens/s; with
    # the prompts counted ("total") that is c x u x (isl + osl) / osl. Each figure sits at or below that bound
    # (clients also wait for their first token) and not far below it at low concurrency. InferenceX GB200 c4:
    # 4 x 286.4 x 2 / 36 = 63.6 tok/s/GPU bound, 60.7 published
    checked = 0
    for p in POINTS.values():
        if not (p.concurrency and p.tokens_per_s_per_user and p.gpus and p.isl and p.osl):
            continue
        per_token = {"output": 1.0, "total": (p.isl + p.osl) / p.osl}.get(p.throughput_kind)
        if per_token is None:  # "computed": the cache hits are not published
            continue
        bound = p.concurrency * p.tokens_per_s_per_user * per_token / p.gpus
        assert p.tokens_per_s_per_gpu <= 1.01 * bound, p.id
        if p.concurrency <= 48:
            assert p.tokens_per_s_per_gpu >= 0.55 * bound, p.id
        checked += 1
    assert checked >= 30


def test_each_reading_uses_the_gpus_the_source_published():
    # e.g. "prefill 4 GPU, TP=4; decode 32 GPU, EP=8" read as 1 x TP4 + 4 x DEP8: 4 + 32 = 36 GPUs, as published
    for case in CASES.values():
        for dep in case.deployments:
            if dep.colocated is not None:
                gpus = dep.colocated.replicas * dep.colocated.layout().total_gpus
            else:
                gpus = sum(pool.replicas * pool.layout().total_gpus for pool in (dep.prefill, dep.decode))
            for pid in dep.points:
                if POINTS[pid].gpus is not None:
                    assert POINTS[pid].gpus == gpus, (case.id, pid)


def test_the_issue_targets_are_covered():
    # DeepSeek-R1 / V3 on GB200 NVL72 and on B200, Qwen3.5-397B on B200, the Kimi-K2.6 DCP reference
    targets = {(c.model, c.gpu) for c in CASES.values()}
    assert {("deepseek-v3", "gb200"), ("deepseek-v3", "b200"), ("qwen3.5-397b-a17b", "b200")} <= targets
    assert ("kimi-k2.6", "b200") in targets


def test_bad_entries_are_refused():
    with pytest.raises(ValueError, match="ep 3 must divide"):
        PoolSpec(tp=4, ep=3)
    with pytest.raises(ValueError, match="decode context parallel size 8 must divide attention TP 4"):
        PoolSpec(tp=4, ep=4, dcp=8)
    with pytest.raises(ValueError, match="either colocated, or has both"):
        Deployment(points=("x",), prefill=PoolSpec())
    with pytest.raises(ValueError, match="no separate prefill or decode pool"):
        Deployment(points=("x",), colocated=PoolSpec(), prefill=PoolSpec(), decode=PoolSpec())
    with pytest.raises(ValueError, match="max_running_requests"):
        Deployment(points=("x",), colocated=PoolSpec(), max_running_requests=0)
    with pytest.raises(ValueError, match="accepted_length"):
        Deployment(
            points=("x",), colocated=PoolSpec(), speculative={"draft_tokens": 1, "accepted_length": 0.5, "source": "s"}
        )
    with pytest.raises(ValueError, match="unknown frontier case 'nope'"):
        frontier.model_case("nope", CAT)


def test_unknown_points_in_a_case_file_are_named(tmp_path):
    f = tmp_path / "cases.yaml"
    f.write_text(
        "cases:\n  - {id: a, title: t, model: kimi-k2.6, gpu: b200, weights: nvfp4, kv_cache: fp8, stack: vllm,\n"
        "     isl: 10, osl: 10, deployments: [{points: [no-such-point], colocated: {tp: 8, ep: 8}}]}\n"
    )
    with pytest.raises(ValueError, match=r"names unknown point.*no-such-point"):
        frontier.load_frontier_cases(f)


def test_a_gap_reads_the_modelled_rate_in_the_points_kind():
    # 2 requests/s of 1,000 prompt tokens (900 cached) and 100 output on 8 GPUs: output 25, total 275, computed
    # (100 + 100) x 2 / 8 = 50 tok/s/GPU
    m = serving.ServingPoint(4, 4, 3, 2.0, 0.1, 0.02, 25.0, 275.0, 0.1, "latency-bound", 50.0)
    base = POINTS["vllm-kimik26-b200x8-tp8ep8-c16"]
    for kind, want in (("output", 25.0), ("total", 275.0), ("computed", 50.0)):
        gap = frontier.PointGap(base.model_copy(update={"throughput_kind": kind}), "TP8", m)
        assert gap.modelled_tokens_per_s_per_gpu == want
        assert gap.throughput_ratio == pytest.approx(want / 1720.0)
    assert gap.user_ratio == pytest.approx(50 / 41.0)  # 1 / 0.02 s per token against 41 published


def test_the_kimi_reference():
    # vLLM's Kimi-K2.6 post: TP 8's KV cache fills at 64 clients and its throughput plateaus near 1,863 tok/s/GPU;
    # DCP 8 reaches 6,091 at 512 clients (3.27x). The plateau is within 25%; the DCP ratio is not (the gap the
    # planner states: about 1.9x modelled)
    m = frontier.model_case("kimi-k2.6-b200-agentic-dcp", CAT)
    by_id = {g.point.id: g for g in m.gaps}
    tp64 = by_id["vllm-kimik26-b200x8-tp8ep8-c64"]
    assert tp64.modelled.regime == "KV cache full"
    assert tp64.throughput_ratio == pytest.approx(1.0, abs=0.25)
    dcp512 = by_id["vllm-kimik26-b200x8-dcp8-c512"]
    ratio = dcp512.modelled_tokens_per_s_per_gpu / tp64.modelled_tokens_per_s_per_gpu
    assert 1.5 < ratio < 3.27 * 0.75  # a stated gap: modelled DCP gains less than measured


def test_the_prompt_work_a_point_implies():
    # vLLM's Kimi-K2.6 DCP 8 at 512 clients: 6,091 tok/s/GPU x 8 GPUs = 48,728 tok/s, of which 512 clients streaming
    # 5.0 tok/s take at most 2,560: at least 46,168 computed prompt tokens/s. A "total" point counts every prompt
    # token: with 90% prefix hits a tenth of them, 4,616.8; an "output" point implies nothing
    m = serving.ServingPoint(4, 4, 3, 2.0, 0.1, 0.02, 25.0, 275.0, 0.1, "latency-bound", 50.0)
    p = POINTS["vllm-kimik26-b200x8-dcp8-c512"]
    gap = frontier.PointGap(p, "TP8 DCP8", m, 40_000.0, 0.9)
    assert gap.implied_prompt_tokens_per_s == pytest.approx(46_168.0)
    assert gap.beyond_prefill_ceiling
    assert not frontier.PointGap(p, "TP8 DCP8", m, 50_000.0, 0.9).beyond_prefill_ceiling
    total = frontier.PointGap(p.model_copy(update={"throughput_kind": "total"}), "TP8 DCP8", m, 40_000.0, 0.9)
    assert total.implied_prompt_tokens_per_s == pytest.approx(4_616.8)
    out = frontier.PointGap(p.model_copy(update={"throughput_kind": "output"}), "TP8 DCP8", m, 40_000.0, 0.9)
    assert out.implied_prompt_tokens_per_s is None and not out.beyond_prefill_ceiling
    assert frontier.PointGap(p, "TP8 DCP8", m).beyond_prefill_ceiling is False  # no ceiling known


def test_the_kimi_dcp_points_need_more_prefill_than_the_model_has():
    # the modelled TP 8 replica prefills the case's 67,600-token prompts (90% cached) at some R prompt tok/s doing
    # nothing else; R is bounded by the B200's BF16 peak: each computed token's attention alone is 61 layers x 64
    # heads x 2 x 64,220 average context x (192 + 128) = 1.605e11 FLOPs, so R < 8 x 2.25e15 / 1.605e11 = 112,150.
    # DCP's points from 128 clients up need more than R (35,472, 41,664, 46,168): their gap is the prefill's
    m = frontier.model_case("kimi-k2.6-b200-agentic-dcp", CAT)
    by_id = {g.point.id: g for g in m.gaps}
    ceiling = by_id["vllm-kimik26-b200x8-dcp8-c512"].prefill_ceiling_tokens_per_s
    assert 10_000 < ceiling < 112_150
    beyond = {g.point.id for g in m.gaps if g.beyond_prefill_ceiling}
    assert {"vllm-kimik26-b200x8-dcp8-c256", "vllm-kimik26-b200x8-dcp8-c512"} <= beyond
    assert not any("tp8ep8" in i for i in beyond)  # TP's points fit under it (13,104 to 14,200)


def test_every_case_models_every_point():
    for cid in CASES:
        m = frontier.model_case(cid, CAT)
        assert len(m.gaps) == sum(len(d.points) for d in CASES[cid].deployments)
        assert all(0.1 < g.throughput_ratio < 10 for g in m.gaps), cid
        assert all(len(curve) >= 2 for _, curve in m.curves)


def _gap(pid: str, concurrency: int | None, tput_ratio: float, user_ratio: float | None):
    # a published point of 1,000 output tok/s/GPU and 10 tok/s/user, modelled at the given ratios
    base = POINTS["vllm-kimik26-b200x8-tp8ep8-c16"].model_copy(
        update={
            "id": pid,
            "concurrency": concurrency,
            "throughput_kind": "output",
            "tokens_per_s_per_gpu": 1000.0,
            "tokens_per_s_per_user": None if user_ratio is None else 10.0,
        }
    )
    tpot = 1.0 / (10.0 * (user_ratio or 1.0))
    m = serving.ServingPoint(1, 1, 1, 1.0, 0.1, tpot, 1000.0 * tput_ratio, 1000.0, 0.1, "latency-bound", 1000.0)
    return frontier.PointGap(base, "TP8", m)


def test_the_gap_summaries_by_hand():
    from core.serving.frontier_gaps import concurrency_band, frontier_gaps

    # ten low-band points whose throughput is off by +10%, -20%, +30%, ..., (-1)^i x 10 x (i + 1) %: |errors| 10..100%
    # median of 10..100 = (50 + 60) / 2 = 55%; P90 at 0.9 x 9 = 8.1 -> 90 + 0.1 x (100 - 90) = 91%; signed median of
    # +10 -20 +30 -40 +50 -60 +70 -80 +90 -100 sorted: -100 -80 -60 -40 -20 10 30 50 70 90 -> (-20 + 10) / 2 = -5%
    low = [_gap(f"p{i}", 1 + i % 4, 1 + (-1) ** i * 0.1 * (i + 1), 1.25) for i in range(10)]
    # two high points (+0% and -50% throughput; one without a per-user speed), one with no stated concurrency
    high = [_gap("h1", 64, 1.0, 0.5), _gap("h2", 512, 0.5, None), _gap("u", None, 2.0, None)]
    case = CASES["kimi-k2.6-b200-agentic-dcp"]
    m = frontier.CaseModel(case, (), tuple(low + high), "output")
    g = frontier_gaps([m])
    bands = {s.group: s for s in g.bands}
    assert [s.group for s in g.bands] == ["low", "high", "unstated"]
    assert bands["low"].points == 10
    assert bands["low"].throughput_median == pytest.approx(0.55)
    assert bands["low"].throughput_p90 == pytest.approx(0.91)
    assert bands["low"].throughput_bias == pytest.approx(-0.05)
    assert bands["low"].user_median == pytest.approx(0.25) and bands["low"].user_points == 10
    assert bands["high"].points == 2 and bands["high"].user_points == 1
    assert bands["high"].throughput_median == pytest.approx(0.25)  # |0| and |-0.5|
    assert bands["high"].throughput_p90 == pytest.approx(0.45)  # 0 + 0.9 x 0.5
    assert bands["high"].user_median == pytest.approx(0.5)
    assert bands["unstated"].user_median is None
    assert g.overall.points == 13 and g.cases[0].points == 13
    assert [concurrency_band(c) for c in (1, 4, 5, 63, 64, 4096, None)] == [
        "low",
        "low",
        "mid",
        "mid",
        "high",
        "high",
        "unstated",
    ]
    with pytest.raises(ValueError, match="whole number of clients"):
        concurrency_band(0)


def test_the_band_counts_match_the_case_file():
    # counted from the YAML files alone: every point a case names, by its published concurrency
    import yaml

    from core.serving.frontier import CASES_PATH, POINTS_PATH
    from core.serving.frontier_gaps import frontier_gaps

    pts = {p["id"]: p for p in yaml.safe_load(POINTS_PATH.read_text())["points"]}
    named = [
        pts[i] for c in yaml.safe_load(CASES_PATH.read_text())["cases"] for d in c["deployments"] for i in d["points"]
    ]
    low = sum(1 for p in named if p.get("concurrency") and p["concurrency"] <= 4)
    high = sum(1 for p in named if p.get("concurrency") and p["concurrency"] >= 64)
    g = frontier_gaps([frontier.model_case(c, CAT) for c in CASES])
    bands = {s.group: s.points for s in g.bands}
    assert bands.get("low", 0) == low and bands.get("high", 0) == high
    assert g.overall.points == len(named)


def test_a_frontier_case_pays_the_stacks_served_step():
    # TensorRT-LLM's fitted served step (catalogs/served_step.yaml, read here directly): fixed 2.3943 ms a step, no
    # per-layer term. DeepSeek-R1 FP4 min-latency on 8 x B200 at one client: its modelled time per output token is
    # the kernel step of one sequence (the replica's costs without a served step) + exactly those 2.3943 ms
    import yaml

    from core.deployment import bundle
    from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, Workload
    from core.hardware.served_step import SERVED_STEP_PATH, served_step_cost

    fit = next(f for f in yaml.safe_load(SERVED_STEP_PATH.read_text())["fits"] if f["engine"] == "trtllm")
    assert fit["per_layer_s"] == 0.0
    case = CASES["deepseek-r1-b200-single-node"]
    m = frontier.model_case(case.id, CAT)
    one = next(g for g in m.gaps if g.point.id == "trtllm-dsr1-fp4-b200x8-minlat-nomtp")
    kernels = bundle.Deployment(
        CAT.model("deepseek-v3"),
        CAT.gpu("b200"),
        ParallelLayout(attention_tp=8, ep=8),
        Precision(weights="nvfp4", kv_cache="fp8"),
        CAT.efficiency_for("b200", "trtllm"),
        workload=Workload(input_len=1024, output_len=2048),
        assumptions=MemoryAssumptions(gpu_memory_utilization=0.9),
        redundant_experts=0,
    )
    kernel_s = serving.replica_costs(kernels).decode_s(1)
    served_s = serving.replica_costs(kernels.with_(served_step=served_step_cost("trtllm"))).decode_s(1)
    assert served_s - kernel_s == pytest.approx(fit["fixed_s"], rel=1e-9)
    # the frontier's point is that served replica at one client (its TPOT: the step of the one sequence in decode)
    assert one.modelled.tpot_s == pytest.approx(
        serving.serve_closed_loop(
            serving.replica_costs(kernels.with_(served_step=served_step_cost("trtllm"))), kernels.workload, 1
        ).tpot_s,
        rel=1e-9,
    )
    assert one.modelled.tpot_s > kernel_s + fit["fixed_s"] * 0.99


def test_the_whole_curves_cover_six_models_and_five_accelerators():
    # issue 35: at least 6 models and 5 accelerators, concurrency 1 to 512, each point at its own deployment
    named = [POINTS[i] for c in CASES.values() for d in c.deployments for i in d.points]
    assert len({c.model for c in CASES.values()}) >= 6
    assert {"b200", "gb200", "h200", "h100-sxm", "mi355x"} <= {c.gpu for c in CASES.values()}
    concurrencies = {p.concurrency for p in named if p.concurrency}
    assert min(concurrencies) == 1 and 512 in concurrencies
    assert len(named) == len(set(p.id for p in named))  # no point modelled twice


def test_the_current_version_bands_by_hand():
    from dataclasses import replace

    from core.serving.frontier_gaps import frontier_gaps

    # three low points at +10%, -20%, +40% throughput; the -20% one on an older engine version: every point's low band
    # has median |error| 20%, the current versions' (10% and 40%) (10 + 40) / 2 = 25% with P90 10 + 0.9 x 30 = 37%
    old = replace(_gap("o", 2, 0.8, None), older_version=True)
    m = frontier.CaseModel(
        CASES["kimi-k2.6-b200-agentic-dcp"], (), (_gap("a", 1, 1.1, None), old, _gap("b", 4, 1.4, None)), "output"
    )
    g = frontier_gaps([m])
    assert (g.bands[0].points, g.bands[0].throughput_median) == (3, pytest.approx(0.2))
    assert g.current_points == 2 and [s.group for s in g.current_bands] == ["low"]
    assert g.current_bands[0].throughput_median == pytest.approx(0.25)
    assert g.current_bands[0].throughput_p90 == pytest.approx(0.37)
    assert g.current_overall.points == 2 and g.overall.points == 3
    assert [p.older_version for p in g.points] == [False, True, False]


def test_the_judged_bands_leave_out_the_cases_not_judged_by_hand():
    from core.serving.frontier_gaps import frontier_gaps

    # a judged case with low points at +10% and +40%, and one whose not_in_target says why with a point at -50%:
    # current versions (10, 40, 50) median 40%; judged (10, 40) median (10 + 40) / 2 = 25%, P90 10 + 0.9 x 30 = 37%
    judged = CASES["deepseek-r1-b200-single-node"].model_copy(update={"not_in_target": ""})
    out = CASES["deepseek-r1-b200-single-node"].model_copy(update={"id": "reference", "not_in_target": "no trace"})
    ms = [
        frontier.CaseModel(judged, (), (_gap("a", 1, 1.1, None), _gap("b", 4, 1.4, None)), "output"),
        frontier.CaseModel(out, (), (_gap("c", 2, 0.5, None),), "output"),
    ]
    g = frontier_gaps(ms)
    assert (g.current_points, g.current_bands[0].throughput_median) == (3, pytest.approx(0.4))
    assert g.target_points == 2 and [s.group for s in g.target_bands] == ["low"]
    assert g.target_bands[0].throughput_median == pytest.approx(0.25)
    assert g.target_bands[0].throughput_p90 == pytest.approx(0.37)
    assert g.target_overall.points == 2
    assert [p.in_target for p in g.points] == [True, True, False]
    # the table rows the page and the bench print: the bands, then the overall row
    assert [(s.group, s.points) for s in g.band_table("target")] == [("low", 2), ("all", 2)]
    assert [(s.group, s.points) for s in g.band_table("every")] == [("low", 3), ("all", 3)]
    with pytest.raises(ValueError, match="which must be one of every, current, target"):
        g.band_table("judged")
    # the shipped file: only the Kimi-K2.6 agentic-trace reference is not judged, and it says why
    assert [c.id for c in CASES.values() if c.not_in_target] == ["kimi-k2.6-b200-agentic-dcp"]


def test_the_current_version_counts_match_the_case_file():
    # counted from the YAML files alone: the points of deployments whose tag marks an older engine version ("(older")
    # are left out of the current-version bands
    import yaml

    from core.serving.frontier import CASES_PATH, POINTS_PATH
    from core.serving.frontier_gaps import frontier_gaps

    pts = {p["id"]: p for p in yaml.safe_load(POINTS_PATH.read_text())["points"]}
    deps = [d for c in yaml.safe_load(CASES_PATH.read_text())["cases"] for d in c["deployments"]]
    current = [pts[i] for d in deps if "(older" not in d.get("tag", "") for i in d["points"]]
    older = sum(len(d["points"]) for d in deps if "(older" in d.get("tag", ""))
    assert older == 13  # Qwen3.5-397B on MI355X: SGLang v0.5.10rc0 TP2 (4) and TP4 (4), v0.5.8.post1 TP8 (5)
    g = frontier_gaps([frontier.model_case(c, CAT) for c in CASES])
    assert g.current_points == len(current) == len(g.points) - older
    counts = {s.group: s.points for s in g.current_bands}
    for band, inside in (("low", lambda c: c <= 4), ("mid", lambda c: 5 <= c <= 63), ("high", lambda c: c >= 64)):
        assert counts.get(band, 0) == sum(1 for p in current if p.get("concurrency") and inside(p["concurrency"]))
    assert counts.get("unstated", 0) == sum(1 for p in current if not p.get("concurrency"))
    assert g.current_overall.points == len(current)


def test_a_what_if_calibration_reaches_every_deployment_of_a_case():
    # bench.frontier --prefill-scale 2: every prefill step x 2, so the prompt tokens/s a deployment prefills doing
    # nothing else halves (GLM-5 on 8 x B200: prefill_ceiling_tokens_per_s / 2), and a busier replica serves fewer
    # tokens per GPU; the decode-only point of a disaggregated case is untouched by a prefill scale (its decode pool
    # prefills nothing) while its prefill pool's ceiling halves too
    from core.deployment.calibration import ServedCalibration

    cal = ServedCalibration(prefill_step_scale=2.0, source="what-if", runs=1, fit_residual=0.0)
    plain, slow = frontier.model_case("glm-5-b200-8k1k", CAT), frontier.model_case("glm-5-b200-8k1k", CAT, cal)
    for a, b in zip(plain.gaps, slow.gaps, strict=True):
        assert a.point.id == b.point.id
        assert b.prefill_ceiling_tokens_per_s == pytest.approx(a.prefill_ceiling_tokens_per_s / 2, rel=1e-9)
        assert b.modelled.total_tokens_per_s_per_gpu < a.modelled.total_tokens_per_s_per_gpu
    assert frontier.model_case("glm-5-b200-8k1k", CAT) is plain  # the shipped, uncalibrated model stays cached
    dis = frontier.model_case("deepseek-r1-b200-1k1k", CAT, cal)
    base = frontier.model_case("deepseek-r1-b200-1k1k", CAT)
    for a, b in zip(base.gaps, dis.gaps, strict=True):
        assert b.prefill_ceiling_tokens_per_s == pytest.approx(a.prefill_ceiling_tokens_per_s / 2, rel=1e-9)
    with pytest.raises(TypeError, match="calibration must be a ServedCalibration"):
        frontier.model_case("glm-5-b200-8k1k", CAT, 2.0)


def test_a_recipes_cap_on_running_requests_holds_the_rest_in_the_queue():
    # InferenceX's MI355X GLM-5 MTP recipe sets no --max-running-requests, which SGLang resets to 48 with speculative
    # decoding: at 64 and at 128 clients the TP4 replica runs 48 (the published points: ~1,900 tok/s/GPU and 18
    # tok/s/user at both), the other clients wait in the queue (their wait is TTFT, not TPOT)
    case = next(c for c in frontier.load_frontier_cases() if c.id == "glm-5-mi355x-8k1k-mtp")
    assert case.max_running_requests == 48
    gaps = {g.point.concurrency: g for g in frontier.model_case(case, CAT).gaps if "tp4" in g.point.id}
    at64, at128 = gaps[64].modelled, gaps[128].modelled
    assert at64.running == pytest.approx(48) and at128.running == pytest.approx(48)
    assert at128.tokens_per_s_per_user == pytest.approx(at64.tokens_per_s_per_user, rel=1e-9)
    assert at128.ttft_s > at64.ttft_s  # twice the clients, the same 48 running: the queue is longer
    uncapped = frontier.model_case(case.model_copy(update={"max_running_requests": None}), CAT)
    assert {g.point.concurrency: g.modelled.running for g in uncapped.gaps if "tp4" in g.point.id}[128] > 48


def test_a_deployment_runs_its_own_recipes_drafting_and_running_cap():
    # InferenceX's DeepSeek-R1 FP4 B200 disaggregated curve (NVIDIA/srt-slurm recipes/trtllm/b200-fp4/1k1k/mtp/):
    # at 6 clients 5 TEP8 decode workers with max_batch_size 1 and MTP 3; at 875 clients 5 DEP8 workers with
    # max_batch_size 16 per attention rank (16 x 8 = 128 per replica) and MTP 3; at 1,214 two DEP8 with 64 per rank
    # (512 per replica) and MTP 2. The case's own drafting is MTP 1.
    case = CASES["deepseek-r1-b200-1k1k"]
    assert case.speculative.draft_tokens == 1
    by_point = {p: dep for dep in case.deployments for p in dep.points}
    c6, c875, c1214 = (by_point[f"ix-dsr1-fp4-b200-1k1k-c{n}"] for n in (6, 875, 1214))
    assert (c6.max_running_requests, c875.max_running_requests, c1214.max_running_requests) == (1, 128, 512)
    assert (c6.speculative.draft_tokens, c875.speculative.draft_tokens, c1214.speculative.draft_tokens) == (3, 3, 2)
    gaps = {g.point.concurrency: g.modelled for g in frontier.model_case(case.id, CAT).gaps}
    # running: 5 replicas x 1 = 5 of 6 clients; 5 x 128 = 640 of 875; 2 x 512 = 1,024 of 1,214
    assert gaps[6].running == pytest.approx(5) and gaps[875].running == pytest.approx(640)
    assert gaps[1214].running == pytest.approx(1024)
    # the deployment's acceptance is the one used: at one sequence per replica a verification cycle is the same
    # whatever is accepted, so halving the accepted length (2.82 -> 1.41) doubles the time per output token
    half = c6.speculative.model_copy(update={"accepted_length": 1.41})
    variant = case.model_copy(update={"deployments": (c6.model_copy(update={"speculative": half}),)})
    slow = frontier.model_case(variant, CAT).gaps[0].modelled
    assert slow.tpot_s / gaps[6].tpot_s == pytest.approx(2.82 / 1.41, rel=1e-6)


def test_a_group_is_within_the_issue_target_only_when_both_metrics_are():
    from core.serving.frontier_gaps import GapStats

    def stats(tm, tp, um=None, up=None):
        return GapStats("low", 10, tm, tp, 0.0, 0 if um is None else 10, um, up, None)

    # issue 35: median |error| <= 15% and P90 <= 35%, tok/s per GPU and (where published) per user
    assert stats(0.15, 0.35).within_target
    assert not stats(0.151, 0.2).within_target and not stats(0.1, 0.351).within_target
    assert stats(0.1, 0.3, 0.15, 0.35).within_target
    assert not stats(0.1, 0.3, 0.1, 0.48).within_target  # per user misses: the group misses


def test_the_inferencex_sweep_points_are_their_quoted_rows():
    # The SGLang and TensorRT-LLM DeepSeek-R1 sweeps (InferenceX image-refresh pull requests): each point quotes its row
    # "<isl>k/1k c<c> TP<tp> EP<ep> | total | output | TTFT | TPOT"; the point's fields are that row's (tok/s/GPU = the
    # total column, tok/s/user = 1000 / TPOT, GPUs = TP), and total / output = (isl + 0.9 ... ) ~ (isl + osl) / osl
    # within the rounding of the two columns. The same rows at one client are served-step points with the same TPOT.
    import re

    import yaml

    from core.hardware.served_step import SERVED_STEP_PATH

    row = re.compile(r'"(\d+)k/1k c(\d+) TP(\d+) EP(\d+) \| ([\d,.]+) \| ([\d,.]+) \| ([\d,.]+) \| ([\d,.]+)"')
    # a one-layout table keyed by concurrency (the MI325X sweep): 8k/1k, TP8/EP1): "| c | total | output | ..."
    by_conc = re.compile(
        r'(\d+)k/1k, TP(\d+)/EP(\d+)\): "\| (\d+) \| ([\d,.]+) \| ([\d,.]+) \| ([\d,.]+) \| ([\d,.]+) \|"'
    )
    sweep = [p for p in POINTS.values() if p.id.startswith("ix-dsr1-") and ("-sgl-" in p.id or "-trt-" in p.id)]
    assert len(sweep) == 56  # 49 SGLang (44 v0.5.12 on B200 / B300 / H200, 5 v0.5.19 on MI325X), 7 TensorRT-LLM
    tpot_at_one = {}
    for p in sweep:
        got = row.search(p.source)
        if got:
            isl_k, c, tp, ep = (int(g) for g in got.groups()[:4])
        else:
            got = by_conc.search(p.source.replace("\n", " "))
            assert got, p.id
            isl_k, tp, ep, c = (int(g) for g in got.groups()[:4])
        total, output, _, tpot = (float(g.replace(",", "")) for g in got.groups()[4:])
        assert (p.isl, p.osl, p.concurrency, p.gpus) == (isl_k * 1024, 1024, c, tp), p.id
        assert p.tokens_per_s_per_gpu == total and p.throughput_kind == "total", p.id
        assert p.tokens_per_s_per_user == pytest.approx(1000 / tpot, abs=0.006), p.id
        assert total / output == pytest.approx((p.isl + p.osl) / p.osl, rel=0.015), p.id
        if c == 1:
            tpot_at_one[(p.gpu, "fp4" if "-fp4-" in p.id else "fp8", isl_k, tp, ep)] = tpot
    served = yaml.safe_load(SERVED_STEP_PATH.read_text(encoding="utf-8"))["measurements"]
    ones = {
        (
            m["gpu"],
            "fp4" if m["precision"]["experts"] == "nvfp4" else "fp8",
            m["isl"] // 1024,
            m["gpus"],
            m["layout"]["ep"],
        ): m["measured"]["tpot_ms"]
        for m in served
        if m["id"].startswith("ix-sglang-") and "dsr1" in m["id"] and m["concurrency"] == 1
    }
    assert ones == tpot_at_one and len(ones) == 8
