"""The served calibration (issue 36): the fit of the decode and prefill step scales from benchmark runs against a
hand-made predictor (every expected value by hand in a comment), its bounds, and the adapter that predicts a run
with the serving model."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.deployment.calibration import ServedCalibration
from core.serving import ReplicaCosts
from core.validation.bench_results import BenchResult, parse_bench_results
from core.validation.served_fit import compare_runs, fit_calibration, measured_metrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench_results"
BASE = parse_bench_results((FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc32.json").read_bytes())[0]
NONE = dict.fromkeys(("mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "output_tokens_per_s"), None)


def run(line: int = 1, **measured) -> BenchResult:
    """The fixture's run with only the given measurements."""
    return replace(BASE, line=line, **{**NONE, **measured})


def tpot_20(_run):
    return {"tpot_ms": 20.0}


def test_one_run_tpot_30_against_20_gives_decode_scale_1_5():
    fit = fit_calibration([run(mean_tpot_ms=30.0)], tpot_20, source="bench.json")
    cal = fit.calibration
    assert cal.decode_step_scale == pytest.approx(1.5)  # 30 / 20
    assert cal.prefill_step_scale == 1.0  # no TTFT: no prefill ratio
    assert fit.decode_from == "TPOT" and fit.prefill_from == ""
    assert cal.fit_residual == pytest.approx(0.0, abs=1e-12)  # 20 x 1.5 = 30 exactly
    assert fit.after[1].predicted == pytest.approx(30.0) and fit.after[1].gap_pct == pytest.approx(0.0, abs=1e-9)
    assert cal.runs == 1 and cal.source == "bench.json, vLLM bench serve, 2026-05-21"


def test_two_runs_take_the_geometric_mean_and_report_the_residual():
    # ratios 24 / 20 = 1.2 and 36 / 20 = 1.8: s = sqrt(1.2 x 1.8) = sqrt(2.16) = 1.469694
    fit = fit_calibration([run(1, mean_tpot_ms=24.0), run(2, mean_tpot_ms=36.0)], tpot_20)
    assert fit.calibration.decode_step_scale == pytest.approx(math.sqrt(2.16))
    assert fit.calibration.decode_step_scale == pytest.approx(1.469694, abs=1e-6)
    # calibrated 20 x 1.469694 = 29.39388: against 24 +22.4745%, against 36 -18.3503%;
    # RMS = sqrt((0.224745^2 + 0.183503^2) / 2) = sqrt((0.050510 + 0.033673) / 2) = 0.205163
    assert fit.calibration.fit_residual == pytest.approx(0.205163, abs=1e-6)
    assert fit.calibration.runs == 2


def test_output_throughput_stands_in_for_a_missing_tpot_and_ttft_fits_prefill():
    def model(_run):
        return {"ttft_ms": 100.0, "output_tokens_per_s": 1000.0}

    # 800 tokens/s measured against 1,000 predicted: steps 1,000 / 800 = 1.25x slower; TTFT 150 against 100 on one
    # run: the prefill scale stays 1 and the 50 ms gap is a per-request offset
    fit = fit_calibration([run(mean_ttft_ms=150.0, output_tokens_per_s=800.0)], model)
    assert fit.calibration.decode_step_scale == pytest.approx(1.25)
    assert fit.calibration.prefill_step_scale == 1.0
    assert fit.calibration.ttft_offset_s == pytest.approx(0.050)
    assert (fit.decode_from, fit.prefill_from, fit.ttft_fit) == ("output tokens/s", "", "offset")
    after = {g.metric: g.predicted for g in fit.after}
    assert after == pytest.approx({"ttft_ms": 150.0, "tpot_ms": None, "output_tokens_per_s": 800.0})


def test_the_median_stands_in_for_a_missing_mean():
    fit = fit_calibration([run(median_tpot_ms=25.0)], tpot_20)
    assert fit.calibration.decode_step_scale == pytest.approx(1.25)  # 25 / 20


def test_a_scale_beyond_its_bounds_is_held_and_said():
    fit = fit_calibration([run(mean_tpot_ms=200.0)], tpot_20)  # 200 / 20 = 10, held at 5
    assert fit.calibration.decode_step_scale == 5.0 and fit.clipped
    assert fit.calibration.fit_residual == pytest.approx(0.5)  # 20 x 5 = 100 against 200: -50%
    assert not fit_calibration([run(mean_tpot_ms=30.0)], tpot_20).clipped


def test_recheck_reaches_the_measurement_where_the_phases_interact():
    """Two runs, the second's prompt 4x the first's (L = 1, 4): TPOT = 20 d + 2 p L and TTFT = 100 p L + 10 d + o
    ms (each phase's time leaks into the other's metric). Measured with d = 1.5, p = 1.4, o = 50 ms: TPOT 30 + 2.8
    = 32.8 and 30 + 11.2 = 41.2; TTFT 140 + 15 + 50 = 205 and 560 + 15 + 50 = 625. The predicted TTFTs (110, 410
    ms) differ 3.7x: the slope is fitted. First order: d = sqrt(32.8 / 22 x 41.2 / 28) = 1.4812; the line through
    (110, 205) and (410, 625) has slope 420 / 300 = 1.4 and offset 205 - 154 = 51 ms. The rounds find 1.5, 1.4
    and 50 ms."""

    def calibrated(cal):
        d = 1.0 if cal is None else cal.decode_step_scale
        p = 1.0 if cal is None else cal.prefill_step_scale
        o = 0.0 if cal is None else 1e3 * cal.ttft_offset_s
        return lambda r: {"tpot_ms": 20 * d + 2 * p * r.line, "ttft_ms": 100 * p * r.line + 10 * d + o}

    measured = [run(1, mean_tpot_ms=32.8, mean_ttft_ms=205.0), run(4, mean_tpot_ms=41.2, mean_ttft_ms=625.0)]
    first = fit_calibration(measured, calibrated(None))
    assert first.calibration.decode_step_scale == pytest.approx(math.sqrt(32.8 / 22 * 41.2 / 28))
    assert first.calibration.prefill_step_scale == pytest.approx(1.4)
    assert first.calibration.ttft_offset_s == pytest.approx(0.051)
    assert first.ttft_fit == "slope and offset" and first.prefill_from == "TTFT"
    fit = fit_calibration(measured, calibrated(None), recheck=calibrated, rounds=10)
    assert fit.calibration.decode_step_scale == pytest.approx(1.5, rel=0.01)
    assert fit.calibration.prefill_step_scale == pytest.approx(1.4, rel=0.01)
    assert fit.calibration.ttft_offset_s == pytest.approx(0.050, abs=0.002)
    for g in fit.after:
        if g.measured is not None:
            assert abs(g.gap_pct) < 5, g  # the calibrated prediction within 5% of the measurement
    assert fit.calibration.fit_residual < 0.01


def test_compare_runs_gives_the_gap_per_metric():
    gaps = compare_runs([run(mean_tpot_ms=25.0, mean_ttft_ms=200.0)], lambda _r: {"tpot_ms": 20.0, "ttft_ms": 250.0})
    by = {g.metric: g for g in gaps}
    assert by["tpot_ms"].gap_pct == pytest.approx(-20.0)  # 20 / 25 - 1
    assert by["ttft_ms"].gap_pct == pytest.approx(25.0)  # 250 / 200 - 1
    assert by["output_tokens_per_s"].gap_pct is None  # neither predicted nor measured
    assert (by["tpot_ms"].name, by["tpot_ms"].unit) == ("TPOT", "ms")
    assert measured_metrics(BASE) == pytest.approx(
        {"ttft_ms": 360.7508340813638, "tpot_ms": 19.356447679888333, "output_tokens_per_s": 1558.21585715768}
    )


@pytest.mark.parametrize(
    "runs,predict,kwargs,message",
    [
        ([], tpot_20, {}, "runs must hold 1 to 10,000 runs"),
        (["a run"], tpot_20, {}, "runs must be a list of BenchResult"),
        ([BASE], lambda _r: {"tpot_ms": "x"}, {}, "predict's tpot_ms must be a number > 0 or None"),
        ([BASE], lambda _r: {"ttft_ms": -1.0}, {}, "predict's ttft_ms must be a number > 0 or None"),
        ([BASE], lambda _r: [20.0], {}, "predict must return a dict"),
        ([BASE], 5, {}, "predict must be a function of a run"),
        ([BASE], tpot_20, {"rounds": -1}, "rounds must be a whole number in 0..10"),
        ([BASE], tpot_20, {"recheck": 3}, "recheck must be a function"),
    ],
)
def test_bad_arguments_are_refused_by_name(runs, predict, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_calibration(runs, predict, **kwargs)


def test_served_calibration_is_bounded_and_labelled():
    cal = ServedCalibration(decode_step_scale=1.27, prefill_step_scale=0.94, source="b.json", runs=2, fit_residual=0.03)
    assert cal.step_scale("decode") == 1.27 and cal.step_scale("prefill") == 0.94
    assert cal.label == "calibrated on b.json (2 runs): decode ×1.27, prefill ×0.94, residual 3%"
    with pytest.raises(ValueError, match="phase must be 'decode' or 'prefill'"):
        cal.step_scale("verify")
    for field, bad in (("decode_step_scale", 5.5), ("prefill_step_scale", 0.1), ("decode_step_scale", math.nan)):
        with pytest.raises(ValidationError, match=field):
            ServedCalibration(**{field: bad}, source="b.json", runs=1, fit_residual=0.0)
    with pytest.raises(ValidationError, match="source must be one line of printable text"):
        ServedCalibration(source="b.json\nrm -rf", runs=1, fit_residual=0.0)
    with pytest.raises(ValidationError, match="runs"):
        ServedCalibration(source="b.json", runs=0, fit_residual=0.0)


# ------------------------------------------------------------------ the adapter over the serving model


def _costs(step_ms: float = 10.0) -> ReplicaCosts:
    """A replica whose decode step takes ``step_ms`` at any batch and whose prompt tokens cost 1 us each."""
    return ReplicaCosts((1.0, 1024.0), (step_ms / 1e3,) * 2, 1e-6, 8192, 1024, 4)


def test_a_decode_scale_multiplies_tpot_at_low_load():
    from ui.calibration import predict_run

    one = run(mean_tpot_ms=10.0)
    one = replace(one, concurrency=1, mean_input_tokens=100.0, mean_output_tokens=100.0)
    plain = predict_run(one, _costs(), 1)
    cal = ServedCalibration(decode_step_scale=2.0, source="x", runs=1, fit_residual=0.0)
    scaled = predict_run(one, _costs(), 1, cal)
    # one client: TPOT = t / (1 - x a), x a = the prompt's 100 x 1 us over a ~1 s request: 10.0 ms and 20.0 ms
    assert plain["tpot_ms"] == pytest.approx(10.0, rel=1e-3)
    assert scaled["tpot_ms"] == pytest.approx(20.0, rel=1e-3)
    assert scaled["tpot_ms"] / plain["tpot_ms"] == pytest.approx(2.0, rel=1e-3)
    # the server's output tokens/s: one request of 100 tokens per 100 steps, each 10 ms longer: about half
    assert scaled["output_tokens_per_s"] / plain["output_tokens_per_s"] == pytest.approx(0.5, rel=0.01)


def test_calibrating_on_the_published_b300_runs_brings_tpot_within_5_percent():
    """Qwen3.5-397B-A17B FP8 on 4 x B300 (the fixture's deployment): the calibrated TPOT of both runs is within 5%
    of the file's (10.09 ms at 4 clients, 19.36 ms at 32)."""
    from core.catalog import load_catalog
    from core.deployment.specs import Precision, Scenario
    from ui.calibration import scenario_predictor

    runs = [
        *parse_bench_results((FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc4.json").read_bytes()),
        *parse_bench_results((FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc32.json").read_bytes()),
    ]
    scenario = Scenario(
        model_id="qwen3.5-397b-a17b", gpu_id="b300", gpus_per_node=4, precision=Precision(weights="fp8", kv_cache="fp8")
    )
    calibrated = scenario_predictor(scenario, load_catalog().model("qwen3.5-397b-a17b"))
    fit = fit_calibration(runs, calibrated(None), source="b300", recheck=calibrated)
    tpot = [g for g in fit.after if g.metric == "tpot_ms"]
    assert [g.measured for g in tpot] == pytest.approx([10.089923180839737, 19.356447679888333])
    assert all(abs(g.gap_pct) < 5 for g in tpot), [g.gap_pct for g in tpot]
    assert 0.5 < fit.calibration.decode_step_scale < 2
    # TTFT: the files' mean_ttft_ms 315.44 (4 clients) and 360.75 (32) against 15-23 ms of predicted prefill. The
    # predictions differ less than 2x: no slope, the prefill scale stays 1 and the gap is a per-request offset, about
    # the weighted mean gap (300.3 / 315.4^2 + 337.6 / 360.8^2) / (1 / 315.4^2 + 1 / 360.8^2) = 316 ms
    ttft = [g for g in fit.after if g.metric == "ttft_ms"]
    assert [g.measured for g in ttft] == pytest.approx([315.4446514748088, 360.7508340813638])
    assert all(abs(g.gap_pct) < 10 for g in ttft), [g.gap_pct for g in ttft]
    assert fit.calibration.prefill_step_scale == 1.0 and fit.ttft_fit == "offset"
    assert 0.29 < fit.calibration.ttft_offset_s < 0.34
    assert not fit.clipped  # before the offset, the prefill scale was held at 5 and TTFT still 86% short


def test_an_open_loop_run_is_simulated_at_its_rate():
    from ui.calibration import predict_run

    light = replace(run(), concurrency=None, request_rate_per_s=1.0, mean_input_tokens=100.0, mean_output_tokens=100.0)
    p = predict_run(light, _costs(), 1)
    # 1 request/s of 100 tokens, each request ~1 s of 10 ms steps: about one in flight, TPOT ~10 ms, 100 tokens/s
    assert p["tpot_ms"] == pytest.approx(10.0, rel=0.05)
    assert p["output_tokens_per_s"] == pytest.approx(100.0, rel=0.15)
    assert p["ttft_ms"] < 30.0  # its own 100 x 1 us of prefill, plus at most a step or two in flight
    overloaded = replace(light, request_rate_per_s=3000.0)  # 3x its most: 1,024 sequences / (99 x 10 ms)
    assert predict_run(overloaded, _costs(), 1) == {"ttft_ms": None, "tpot_ms": None, "output_tokens_per_s": None}


def test_one_run_ttft_gap_is_an_offset_and_a_faster_ttft_a_scale():
    ttft_20 = lambda _r: {"ttft_ms": 20.0}  # noqa: E731
    fit = fit_calibration([run(mean_ttft_ms=300.0)], ttft_20)
    # one run: the scale stays 1, the offset is 300 - 20 = 280 ms, the calibrated TTFT 20 + 280 = 300
    assert (fit.calibration.prefill_step_scale, fit.calibration.ttft_offset_s) == (1.0, pytest.approx(0.280))
    assert fit.after[0].predicted == pytest.approx(300.0) and fit.calibration.fit_residual == pytest.approx(0.0)
    assert "TTFT +0.280 s" in fit.calibration.label
    # measured below the steps' prediction: no negative offset, a scale 16 / 20 = 0.8
    fast = fit_calibration([run(mean_ttft_ms=16.0)], ttft_20)
    assert (fast.calibration.prefill_step_scale, fast.calibration.ttft_offset_s) == (pytest.approx(0.8), 0.0)
    assert (fast.ttft_fit, fast.prefill_from) == ("scale", "TTFT") and "TTFT +" not in fast.calibration.label


def test_runs_of_different_prompts_fit_the_ttft_line_within_its_bounds():
    by_line = {1: 100.0, 2: 400.0}  # predicted TTFT per run (ms): 4x apart, a slope is fitted

    def model(r):
        return {"ttft_ms": by_line[r.line]}

    # measured 50 + 1.5 x 100 = 200 and 50 + 1.5 x 400 = 650: the line through them, exactly
    fit = fit_calibration([run(1, mean_ttft_ms=200.0), run(2, mean_ttft_ms=650.0)], model)
    assert fit.calibration.prefill_step_scale == pytest.approx(1.5)
    assert fit.calibration.ttft_offset_s == pytest.approx(0.050)
    assert fit.ttft_fit == "slope and offset" and not fit.clipped
    # measured 800 and 3,600: the line's slope (3,600 - 800) / 300 = 9.3 with a negative offset; with no offset
    # the best slope is sum w u m / sum w u^2 = (100 / 800 + 400 / 3600) / (100^2 / 800^2 + 400^2 / 3600^2) = 8.4,
    # both beyond 5. Held at 5, the offset minimising sum ((o + 5 u) / m - 1)^2 is
    # (sum w m - 5 sum w u) / sum w with w = 1 / m^2: 361.2 ms
    held = fit_calibration([run(1, mean_ttft_ms=800.0), run(2, mean_ttft_ms=3600.0)], model)
    w = (1 / 800.0**2, 1 / 3600.0**2)
    o = (w[0] * (800 - 500) + w[1] * (3600 - 2000)) / sum(w)
    assert o == pytest.approx(361.2, abs=0.1)
    assert held.calibration.prefill_step_scale == 5.0 and held.clipped
    assert held.calibration.ttft_offset_s == pytest.approx(o / 1e3)


def test_the_offset_adds_to_every_ttft_of_the_serving_model_and_nothing_when_absent():
    from core.catalog import load_catalog
    from core.deployment.specs import Scenario
    from core.scenario.deploy import resolve
    from core.serving import replica_costs, serve_closed_loop

    cat = load_catalog()
    plain = resolve(Scenario(), cat)
    cal = ServedCalibration(ttft_offset_s=0.3, source="b300", runs=2, fit_residual=0.04)
    offset = plain.with_(calibration=cal)
    zero = plain.with_(calibration=cal.model_copy(update={"ttft_offset_s": 0.0}))
    wl = plain.workload
    p, o, z = (serve_closed_loop(replica_costs(d), wl, 1) for d in (plain, offset, zero))
    # one client: its TTFT is its prompt's own steps, plus 0.300 s of front end where calibrated
    assert o.ttft_s - p.ttft_s == pytest.approx(0.300, rel=1e-6)
    assert z == p  # a calibration of scale 1 and no offset plans as the uncalibrated scenario
    assert replica_costs(plain).ttft_offset_s == 0.0


def test_the_offset_travels_in_the_url_and_the_store_and_old_records_load(tmp_path):
    import json
    import sqlite3

    from core.catalog import load_catalog
    from core.deployment.specs import Scenario
    from core.scenario.url import scenario_from_params, scenario_to_params
    from core.store.sqlite import SQLiteStore

    cal = ServedCalibration(
        decode_step_scale=1.16, ttft_offset_s=0.3146, source="b300.json", runs=2, fit_residual=0.036
    )
    params = scenario_to_params(Scenario(calibration=cal))
    assert params["cttft"] == "0.3146" and "cttft" not in scenario_to_params(
        Scenario(calibration=cal.model_copy(update={"ttft_offset_s": 0.0}))
    )
    back, warnings = scenario_from_params(params, load_catalog())
    assert warnings == [] and back.calibration == cal
    store = SQLiteStore(tmp_path / "s.db")
    store.save("b300", Scenario(calibration=cal))
    assert store.get("b300").scenario.calibration.ttft_offset_s == 0.3146
    # a record saved before the offset existed: its calibration without the field loads, with no offset
    with sqlite3.connect(tmp_path / "s.db") as db:
        (text,) = db.execute("SELECT scenario_json FROM scenarios WHERE name = 'b300'").fetchone()
        old = json.loads(text)
        del old["calibration"]["ttft_offset_s"]
        db.execute("UPDATE scenarios SET scenario_json = ? WHERE name = 'b300'", (json.dumps(old),))
    loaded = store.get("b300").scenario.calibration
    assert loaded.ttft_offset_s == 0.0 and loaded.decode_step_scale == 1.16
