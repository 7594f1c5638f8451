"""Fit: does it fit, where does the memory go, how many sequences can it hold?"""

import numpy as np
import pandas as pd
import streamlit as st

from core import memory
from core.deployment.parallel import check_layout
from core.deployment.specs import SpecDecodeConfig
from ui.charts import COMPONENT_LABELS, grouped_bars_chart, max_sequences_chart, memory_stack_chart
from ui.controls import assumption_controls, layout_controls
from ui.format import md_escape
from ui.host_tables import show_host_tables
from ui.kv_tiers import show_kv_tiers
from ui.render import chart, metric, table_height
from ui.scenario import catalog, page

scenario, cat, model, gpu, d = page("Fit", "📦")
prec, wl, spec = scenario.precision, scenario.workload, scenario.spec

st.title("Fit")
st.markdown(
    f"Does **{md_escape(model.name)}** fit on **{scenario.total_gpus} × {gpu.name}** "
    f"({gpu.memory_gb:,.1f} GB each) at **{prec.label}**, and how many sequences can it hold?"
)

for level, msg in memory.scenario_notes(d) if d is not None else ():
    {"error": st.error, "warning": st.warning, "info": st.info}[level](md_escape(msg))

with st.expander("Parallel layout", expanded=True):
    layout = layout_controls(scenario, model, scenario.gpus_per_node)
with st.expander("Memory assumptions (stated, editable)"):
    assumptions = assumption_controls(scenario, model)

problems = check_layout(model, layout, assumptions.redundant_experts, prec)
if problems or d is None:  # d: the scenario's deployment, whose layout and assumptions the controls above set
    st.error(
        f"This layout does not work for {md_escape(model.name)}: "
        + md_escape("; ".join(problems))
        + ". Pick other sizes above "
        "or go back to the default layout."
    )
    st.stop()

stages = memory.stage_memories(d)
worst = min(stages, key=lambda r: r.headroom_bytes)
GB = 1e9
ctx = wl.context_len
max_seqs = memory.max_concurrent_sequences(d, ctx)
max_ctx = memory.max_context_len(d, wl.batch)
where = f" (pipeline stage {worst.stage + 1} of {worst.num_stages}, the fullest)" if worst.num_stages > 1 else ""

# ---- the verdict
if worst.status == "weights_short":
    st.error(
        f"**Does not fit.** The weights, activations and runtime reserve need "
        f"{(worst.usable_bytes - worst.kv_budget_bytes) / GB:,.1f} GB per GPU{where}, but only "
        f"{worst.usable_bytes / GB:,.1f} GB of the {worst.capacity_bytes / GB:,.1f} GB are usable at "
        f"gpu_memory_utilization {assumptions.gpu_memory_utilization:g}. Add GPUs, quantise, or shard further."
    )
elif worst.status == "kv_short":
    st.warning(
        f"**The weights fit, the workload does not.** {wl.batch:,} sequences of {ctx:,} tokens need "
        f"{worst.kv_required_bytes / GB:,.1f} GB of KV cache per GPU{where}; {worst.kv_budget_bytes / GB:,.1f} GB "
        f"is left. It holds {max_seqs:,} such sequences, or {wl.batch:,} sequences of up to {max_ctx:,} tokens."
    )
else:
    st.success(
        f"**Fits.** {worst.total_bytes / GB:,.1f} GB used per GPU{where} of {worst.usable_bytes / GB:,.1f} GB usable "
        f"({worst.capacity_bytes / GB:,.1f} GB device); {worst.headroom_bytes / GB:,.1f} GB of KV headroom. "
        f"Up to {max_seqs:,} concurrent sequences of {ctx:,} tokens."
    )

c = st.columns(4)
metric(
    "Weights per GPU",
    f"{worst.weights_bytes / GB:,.1f} GB",
    f"of {gpu.memory_gb:,.1f} GB device",
    help="All weights this GPU holds (the draft's included), scales included.",
    at=c[0],
)
metric(
    "KV cache for the workload",
    f"{worst.kv_required_bytes / GB:,.1f} GB",
    f"budget {max(worst.kv_budget_bytes, 0) / GB:,.1f} GB",
    help=f"{worst.sequences_per_gpu:,} sequences on this GPU × {worst.kv_bytes_per_sequence / 1e6:,.1f} MB each.",
    at=c[1],
)
metric(
    f"Max sequences at {ctx:,} tokens",
    f"{max_seqs:,}",
    f"workload: {wl.batch:,}",
    help="Across the whole deployment (attention-DP ranks × replicas).",
    at=c[2],
)
metric(
    f"Max context at {wl.batch:,} sequences",
    f"{max_ctx:,} tokens",
    f"model limit {model.max_position_embeddings:,}",
    at=c[3],
)

# ---- where the memory goes
order = list(COMPONENT_LABELS)
rows = []
for r in stages:
    label = "each GPU" if len(stages) == 1 else f"stage {r.stage + 1}"
    for comp, b in r.components.items():
        if b > 0:
            rows.append({"bar": label, "component": COMPONENT_LABELS[comp], "gb": b / GB, "order": order.index(comp)})
title = f"Memory per GPU: {model.name}, {scenario.total_gpus} × {gpu.name}, {prec.label}"
subtitle = (
    f"TP {layout.attention_tp} × DP-attn {layout.attention_dp}, EP {layout.ep}, PP {layout.pp}, DP {layout.dp}; "
    f"{wl.batch:,} sequences × {ctx:,} tokens; dashed line: usable at utilization {assumptions.gpu_memory_utilization:g}"
)
chart(
    memory_stack_chart,
    pd.DataFrame(rows),
    usable_gb=worst.usable_bytes / GB,
    capacity_gb=worst.capacity_bytes / GB,
    title=title,
    subtitle=subtitle,
    width="stretch",
)

dtypes = memory.component_dtypes(prec)
comp_dtype = {
    **dtypes,
    "draft_weights": spec.draft_weights or prec.weights,
    "kv_cache": prec.kv_cache,
    "draft_kv_cache": prec.kv_cache,
}
table = pd.DataFrame(
    [
        {
            "component": COMPONENT_LABELS[k],
            "stored as": comp_dtype.get(k, "—"),
            "GB per GPU": v / GB,
            "share of device (%)": 100 * v / worst.capacity_bytes,
        }
        for k, v in worst.components.items()
        if v > 0
    ]
)
left, right = st.columns([3, 2])
with left:
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        height=table_height(len(table)),
        column_config={
            "GB per GPU": st.column_config.NumberColumn(format="%.2f"),
            "share of device (%)": st.column_config.ProgressColumn(format="%.1f%%", min_value=0, max_value=100),
        },
    )
with right:
    whole = memory.weights_bytes(model, prec, include_mtp=spec.kind == "mtp")
    st.markdown(
        f"**Whole model at {prec.label.split(', KV')[0]}:** {whole / GB:,.1f} GB of weights"
        + (" (with its MTP module)" if spec.kind == "mtp" else "")
        + f", {scenario.total_gpus * gpu.memory_gb:,.0f} GB on the cluster.\n\n"
        f"**KV cache:** {memory.kv_bytes_per_token(model, prec.kv_cache) / 1e3:,.1f} KB per token "
        f"({prec.kv_cache}), {memory.kv_bytes_per_sequence(model, ctx, prec.kv_cache) / 1e9:,.3f} GB per "
        f"{ctx:,}-token sequence before sharding."
    )
    if spec.enabled:
        dw = worst.components.get("draft_weights", 0.0)
        dkv = worst.components.get("draft_kv_cache", 0.0)
        st.markdown(
            f"**Draft ({spec.method.replace('_', ' ')}, γ = {spec.num_speculative_tokens}):** "
            f"{dw / GB:,.2f} GB of weights + {dkv / GB:,.2f} GB of KV cache per GPU = "
            f"{100 * (dw + dkv) / worst.capacity_bytes:.1f}% of the device."
        )
    st.caption(
        f"Layout: TP shards attention, dense FFN, shared experts and the vocabulary; EP spreads the routed experts; "
        f"{memory.cache_split_note(model)}."
    )

# ---- Engram / n-gram tables (only for a model that has them)
show_host_tables(
    model, gpu, layout, prec, cat.efficiency_for(scenario.gpu_id, scenario.serving_stack), wl.batch,
    assumptions.max_num_batched_tokens, ctx, hbm_free_bytes_per_gpu=worst.kv_budget_bytes,
)  # fmt: skip

# ---- the prefix cache's tiers (only with prefix reuse)
show_kv_tiers(d, worst.kv_budget_bytes)

# ---- how many sequences
st.subheader("Concurrent sequences vs context length")
cap = model.max_position_embeddings
ctx_grid = np.unique(np.round(np.geomspace(128, cap, 60)).astype(int))
series = []
with_draft = memory.max_concurrent_sequences(d, ctx_grid)
label_now = f"this layout{' with the draft' if spec.enabled else ''}"
series.append(pd.DataFrame({"context_tokens": ctx_grid, "sequences": with_draft, "series": label_now}))
if spec.enabled:
    without = memory.max_concurrent_sequences(d.with_(spec=SpecDecodeConfig(), draft=None), ctx_grid)
    series.append(
        pd.DataFrame({"context_tokens": ctx_grid, "sequences": without, "series": "without speculative decoding"})
    )
marker = pd.DataFrame(
    {"context_tokens": [ctx], "sequences": [max(max_seqs, 1)], "label": [f"{max_seqs:,} at {ctx:,} tokens"]}
)
if (with_draft > 0).any():
    chart(
        max_sequences_chart,
        pd.concat(series),
        marker=marker,
        title=f"Max concurrent sequences: {model.name} on {scenario.total_gpus} × {gpu.name}",
        subtitle=f"{prec.label}; KV budget after weights, activations and reserve; capped at {cap:,} positions",
        width="stretch",
    )
else:
    st.info("No sequence fits at any context length: the weights leave no room for a KV cache.")

# ---- cache per sequence by layer type (a curve, not a rate)
layer_rows = [
    {"context": f"{n:,} tokens", "order": i, "layer type": k, "gb": v / 1e9}
    for i, n in enumerate(c for c in sorted({4096, 32768, 131072, ctx}) if 1 <= c <= cap)
    for k, v in memory.cache_by_layer_type(model, n, prec.kv_cache).items()
]
if layer_rows:
    st.subheader("Cache per sequence by layer type")
    lt = pd.DataFrame(layer_rows)
    chart(
        grouped_bars_chart,
        lt,
        x="context",
        y="gb",
        series="layer type",
        x_title="context per sequence",
        y_title="cache per sequence (GB)",
        title=f"{model.name}: what one sequence keeps",
        subtitle=f"whole model, {memory.cache_format(model, prec.kv_cache)}, before sharding; "
        "fixed states do not grow with context",
        x_in_order=True,
        width="stretch",
    )
    state = memory.linear_state_bytes_per_sequence(model)
    if state:
        st.caption(
            f"The {memory.state_layers(model)} linear-attention layers hold {state / 1e6:,.1f} MB per sequence "
            f"whatever the context (as much as {memory.state_equivalent_tokens(model, prec.kv_cache):,.0f} "
            "tokens of K/V); each decode step reads and writes all of it. They split over TP with their heads."
        )

# ---- minimum GPUs per type and precision
st.subheader(f"Minimum GPUs to hold {md_escape(model.name)}")
PRECISIONS = memory.MIN_GPU_PRECISIONS


@st.cache_data(show_spinner="Sizing every GPU type…", max_entries=64)
def _min_gpu_rows(m, memory_assumptions) -> list[dict]:
    gpus = sorted(catalog().gpus.values(), key=lambda g: (-g.memory_bytes, g.id))
    return memory.min_gpus_table(m, gpus, PRECISIONS, assumptions=memory_assumptions, max_gpus=1024)


min_rows = _min_gpu_rows(model, assumptions)
mark = {"native": "", "weight_only": "", "emulated": " *"}
display = pd.DataFrame(
    [
        {
            "GPU": r["gpu"],
            "memory (GB)": r["memory_gb"],
            **{k: ("> 1,024" if r[k] is None else f"{r[k]:,}") + mark[r[f"{k}_support"]] for k in PRECISIONS},
        }
        for r in min_rows
    ]
)
st.dataframe(
    display,
    hide_index=True,
    width="stretch",
    height=table_height(len(display)),
    column_config={"memory (GB)": st.column_config.NumberColumn(format="%.1f")},
)
st.caption(
    "GPUs counted as a deployment is built: 1, 2, 4 … up to a node, then whole nodes; each with the default layout "
    "(TP inside a node, PP across nodes, EP = TP) and the assumptions above, holding one sequence. "
    "\\* = the GPU has no native tensor cores for that format (weight-only / emulated: memory saved, compute in bf16). "
    "Whole-model weights: "
    + ", ".join(f"{k} {memory.weights_bytes(model, v) / GB:,.0f} GB" for k, v in PRECISIONS.items())
    + "."
)

with st.expander("Weight formats and their scale overhead"):
    st.dataframe(
        pd.DataFrame(
            [
                {"dtype": f.dtype, "bits per weight (with scales)": f.bits_per_weight, "scales": f.scales}
                for f in memory.WEIGHT_FORMATS.values()
            ]
        ),
        hide_index=True,
        width="stretch",
        column_config={"bits per weight (with scales)": st.column_config.NumberColumn(format="%.3f")},
    )
    st.caption(
        "Quantised schemes keep the embedding, LM head, router and norms in bf16, as the published FP8 / "
        "INT4 / NVFP4 checkpoints do; some keep more (gpt-oss's MXFP4 checkpoint keeps attention in bf16): "
        "when the model's own checkpoint differs from the scenario, a note at the top of the page says so."
    )
