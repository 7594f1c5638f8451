"""Calibrate to your cluster (issue 36): a benchmark's result file (vLLM ``bench serve``, SGLang ``bench_serving``,
AIPerf), uploaded or pasted, against what the planner predicts for the scenario at each run's concurrency and
lengths; the served calibration fitted on it (:func:`core.validation.served_fit.fit_calibration`) and a button
that keeps it for the scenario.

Two small adapters carry the planner's prediction, so a change of the serving model's signatures touches them
only: :func:`run_costs` (the step-time model's costs of one replica for a run's lengths) and :func:`predict_run`
(a closed loop of the run's clients over those costs, :func:`core.serving.serve_closed_loop`; an open loop at the
run's request rate, :func:`core.serving.engine_sim.simulate_open`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import streamlit as st

from core import serving
from core.deployment.bundle import Deployment
from core.deployment.calibration import ServedCalibration
from core.deployment.specs import ParallelLayout, Scenario, Workload
from core.hardware import ClusterSpec
from core.serving import engine_sim
from core.validation.bench_results import ACCEPTED_FORMATS, MAX_FILE_BYTES, BenchResult, parse_bench_results
from core.validation.served_fit import METRICS, ServedFit, fit_calibration
from ui.controls import PASTE_MAX_CHARS, current_layout, paste_box
from ui.format import md_escape
from ui.state import catalog, update_scenario

__all__ = ["calibration_section", "predict_run", "run_costs", "scenario_predictor"]
OPEN_LOOP_REQUESTS = 1000  # simulated requests of an open-loop run
_PREFILL_WHY = {  # ServedFit.ttft_fit -> how the prefill scale was found
    "slope and offset": "from TTFT (the slope across runs)",
    "scale": "from TTFT (measured faster: no offset)",
    "offset": "held at 1: the runs' TTFTs too alike for a slope",
    "": "no TTFT to fit",
}


def run_costs(scenario: Scenario, model, layout: ParallelLayout, run: BenchResult) -> serving.ReplicaCosts:
    """One replica's step costs (:func:`core.serving.replica_costs`) for ``run``'s mean lengths, by the scenario's
    step-time model (its GPU, precision, memory assumptions and serving stack's efficiency factors)."""
    cat = catalog()
    gpu = cat.gpu(scenario.gpu_id)
    cluster = ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node)
    eff = cat.efficiency_for(gpu.id, scenario.serving_stack)
    wl, a = _workload(run), scenario.memory
    return serving.replica_costs(
        Deployment(model, gpu, layout, scenario.precision, eff, cluster=cluster, workload=wl, assumptions=a)
    )


def _workload(run: BenchResult) -> Workload:
    if run.mean_input_tokens is None or run.mean_output_tokens is None:
        raise ValueError(f"{run.label}: the file gives no input and output token counts to predict the run with")
    clients = run.concurrency or run.completed or 1
    return Workload(
        batch=max(1, min(clients, 1_000_000)),
        input_len=max(1, round(run.mean_input_tokens)),
        output_len=max(1, round(run.mean_output_tokens)),
    )


def predict_run(
    run: BenchResult, costs: serving.ReplicaCosts, replicas: int, calibration: ServedCalibration | None = None
) -> dict[str, float | None]:
    """What the planner predicts ``run`` measures on ``replicas`` replicas of ``costs`` (the clients or the
    arrivals split evenly), its step times scaled by ``calibration``: mean TTFT and TPOT (ms) and the server's
    output tokens/s. A closed loop of ``run.concurrency`` clients, or of every request at once where the file
    states neither a concurrency nor a rate; an open loop at ``run.request_rate_per_s``."""
    if calibration is not None:
        d, p = calibration.step_scale("decode"), calibration.step_scale("prefill")
        costs = replace(
            costs,
            decode_step_s=tuple(t * d for t in costs.decode_step_s),
            prefill_s_per_token=costs.prefill_s_per_token * p,
            ttft_offset_s=calibration.ttft_offset_s,
        )
    wl = _workload(run)
    gpus = costs.gpus * replicas
    if run.concurrency is None and run.request_rate_per_s is not None:
        lengths = engine_sim.Lengths.exact(wl.input_len, wl.output_len)
        r = engine_sim.simulate_open(
            costs, lengths, run.request_rate_per_s / replicas, requests=OPEN_LOOP_REQUESTS, warm=True
        )
        s = r.summary()
        if not s.stable:
            return {"ttft_ms": None, "tpot_ms": None, "output_tokens_per_s": None}
        return {
            "ttft_ms": s.mean_ttft_s * 1e3,
            "tpot_ms": s.mean_tpot_s * 1e3 if math.isfinite(s.mean_tpot_s) else None,
            "output_tokens_per_s": s.output_tokens_per_s * replicas,
        }
    point = serving.serve_closed_loop(costs, wl, max(1, math.ceil(wl.batch / replicas)))
    return {
        "ttft_ms": point.ttft_s * 1e3 if math.isfinite(point.ttft_s) else None,
        "tpot_ms": point.tpot_s * 1e3,
        "output_tokens_per_s": point.output_tokens_per_s_per_gpu * gpus,
    }


def scenario_predictor(scenario: Scenario, model) -> Callable[[ServedCalibration | None], Callable]:
    """``calibrated(calibration) -> predict(run)`` for the scenario's deployment (its layout in force, all its
    replicas behind the benchmarked endpoint); each run's costs are computed once."""
    layout, _ = current_layout(scenario, model, scenario.gpus_per_node)
    one = layout.model_copy(update={"dp": 1})
    costs: dict[int, serving.ReplicaCosts] = {}

    def calibrated(calibration: ServedCalibration | None) -> Callable:
        def predict(run: BenchResult) -> dict:
            if id(run) not in costs:
                costs[id(run)] = run_costs(scenario, model, one, run)
            return predict_run(run, costs[id(run)], layout.dp, calibration)

        return predict

    return calibrated


def _same_model(run: BenchResult, model_id: str) -> bool:
    """Whether the run's model or tokenizer name contains the catalog id (letters and digits only)."""

    def key(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", s.lower())

    want = key(model_id)
    return any(want in key(name) for name in (run.model, run.tokenizer) if name)


def _table(fit: ServedFit) -> pd.DataFrame:
    rows = []
    for g, a in zip(fit.before, fit.after, strict=True):
        if g.measured is None and g.predicted is None:
            continue
        rows.append(
            {
                "run": g.run,
                "metric": g.name,
                "unit": g.unit,
                "measured": g.measured,
                "predicted": g.predicted,
                "gap (%)": g.gap_pct,
                "calibrated": a.predicted,
                "calibrated gap (%)": a.gap_pct,
            }
        )
    return pd.DataFrame(rows)


def _apply(calibration: ServedCalibration) -> None:
    update_scenario(calibration=calibration)


def _remove() -> None:
    update_scenario(calibration=None)


def _read_input() -> tuple[bytes | str, str]:
    """(the uploaded file's bytes, its name) or (the pasted text, "pasted text"); empty when neither."""
    up = st.file_uploader(
        "Benchmark result file", type=["json", "jsonl", "txt"], key="calib_upload", max_upload_size=20
    )
    text = paste_box(
        "…or paste it",
        min(PASTE_MAX_CHARS, MAX_FILE_BYTES),
        height=120,
        key="calib_paste",
        placeholder='{"date": "…", "backend": "vllm", "model_id": "…", "max_concurrency": 32, "mean_ttft_ms": …}',
    )
    if up is not None:
        return up.getvalue(), up.name
    return text, "pasted text"


def calibration_section(scenario: Scenario, model) -> None:
    """The section under its header: input, predicted against measured per run and metric, the fit and the button
    that applies it."""
    st.subheader("Calibrate to your cluster")
    applied = scenario.calibration
    if applied is not None:
        c = st.columns([4, 1])
        c[0].info(
            f"Applied to the scenario (every page plans with it; it is in the page's URL and saved with the scenario): "
            f"{md_escape(applied.label)}"
        )
        c[1].button("Remove", key="calib_remove", on_click=_remove)
    st.markdown(
        f"Run the benchmark the Layouts page gives for your plan, then upload or paste its result file: "
        f"{ACCEPTED_FORMATS}. Each run is predicted at its own concurrency (or request rate) and mean lengths on "
        f"the scenario's deployment, and two multipliers on the step-time model's step times are fitted, decode "
        f"from TPOT (output tokens/s where TPOT is missing), prefill from TTFT, with a per-request TTFT offset: the "
        f"time a served request spends before its first token outside the GPU's steps (tokenisation, scheduling, "
        f"HTTP and stream setup). The prefill scale is the slope of measured against predicted TTFT where the runs' "
        f"predicted TTFTs differ 2x or more (other prompt lengths or loads); otherwise it stays 1 and the gap is the "
        f"offset."
    )
    data, name = _read_input()
    if not data or (isinstance(data, str) and not data.strip()):
        return
    try:
        runs = parse_bench_results(data)
    except ValueError as err:
        st.error(f"Could not read the result file: {md_escape(err)}")
        return
    others = sorted({r.model or r.tokenizer or "?" for r in runs if not _same_model(r, scenario.model_id)})
    if others:
        st.warning(
            f"The file's model ({md_escape(', '.join(others)[:120])}) does not look like the scenario's "
            f"({md_escape(model.name)}): set the sidebar to the benchmarked deployment first, or the fit calibrates "
            "one model on another's measurements."
        )
    calibrated = scenario_predictor(scenario, model)
    try:
        fit = fit_calibration(runs, calibrated(None), source=name, recheck=calibrated)
    except ValueError as err:
        st.error(f"Could not predict the runs on this scenario: {md_escape(err)}")
        return
    st.dataframe(
        _table(fit),
        hide_index=True,
        width="stretch",
        column_config={
            "measured": st.column_config.NumberColumn(format="%.4g"),
            "predicted": st.column_config.NumberColumn(format="%.4g"),
            "calibrated": st.column_config.NumberColumn(format="%.4g"),
            "gap (%)": st.column_config.NumberColumn(format="%+.1f"),
            "calibrated gap (%)": st.column_config.NumberColumn(format="%+.1f"),
        },
    )
    cal = fit.calibration
    m = st.columns(4)
    m[0].metric(
        "Decode step scale",
        f"×{cal.decode_step_scale:.3f}",
        f"from {fit.decode_from}" if fit.decode_from else "no TPOT or output tokens/s to fit",
        delta_color="off",
        delta_arrow="off",
    )
    m[1].metric(
        "Prefill step scale",
        f"×{cal.prefill_step_scale:.3f}",
        _PREFILL_WHY[fit.ttft_fit],
        delta_color="off",
        delta_arrow="off",
    )
    m[2].metric(
        "TTFT offset",
        f"+{1e3 * cal.ttft_offset_s:.0f} ms",
        "per request, outside the steps" if fit.ttft_fit else "no TTFT to fit",
        delta_color="off",
        delta_arrow="off",
    )
    m[3].metric(
        "Residual after the fit",
        f"{100 * cal.fit_residual:.1f}%",
        f"relative RMS over {sum(a.predicted is not None and bool(a.measured) for a in fit.after)} metrics, "
        f"{cal.runs} run{'s' if cal.runs != 1 else ''}",
        delta_color="off",
        delta_arrow="off",
    )
    if fit.clipped:
        st.warning(
            "A scale reached its bound (0.2-5) or the TTFT offset its 10 s: the gap is larger than slower or faster "
            "steps and a per-request cost explain (another model, GPU or layout than the scenario's)."
        )
    st.caption(
        f"Gap: predicted / measured - 1 ({', '.join(v[0] for v in METRICS.values())}: means where the file has them, "
        "else medians). Calibrated: predicted again with the step times scaled and the TTFT offset added (three "
        "fixed-point rounds). The "
        "planner's prediction is a closed loop of the run's clients over the scenario's replicas (an open loop at "
        "the run's rate where it states one), every request of the run's mean lengths."
    )
    st.button("Apply this calibration to the scenario", key="calib_apply", on_click=_apply, args=(cal,), type="primary")
