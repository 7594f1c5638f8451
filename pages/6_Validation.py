"""Validation: how close is the step-time model to published measurements?"""

import pandas as pd
import streamlit as st

from core import perf, validation
from core.specs import EFFICIENCY_FAMILIES
from core.validation import METRIC_UNITS
from ui.charts import predicted_vs_measured_chart
from ui.controls import current_layout
from ui.scenario import catalog, current_model, page

scenario, cat, *_ = page("Validation", "🎯")

st.title("Validation")
st.markdown(
    f"The step-time model against **{len(cat.validation_cases)} published measurements** (DeepSeek, LMSYS/SGLang, "
    "NVIDIA aiconfigurator and TensorRT-LLM, DeepEP). *Fit* uses the shipped factors; *leave-one-out* refits "
    "everything the case helped fit without it, so it is the error on a case the model has not seen."
)


@st.cache_resource(show_spinner="Refitting without each case (leave-one-out)…")
def _results() -> list:
    c = catalog()
    return validation.leave_one_out(list(c.validation_cases), c.efficiency, c)


results = _results()
cases = {str(c["id"]): c for c in cat.validation_cases}
summary = validation.error_summary(results)
fit_summary = validation.error_summary(results, loo=False)

SHORT = {
    "system": "Whole step",
    "grouped_gemm_decode": "Grouped GEMM, decode",
    "grouped_gemm_prefill": "Grouped GEMM, prefill",
    "alltoall_low_latency": "All-to-all, low-latency",
    "alltoall_normal": "All-to-all, normal",
    "all": "All cases",
}
FAMILY_NAMES = {
    "system": "whole step (decode / prefill tok/s/GPU)",
    "grouped_gemm_decode": "grouped GEMM, decode layout",
    "grouped_gemm_prefill": "grouped GEMM, prefill layout",
    "alltoall_low_latency": "all-to-all, low-latency kernels",
    "alltoall_normal": "all-to-all, normal kernels",
    "all": "all cases",
}
cols = st.columns(len(summary))
for col, (fam, s) in zip(cols, sorted(summary.items(), key=lambda kv: (kv[0] == "all", kv[0])), strict=True):
    col.metric(
        f"{SHORT.get(fam, fam)}: median |error|",
        f"{100 * s['median']:.1f}%",
        f"p90 {100 * s['p90']:.0f}%, max {100 * s['max']:.0f}%, n = {s['n']}",
        delta_color="off",
        delta_arrow="off",
        help=f"Leave-one-out |error| of {FAMILY_NAMES.get(fam, fam)}. In-sample median "
        f"{100 * fit_summary[fam]['median']:.1f}%.",
    )

# ---- scatter
rows = []
for r in results:
    c = cases[r.id]
    rows.append(
        {
            "case": r.id,
            "metric": r.metric,
            "family": FAMILY_NAMES.get(r.family, r.family),
            "gpu": r.gpu,
            "measured": r.measured,
            "predicted": r.predicted,
            "leave-one-out": r.loo_predicted,
            "error (%)": 100 * r.error,
            "leave-one-out error (%)": 100 * (r.loo_error or 0),
            "unit": METRIC_UNITS[r.metric],
            "source": c.get("source", ""),
            "file": c.get("file", ""),
            "configuration": (
                f"{c['model']} on {c['num_gpus']} × {c['gpu']}; layout "
                + ", ".join(f"{k} {v}" for k, v in c["layout"].items())
                + "; "
                + ", ".join(f"{k} {v}" for k, v in c["workload"].items())
                + "; "
                + ", ".join(f"{k} {v}" for k, v in (c.get("options") or {}).items())
            ),
        }
    )
df = pd.DataFrame(rows)
st.altair_chart(
    predicted_vs_measured_chart(
        df,
        title="Predicted (leave-one-out) vs measured, every case",
        subtitle="dashed: y = x; shaded: ±15%; log axes span µs, ms and tokens/s",
    ),
    width="stretch",
)

# ---- cases grouped by metric
for metric, part in df.groupby("metric", sort=False):
    st.subheader(f"{metric} ({METRIC_UNITS[metric]})")
    st.dataframe(
        part[
            [
                "case",
                "gpu",
                "measured",
                "predicted",
                "error (%)",
                "leave-one-out",
                "leave-one-out error (%)",
                "configuration",
                "source",
            ]
        ],
        hide_index=True,
        width="stretch",
        column_config={
            "measured": st.column_config.NumberColumn(f"measured ({METRIC_UNITS[metric]})", format="%.4g"),
            "predicted": st.column_config.NumberColumn(f"predicted ({METRIC_UNITS[metric]})", format="%.4g"),
            "leave-one-out": st.column_config.NumberColumn(f"leave-one-out ({METRIC_UNITS[metric]})", format="%.4g"),
            "error (%)": st.column_config.NumberColumn(format="%+.1f"),
            "leave-one-out error (%)": st.column_config.NumberColumn(format="%+.1f"),
        },
    )

# ---- the factors in force
st.subheader("Efficiency factors in force")
gpu_id = st.selectbox(
    "GPU", list(cat.gpus), index=list(cat.gpus).index(scenario.gpu_id), format_func=lambda i: cat.gpus[i].name
)
eff = perf.resolve_efficiency(gpu_id, cat.efficiency)
prov_rows = []
for fam in EFFICIENCY_FAMILIES:
    src = eff.source[fam]
    owner = src.split(" ")[0]
    prof = cat.efficiency.get(owner)
    prov_rows.append(
        {
            "family": fam,
            "factors": ", ".join(f"{k} {v:g}" for k, v in eff[fam].model_dump().items()),
            "from profile": src,
            "how": (prof.provenance.get(fam, "") if prof else ""),
        }
    )
st.dataframe(pd.DataFrame(prov_rows), hide_index=True, width="stretch")
prof = cat.efficiency.get(gpu_id)
if prof and prof.notes:
    st.caption(f"{cat.gpus[gpu_id].name}: {prof.notes}")
st.caption(
    "compute_eff / mem_eff: achieved fractions of the dense peak FLOP/s and of the HBM bandwidth; floor_us: fixed "
    "time per kernel call; scale_up_eff / scale_out_eff: fractions of NVLink / network bandwidth per direction; "
    "layer_overhead_us: time per layer outside the big kernels; overlap_eff: the share of communication two-batch "
    "overlap hides. Factors come from catalogs/efficiency.yaml."
)

# ---- the scenario through the same model
model = current_model(scenario)
if model.is_moe:
    st.subheader("This scenario through the same model")
    layout, _ = current_layout(scenario, model, scenario.gpus_per_node)
    gpu = cat.gpu(scenario.gpu_id)
    wl = scenario.workload
    try:
        e = perf.resolve_efficiency(gpu.id, cat.efficiency)
        dec = perf.step_time(
            model,
            gpu,
            layout,
            scenario.precision,
            perf.StepConfig("decode", wl.batch / (layout.gpus_per_stage * layout.dp), wl.decode_context_len),
            e,
        )
        st.markdown(
            f"Decode, {layout.total_gpus} × {gpu.name} (TP {layout.attention_tp} / DP-attn {layout.attention_dp} / "
            f"EP {layout.ep}), {wl.batch:,} sequences: **{dec.step_s * 1e3:,.1f} ms per step**, "
            f"**{dec.tokens_per_s_per_gpu:,.0f} output tok/s per GPU** (compute {dec.compute_s * 1e3:,.1f} ms, "
            f"communication {dec.comm_s * 1e3:,.1f} ms, no overlap). The Layouts page ranks the alternatives."
        )
    except ValueError as err:
        st.info(f"The scenario's layout cannot be modelled: {err}")
