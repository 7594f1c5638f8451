"""The deployment resolved once from a scenario (core.scenario.resolve), its checks, and a served calibration carried
from the URL into the step model."""

from __future__ import annotations

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment, InvalidLayout
from core.deployment.calibration import ServedCalibration
from core.deployment.specs import ParallelLayout, Precision, Scenario, SpecDecodeConfig
from core.scenario import scenario_from_params, scenario_to_params
from core.scenario.deploy import resolve

cat = load_catalog()


def test_the_default_scenario_resolves_to_the_default_plan_on_one_h200_node():
    d = resolve(Scenario(), cat)
    # the README's default: DeepSeek-V3 FP8 on 8 x H200, DP-attention 8 x EP 8 (the layout search's first decode plan)
    assert (d.model.id, d.gpu.id) == ("deepseek-v3", "h200")
    assert (d.layout.attention_tp, d.layout.attention_dp, d.layout.ep, d.layout.expert_tp) == (1, 8, 8, 1)
    # one 8-GPU node: the scale-up domain is the node (min(8 GPUs, max(8 per node, H200's NVLink domain of 8)))
    assert d.domain == 8 and d.cluster.total_gpus == 8
    assert d.stack == "sglang" and d.efficiency.gpu == "h200"
    assert d.precision == Precision(weights="fp8", kv_cache="bf16", dispatch="fp8")
    assert d.draft is None and d.calibration is None


def test_a_separate_draft_model_is_looked_up_once():
    spec = SpecDecodeConfig(method="draft_model", draft_model_id="qwen3-0.6b", num_speculative_tokens=4)
    s = Scenario(model_id="qwen3-30b-a3b", gpu_id="h100-sxm", spec=spec)
    assert resolve(s, cat).draft.id == "qwen3-0.6b"


def test_a_layout_the_model_cannot_run_is_refused_with_every_problem():
    # 12 GPUs as DP-attention 12 x EP 12: 256 routed experts do not split over 12 GPUs
    s = Scenario(gpus_per_node=12, layout=ParallelLayout(attention_dp=12, ep=12))
    with pytest.raises(InvalidLayout, match="EP 12 does not divide the 256 routed experts"):
        resolve(s, cat)
    # with 4 redundant expert slots (260 = 12 x 21.67: still not whole) it stays refused; 8 slots (264 = 12 x 22) run
    assert resolve(s.model_copy(update={"memory": s.memory.model_copy(update={"redundant_experts": 8})}), cat)


def test_an_imported_model_replaces_the_catalog_one():
    other = cat.model("qwen3-30b-a3b")
    d = resolve(Scenario(layout=ParallelLayout(attention_tp=8, ep=8)), cat, model=other)
    assert d.model is other


def test_the_scale_up_domain_is_the_clusters_over_several_nodes():
    # 4 nodes of 8 H100: NVLink joins a node's 8 GPUs, so collectives beyond 8 cross the network
    s = Scenario(gpu_id="h100-sxm", num_nodes=4, layout=ParallelLayout(attention_tp=8, ep=8, pp=4))
    assert resolve(s, cat).domain == 8
    # one GB200 NVL72 rack of 18 four-GPU trays: the domain is the 72-GPU rack
    r = Scenario(gpu_id="gb200", num_nodes=18, gpus_per_node=4, layout=ParallelLayout(attention_dp=72, ep=72))
    assert (
        resolve(r.model_copy(update={"memory": r.memory.model_copy(update={"redundant_experts": 32})}), cat).domain
        == 72
    )


def test_with_layout_keeps_everything_else_and_checks_the_new_layout():
    d = resolve(Scenario(), cat)
    tp8 = d.with_layout(ParallelLayout(attention_tp=8, ep=8))
    assert tp8.layout.attention_tp == 8 and tp8.efficiency is d.efficiency and tp8.cluster is d.cluster
    with pytest.raises(InvalidLayout, match="EP 3"):
        d.with_layout(ParallelLayout(attention_dp=3, ep=3))


def test_a_calibration_scales_its_phase_of_the_step_and_nothing_else():
    d = resolve(Scenario(), cat)
    cal = ServedCalibration(
        decode_step_scale=1.25, prefill_step_scale=0.8, source="bench.json", runs=2, fit_residual=0.03
    )
    c = d.with_(calibration=cal)
    dec, pre = perf.StepConfig("decode", 8.0, 2304), perf.StepConfig("prefill", 2048.0, 2048)
    # decode: 1.25 x the uncalibrated step, each component too (they still sum to the step's parts)
    base, cal_dec = perf.step_time(d, dec), perf.step_time(c, dec)
    assert cal_dec.step_s == pytest.approx(1.25 * base.step_s, rel=1e-12)
    assert cal_dec.components["routed_experts"] == pytest.approx(1.25 * base.components["routed_experts"], rel=1e-12)
    assert cal_dec.tokens_per_s_per_gpu == pytest.approx(base.tokens_per_s_per_gpu / 1.25, rel=1e-12)
    # prefill: 0.8 x
    assert perf.step_time(c, pre).step_s == pytest.approx(0.8 * perf.step_time(d, pre).step_s, rel=1e-12)


def test_the_calibration_travels_in_the_url_and_back():
    params = {"cdec": "1.3", "cpre": "2", "csrc": "bench.json (vLLM bench serve)", "cruns": "2", "cres": "0.04"}
    s, warnings = scenario_from_params(params, cat)
    assert warnings == []
    assert s.calibration == ServedCalibration(
        decode_step_scale=1.3, prefill_step_scale=2.0, source="bench.json (vLLM bench serve)", runs=2, fit_residual=0.04
    )
    assert {k: v for k, v in scenario_to_params(s).items() if k.startswith("c")} == params
    assert resolve(s, cat).calibration == s.calibration


def test_a_calibration_out_of_range_in_the_url_is_named():
    s, warnings = scenario_from_params({"cdec": "9"}, cat)
    assert "cdec=9 is outside 0.2-5 (decode step scale)" in warnings[0]
    assert s.calibration.decode_step_scale == 1.0  # the default for that field, the rest as given
    s, warnings = scenario_from_params({"cdec": "1.1", "csrc": "a\u202eb"}, cat)
    assert s.calibration is None and "source must be one line of printable text" in warnings[-1]


def test_a_deployment_refuses_a_cluster_of_another_gpu():
    d = resolve(Scenario(), cat)
    with pytest.raises(ValueError, match=r"the cluster's GPU \(h200\) is not the deployment's \(b200\)"):
        Deployment(d.model, cat.gpu("b200"), d.layout, cluster=d.cluster)


def test_a_calibration_is_saved_with_its_scenario_and_calibrates_no_other(tmp_path):
    from core.store.sqlite import SQLiteStore

    cal = ServedCalibration(decode_step_scale=1.4, prefill_step_scale=3.0, source="c32.json", runs=1, fit_residual=0.02)
    mine = Scenario(calibration=cal)
    store = SQLiteStore(tmp_path / "s.db")
    store.save("calibrated on our H200s", mine)
    store.save("plain", Scenario())
    assert store.get("calibrated on our H200s").scenario.calibration == cal
    # the other scenario plans uncalibrated: its decode step is the catalog model's, 1 / 1.4 of the calibrated one's
    other = resolve(store.get("plain").scenario, cat)
    assert other.calibration is None
    cfg = perf.StepConfig("decode", 8.0, 2304)
    assert perf.step_time(resolve(mine, cat), cfg).step_s == pytest.approx(1.4 * perf.step_time(other, cfg).step_s)


def test_a_plan_whose_largest_part_is_the_fitted_overhead_does_not_call_it_a_kernel():
    # layouts review 3, M5: gpt-oss-120b prefill on 8 x B200, where the per-layer overhead fitted to measured steps is
    # about half the step (the review measured 43-49%; 56% since the whole-step refit on the served composition of
    # aggregated cases raised the per-token overhead from 35.1 to 43.8 ps per channel): the reason names it as fitted
    # time, not as a kernel that dominates
    from core.serving.layout import recommend, search_deployment

    s = Scenario(
        model_id="gpt-oss-120b", gpu_id="b200", precision=Precision(weights="mxfp4", kv_cache="fp8", dispatch="fp8")
    )
    best = recommend(search_deployment(s, cat), "prefill", catalog=cat)[0]
    top = max(best.breakdown, key=best.breakdown.get)
    assert top == "fitted overhead" and 0.40 <= best.breakdown[top] / sum(best.breakdown.values()) <= 0.60
    assert "the fitted overhead is the largest part" in best.reason and "not a kernel" in best.reason
    assert "overhead dominates" not in best.reason
