"""Intensity: is each expert GEMM memory- or compute-bound, and what does a decode step cost?"""

import numpy as np
import pandas as pd
import streamlit as st

from core import memory, moe, roofline
from core.deployment.bundle import Deployment
from core.deployment.parallel import check_layout, sequences_per_replica
from core.deployment.specs import ParallelLayout, SpecDecodeConfig
from core.model import routing
from core.model.dtypes import COMPUTE_DTYPES
from ui.charts import lines_chart, roofline_chart
from ui.controls import current_layout
from ui.format import md_escape
from ui.render import chart, metric, model_errors, table_height
from ui.scenario import page

scenario, cat, model, gpu, d = page("Intensity", "📈")
prec, wl = scenario.precision, scenario.workload
layout, _ = current_layout(scenario, model, scenario.gpus_per_node)
replicas = max(layout.dp, 1)
batch = sequences_per_replica(wl.batch, layout)  # the busiest replica's share, as Fit spreads the sequences
is_moe = model.is_moe

st.title("Intensity")
st.markdown(
    f"Is each GEMM of **{md_escape(model.name)}** memory- or compute-bound on **{gpu.name}** at **{batch:,} tokens per "
    f"decode step** ({prec.label})? MoE spends *compute* sparsely but still *reads* every expert it touches."
)
if replicas > 1:
    st.caption(
        f"{wl.batch:,} sequences over {replicas} replicas: the busiest holds {batch:,}, so every figure here is one "
        f"replica's step at {batch:,} tokens (the Fit page spreads the same sequences over all {layout.total_gpus:,} GPUs)."
    )

default_cmp = [g for g in ("h100-sxm", "h200", "b200", "mi300x") if g in cat.gpus and g != gpu.id]
compare_ids = st.multiselect(
    "Compare with GPUs",
    [g for g in cat.gpus if g != gpu.id],
    default=default_cmp,
    format_func=lambda i: cat.gpus[i].name,
    help="Their ridge points are drawn next to the scenario's GPU.",
)
gpus = [gpu, *[cat.gpus[i] for i in compare_ids]]

eb_expert = moe.element_bytes(gpu, prec.expert_dtype)
ridge = roofline.ridge_point(gpu, eb_expert.compute_dtype)
batches = np.unique(np.round(np.geomspace(1, 65536, 70)))
sweep = moe.intensity_sweep(model, gpus, batches, prec)
at = moe.intensity_sweep(model, [gpu], [batch], prec)
now_intensity = float(at["intensity"][0, 0])

c = st.columns(5)
if is_moe:
    e = model.moe
    tpe = routing.tokens_per_expert(batch, e.top_k, e.n_routed_experts)
    touched = routing.expected_experts_touched(batch, e.top_k, e.n_routed_experts)
    metric(
        "Tokens per expert",
        f"{tpe:,.1f}",
        f"{batch:,} × top-{e.top_k} / {e.n_routed_experts}",
        help="Uniform routing. Imbalance makes the hottest expert busier.",
        at=c[0],
    )
    metric(
        "Experts touched / layer",
        f"{touched:,.1f} of {e.n_routed_experts}",
        f"{100 * touched / e.n_routed_experts:.0f}% of expert weights read",
        help="N (1 − (1 − k/N)^T) under uniform independent routing.",
        at=c[3],
    )
    need = moe.batch_for_expert_intensity(model, ridge, eb_expert)
    metric(
        "Batch to reach the ridge",
        "never" if not np.isfinite(need) else f"{need:,.0f}",
        "tokens per step, uniform routing",
        at=c[4],
    )
else:
    metric("Tokens per FFN GEMM", f"{batch:,}", "dense: every token, every weight", at=c[0])
    metric("Weights read per step", "all of them", "dense model", at=c[3])
    need = moe.batch_for_dense_intensity(model, ridge, eb_expert)
    metric("Batch to reach the ridge", "never" if not np.isfinite(need) else f"{need:,.0f}", "tokens per step", at=c[4])
metric(
    "Expert GEMM (FLOP/B)" if is_moe else "FFN GEMM (FLOP/B)",
    f"{now_intensity:,.1f}",
    f"weights {prec.expert_dtype}, activations {eb_expert.compute_dtype if eb_expert.act < 2 else 'bf16'}",
    at=c[1],
)
metric(
    "GPU ridge (FLOP/B)",
    f"{ridge:,.0f}",
    f"{100 * now_intensity / ridge:.1f}% reached, {eb_expert.compute_dtype}",
    help="Dense peak FLOP/s over HBM bytes/s, at the dtype the GEMM computes in.",
    at=c[2],
)

verdict = "memory-bound" if now_intensity < ridge else "compute-bound"
(st.warning if verdict == "memory-bound" else st.success)(
    f"At {batch:,} tokens per step the {'routed-expert' if is_moe else 'FFN'} GEMMs are **{verdict}**: "
    f"{now_intensity:,.1f} FLOP/byte against a ridge of {ridge:,.0f}."
)

# ---- intensity vs batch
curves = [
    pd.DataFrame(
        {"batch": batches, "intensity": sweep["intensity"][0], "series": "routed expert FFN" if is_moe else "FFN"}
    )
]
if is_moe:
    dense = moe.dense_equivalent_intensity(model, batches, moe.element_bytes(gpu, prec.weights))
    curves.append(pd.DataFrame({"batch": batches, "intensity": dense, "series": "dense FFN of equal active width"}))
ridges = pd.DataFrame(
    [
        {"value": float(sweep["ridge"][i, 0]), "label": f"{g.short_name} ridge {float(sweep['ridge'][i, 0]):,.0f}"}
        for i, g in enumerate(gpus)
    ]
)
chart(
    lines_chart,
    pd.concat(curves),
    x="batch",
    y="intensity",
    series="series",
    x_title="tokens per decode step (batch)",
    y_title="arithmetic intensity (FLOP/byte)",
    title=f"GEMM intensity vs batch: {model.name}, {prec.expert_dtype} weights",
    subtitle="dashed rules: each GPU's ridge point; below a rule the GEMM is memory-bound on that GPU",
    hrules=ridges,
    markers=pd.DataFrame(
        {"batch": [batch], "intensity": [now_intensity], "label": [f"scenario: {now_intensity:,.1f}"]}
    ),
    width="stretch",
)

# ---- roofline with the step's GEMMs
# the GEMMs depend on the model, the GPU and the precision, not the layout (one GPU where the scenario's does not run)
gemms = moe.step_gemms(d if d is not None else Deployment(model, gpu, ParallelLayout(), prec), batch)
xs = np.geomspace(0.5, 20000, 120)
roofs = []
for g in gpus:
    dt = moe.element_bytes(g, prec.expert_dtype).compute_dtype
    peak, bw = roofline.gpu_arrays([g], dt)
    roofs.append(
        pd.DataFrame(
            {
                "intensity": xs,
                "tflops": roofline.attainable_tflops(peak, bw, xs[None, :])[0],
                "gpu": f"{g.short_name} ({dt})",
            }
        )
    )
points = pd.DataFrame(
    [{"intensity": x["intensity"], "tflops": x["attainable_tflops"], "label": str(i + 1)} for i, x in enumerate(gemms)]
)
# points at nearly the same intensity share one label ("2, 3, 4") instead of overprinting
points["key"] = np.round(np.log10(points["intensity"]) * 20)
points = points.groupby("key", as_index=False).agg(
    intensity=("intensity", "first"), tflops=("tflops", "first"), label=("label", ", ".join)
)
left, right = st.columns([3, 2])
with left:
    chart(
        roofline_chart,
        pd.concat(roofs),
        points,
        title=f"Roofline: the step's GEMMs on {gpu.short_name}",
        subtitle=f"{batch:,} tokens per step; attainable = min(peak, intensity × HBM bandwidth)",
        width="stretch",
    )
with right:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "#": i + 1,
                    "GEMM": x["gemm"],
                    "FLOP/byte": x["intensity"],
                    "computes in": x["compute_dtype"],
                    "bound": "memory" if x["intensity"] < x["ridge"] else "compute",
                    "% of its dtype's peak": 100 * x["peak_fraction"],
                }
                for i, x in enumerate(gemms)
            ]
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "FLOP/byte": st.column_config.NumberColumn(format="%.1f"),
            "% of its dtype's peak": st.column_config.NumberColumn(format="%.1f"),
        },
    )
    st.caption(
        "Numbers match the points on the roofline. Each GEMM is rated against the ridge of the dtype it computes "
        "in (the LM head in bf16 even beside FP8 experts); it reads its weight, its input and writes its output once "
        "(the roofline's lower bound on traffic)."
    )

# ---- batch needed to reach the ridge on each GPU and dtype
if is_moe:
    st.subheader("Tokens per step for the expert GEMMs to reach the ridge")
    frac = st.slider("Fraction of the ridge", 0.1, 1.0, 1.0, 0.05, help="1.0 = fully compute-bound")
    rows = []
    for g in sorted(cat.gpus.values(), key=lambda g: -g.dense_tflops.get("bf16", 0)):
        row = {"GPU": g.name}
        for dt, wdt in (("bf16", "bf16"), ("fp8", "fp8"), ("fp4", "nvfp4" if g.vendor == "nvidia" else "mxfp4")):
            if g.supports(dt):
                eb = moe.element_bytes(g, wdt)
                need = moe.batch_for_expert_intensity(model, frac * roofline.ridge_point(g, dt), eb)
                row[f"{dt} expert FFN (tokens)"] = need if np.isfinite(need) else None
                dense_need = moe.batch_for_dense_intensity(model, frac * roofline.ridge_point(g, dt), eb)
                row[f"{dt} dense equivalent (tokens)"] = dense_need if np.isfinite(dense_need) else None
            else:
                row[f"{dt} expert FFN (tokens)"] = None
                row[f"{dt} dense equivalent (tokens)"] = None
        rows.append(row)
    table = pd.DataFrame(rows)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        height=table_height(len(table)),
        column_config={c: st.column_config.NumberColumn(format="%,.0f") for c in table.columns if c != "GPU"},
    )
    st.caption(
        f"Uniform routing over {model.moe.n_routed_experts} experts, top-{model.moe.top_k}: the expert FFN sees "
        f"batch × {model.moe.top_k} / {model.moe.n_routed_experts} tokens. None: the GPU has no native tensor cores for the dtype. "
        "The dense equivalent is one FFN of the same active width over every token of the step."
    )

    # ---- experts touched
    st.subheader("Distinct experts a decode step touches")
    s = st.slider("Router skew (Zipf exponent s; 0 = uniform)", 0.0, 2.0, 1.0, 0.1)
    touched_u = routing.expected_experts_touched(batches, model.moe.top_k, model.moe.n_routed_experts)
    touched_s = routing.expected_experts_touched_skewed(
        batches, model.moe.top_k, routing.zipf_probs(model.moe.n_routed_experts, s)
    )
    chart(
        lines_chart,
        pd.concat(
            [
                pd.DataFrame({"batch": batches, "experts": touched_u, "series": "uniform routing"}),
                pd.DataFrame({"batch": batches, "experts": touched_s, "series": f"skewed router (Zipf s = {s:g})"}),
            ]
        ),
        x="batch",
        y="experts",
        series="series",
        x_title="tokens per decode step (batch)",
        y_title="distinct routed experts per layer",
        log_y=False,
        title=f"Experts touched per layer: {model.name} ({model.moe.n_routed_experts} routed, top-{model.moe.top_k})",
        subtitle="N (1 − (1 − k/N)^T): every touched expert's weights are read from HBM in that step",
        hrules=pd.DataFrame(
            {"value": [model.moe.n_routed_experts], "label": [f"all {model.moe.n_routed_experts} experts"]}
        ),
        markers=pd.DataFrame(
            {
                "batch": [batch],
                "experts": [routing.expected_experts_touched(batch, model.moe.top_k, model.moe.n_routed_experts)],
                "label": [f"{batch:,} tokens"],
            }
        ),
        height=300,
        width="stretch",
    )

# ---- decode step lower bound
st.subheader("Decode step: memory or compute?")
problems = check_layout(model, layout, scenario.memory.redundant_experts, prec)
if problems or d is None:
    st.error("The scenario's layout does not suit this model (" + "; ".join(problems) + "); set it on the Fit page.")
    st.stop()
ctx = wl.decode_context_len
# the target's KV cache alone (no draft model or speculative tokens), per replica
fit_max = memory.max_concurrent_sequences(d.with_(spec=SpecDecodeConfig(), draft=None), ctx) // max(layout.dp, 1)
step_batches = batches[batches <= max(fit_max, 1)]
if fit_max < 1:
    st.warning("Not one sequence fits in this layout's KV cache (see the Fit page); the bound below is hypothetical.")
    step_batches = batches
elif batch > fit_max:
    st.warning(
        f"The scenario's {wl.batch:,} sequences ({batch:,} per replica) do not fit: at most {fit_max:,} of "
        f"{ctx:,} tokens fit one replica's KV cache (the Fit page says why). The marker below is the step they would "
        "take with room to spare; the curve stops where the cache does."
    )
with model_errors("The decode step"):
    step = moe.decode_step(d, step_batches, ctx)
    now = moe.decode_step(d, batch, ctx)
df = pd.concat(
    [
        pd.DataFrame(
            {"batch": step_batches, "ms": step.memory_time_s * 1e3, "term": "memory: weights touched + cache read"}
        ),
        pd.DataFrame({"batch": step_batches, "ms": step.compute_time_s * 1e3, "term": "compute: FLOPs at dense peak"}),
        pd.DataFrame(
            {"batch": step_batches, "ms": step.time_s * 1e3, "term": "step bound (each kernel at its slower term)"}
        ),
    ]
)
cross = step_batches[np.argmax(~step.memory_bound)] if (~step.memory_bound).any() else None
pipeline = (
    f"; PP {layout.pp}: up to {layout.pp} micro-batches in flight, the busiest stage's GPU" if layout.pp > 1 else ""
)
chart(
    lines_chart,
    df,
    x="batch",
    y="ms",
    series="term",
    x_title="tokens per decode step per replica (batch)",
    y_title="time per token step (ms)",
    y_format=",.2~f",
    title=f"Decode step lower bound: {model.name} on {layout.total_gpus} × {gpu.short_name}",
    subtitle=f"TP {layout.attention_tp} / EP {layout.ep} / PP {layout.pp}; context {ctx:,} tokens per sequence "
    f"(input + half the output); up to the {max(fit_max, 1):,} sequences that fit; the step-time model's "
    f"kernels with every efficiency at 1, no communication{pipeline}",
    vrules=pd.DataFrame({"value": [cross], "label": [f"compute-bound from {cross:,.0f}"]}) if cross else None,
    markers=pd.DataFrame(
        {
            "batch": [batch],
            "ms": [float(now.time_s[0] * 1e3)],
            "label": [f"{float(now.time_s[0] * 1e3):,.2f} ms at {batch:,}"],
        }
    ),
    width="stretch",
)
t_ms, mem_ms, cmp_ms = (float(x[0]) * 1e3 for x in (now.time_s, now.memory_time_s, now.compute_time_s))
micro, replica_gpus = float(now.microbatches[0]), layout.gpus_per_stage * layout.pp
where = (
    f"per GPU of the busiest stage (stage {int(now.stage[0]) + 1} of {layout.pp}) for one micro-batch of "
    f"{batch / micro:,.1f} sequences, with {micro:,.0f} micro-batches in flight"
    if layout.pp > 1
    else "per GPU"
)
st.markdown(
    f"At {batch:,} tokens per replica: **{t_ms:,.2f} ms per token step** ({'memory' if mem_ms >= cmp_ms else 'compute'}-bound; "
    f"memory {mem_ms:,.2f} ms, compute {cmp_ms:,.3f} ms), reading {float(now.weight_bytes[0]) / 1e9:,.2f} GB of weights + "
    f"{float(now.kv_bytes[0]) / 1e9:,.2f} GB of cache {where}: an upper bound of "
    f"**{float(now.tokens_per_s[0]):,.0f} tokens/s per replica** ({float(now.tokens_per_s[0]) / replica_gpus:,.0f} per GPU)."
)
st.caption("Dtypes with native tensor cores: " + ", ".join(d for d in COMPUTE_DTYPES if gpu.supports(d)) + ".")
