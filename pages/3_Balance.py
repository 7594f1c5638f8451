"""Balance: how bad is expert-load imbalance, and what do EPLB and bias balancing recover?"""

import numpy as np
import pandas as pd
import streamlit as st

from core import balance as bal
from core.balance import cost as bcost
from core.balance.loads import synthetic_loads
from ui.charts import expert_load_chart, grouped_bars_chart, lines_chart
from ui.controls import PASTE_MAX_CHARS, paste_box
from ui.eplb_published import show_published_eplb
from ui.format import md_escape
from ui.layout_check import runnable_layout
from ui.render import chart, metric, model_errors, table_height
from ui.scenario import page

scenario, cat, model, gpu, d = page("Balance", "⚖️")
wl = scenario.workload

st.title("Balance")
if model.moe is None:
    st.info(
        f"{md_escape(model.name)} is a dense model: every token uses every weight, so there is no expert load to balance. "
        "Pick a MoE model in the sidebar."
    )
    st.stop()
e = model.moe
n, k = e.n_routed_experts, e.top_k
st.markdown(
    f"How unevenly do **{md_escape(model.name)}**'s {n} routed experts (top-{k}) share the work, what does it cost on "
    f"**{scenario.total_gpus} GPUs**, and what do EPLB and bias balancing recover? A MoE step waits for its busiest GPU."
)


@st.cache_data(show_spinner=False, max_entries=64)
def _max_redundant(_d, m, gpu_id: str, lay, precision, workload, assumptions) -> int:
    """:func:`core.balance.cost.max_fitting_redundant` of ``_d``, cached on the parts of it that it depends on."""
    return bcost.max_fitting_redundant(_d)


# ---- where the loads come from
SOURCES = [
    "Dirichlet (random)",
    "Zipf (skewed router)",
    "hot experts",
    "uniform",
    "paste / upload CSV",
    "Prometheus scrape",
]
src_c = st.columns([1.4, 1, 1, 1])
source = src_c[0].selectbox("Expert loads", SOURCES, help="Synthetic profiles are seeded and reproducible.")
layers = model.num_moe_layers
loads = None
if source == "Zipf (skewed router)":
    s = src_c[1].slider("Zipf exponent s", 0.0, 2.0, 0.3, 0.05, help="Load ∝ 1 / rank^s; 0 is uniform.")
    seed = src_c[2].number_input("Seed", 0, 1_000_000, 0, 1)
    loads = synthetic_loads("zipf", n, layers, s=s, seed=int(seed))
elif source == "hot experts":
    n_hot = src_c[1].number_input("Hot experts", 1, n - 1, 1, 1)
    share = src_c[2].slider("Their share of assignments", 0.01, 0.99, min(0.38, 0.99), 0.01)
    loads = synthetic_loads("hot", n, layers, n_hot=int(n_hot), hot_share=share)
elif source == "Dirichlet (random)":
    conc = src_c[1].number_input("Concentration", 0.01, 10_000.0, 2.0, 0.5, help="Large: near uniform; small: skewed.")
    seed = src_c[2].number_input("Seed", 0, 1_000_000, 0, 1)
    loads = synthetic_loads("dirichlet", n, layers, concentration=conc, seed=int(seed))
elif source == "uniform":
    loads = synthetic_loads("uniform", n, layers)
else:
    is_csv = source == "paste / upload CSV"
    hint = (
        "one row per layer, one column per expert, e.g. `120,98,311,...`"
        if is_csv
        else 'samples like `vllm:expert_load{layer="3",expert="17"} 1234` (any metric with an expert label)'
    )
    up = st.file_uploader(
        f"Upload ({hint})", type=["csv", "txt"] if is_csv else ["txt", "prom"], key=f"upload_{source}"
    )
    text = paste_box("…or paste", PASTE_MAX_CHARS, height=120, placeholder=hint, key=f"paste_{source}")
    raw = None
    if up is not None:
        try:
            raw = up.getvalue().decode("utf-8")
        except UnicodeDecodeError:
            st.error("The file is not UTF-8 text.")
    elif text.strip():
        raw = text
    if raw is None:
        st.info(f"Paste or upload loads to analyse them ({hint}). Until then the page shows a Dirichlet(2) profile.")
        loads = synthetic_loads("dirichlet", n, layers, concentration=2.0, seed=0)
    else:
        try:
            parsed = bal.parse_loads_csv(raw) if is_csv else bal.parse_prometheus_loads(raw)[0]
        except ValueError as err:
            st.error(f"Could not read the loads: {md_escape(err)}")
            st.stop()
        if parsed.shape[1] != n:
            st.error(
                f"The data has {parsed.shape[1]} experts per row; {md_escape(model.name)} has {n}. Pick the matching model "
                "or check the columns."
            )
            st.stop()
        loads = parsed
        st.success(f"Read {parsed.shape[0]} layer(s) × {parsed.shape[1]} experts.")
fractions = loads / loads.sum(axis=1, keepdims=True)
threshold = src_c[3].number_input(
    "Alert above imbalance ratio", 1.0, 100.0, 2.0, 0.1, help="max / mean load; the sources suggest alerting above 2.0."
)

# ---- metrics for one layer and the whole step
layer = st.slider("Layer shown", 0, fractions.shape[0] - 1, 0) if fractions.shape[0] > 1 else 0
f = fractions[layer]
ratio = bal.imbalance_ratio(f)
layout = runnable_layout(scenario, model)  # None after an error naming why the model cannot run it
if layout is None or d is None:
    st.stop()
ep = layout.ep
m = st.columns(5)
metric(
    "Imbalance ratio (max / mean)",
    f"{ratio:.2f}",
    "alert" if ratio > threshold else "below the alert",
    at=m[0],
    alert=ratio > threshold,
)
metric("Coefficient of variation", f"{bal.coefficient_of_variation(f):.2f}", "std / mean", at=m[1])
metric("Hottest expert (share)", f"{100 * f.max():.2f}%", f"expert {int(np.argmax(f))}; mean {100 / n:.2f}%", at=m[2])
metric("Aux balance loss N Σ f·P", f"{bal.aux_balance_loss(f, f):.2f}", "1.0 = balanced (P ≈ f assumed)", at=m[3])
if ratio > threshold:
    st.warning(f"Layer {layer}: the hottest expert carries {ratio:.1f}× the mean load (alert at {threshold:g}).")

hot = np.where(f > threshold / n, "hot", "normal")
chart(
    expert_load_chart,
    pd.DataFrame({"item": np.arange(n), "value": 100 * f, "hot": hot}),
    mean=100 / n,
    threshold=100 * threshold / n,
    title=f"Expert load, layer {layer}: {model.name} ({source})",
    subtitle=f"red: above {threshold:g} × the mean",
    width="stretch",
)

# ---- EPLB
st.subheader("Per-GPU load before and after EPLB")
if n % ep:
    st.info(
        f"The layout's EP size ({ep}) does not divide {n} experts; EPLB needs redundant slots to fill the gap. "
        "Pick another layout on the Fit page."
    )
    st.stop()
ep_c = st.columns([2, 1, 1])
prec = scenario.precision
most = _max_redundant(d, model, gpu.id, layout, prec, wl, scenario.memory)
options = [ep * i for i in range(0, most // ep + 1)]
if len(options) > 1:
    red = ep_c[0].select_slider(
        "Redundant experts (extra replicas over the EP group)",
        options=options,
        value=min(ep * max(1, 32 // ep), most),
        help=f"Up to {most} fit beside the workload's KV cache (each EP-wide round adds one expert per GPU per "
        "MoE layer).",
    )
else:
    red = 0
if most < n:
    slot = bcost.redundant_memory(d, ep).extra_bytes
    (st.warning if most == 0 else st.caption)(
        f"More than {most} redundant experts do not fit on a {gpu.short_name}: each round of {ep} replicas adds "
        f"{slot / 1e9:,.2f} GB per GPU, and {most + ep} would leave less than the {wl.batch:,} sequences' KV cache "
        "(Fit page). EPLB here uses at most that many."
    )
room = bcost.redundant_memory(d, int(red))
ep_nodes = ep // scenario.gpus_per_node if ep % scenario.gpus_per_node == 0 and ep >= scenario.gpus_per_node else 1
nodes = ep_c[1].number_input(
    "Nodes in the EP group", 1, ep, ep_nodes, 1, help="EPLB's hierarchical policy packs expert groups to nodes first."
)
metric(
    "Expert groups",
    f"{e.n_groups}",
    "hierarchical" if e.n_groups % nodes == 0 and ep % nodes == 0 else "global",
    at=ep_c[2],
)
plan = bal.placement_plan(fractions, ep, int(nodes), e.n_groups, int(red))
lost_before = 100 * (1 - plan.throughput_before)
lost_after = 100 * (1 - plan.throughput_after)
dec_tokens = max(wl.batch / scenario.total_gpus, 1e-3)
pre_tokens = scenario.memory.max_num_batched_tokens / layout.attention_tp
with model_errors("The throughput lost to imbalance"):
    dec = bcost.imbalance_cost(d, plan, "decode", dec_tokens, wl.decode_context_len, int(red))
    pre = bcost.imbalance_cost(d, plan, "prefill", pre_tokens, wl.input_len, int(red))
metric(
    f"Lost to imbalance (decode, EP {ep})",
    f"{100 * dec.lost_before:.1f}%",
    f"{100 * dec.lost_after:.1f}% with EPLB (+{int(red)}); prefill {100 * pre.lost_before:.0f}% → "
    f"{100 * pre.lost_after:.0f}%",
    help="The step-time model with the busiest GPU's expert load (max / mean per-GPU load, averaged over the "
    f"layers: {dec.imbalance_before:.2f} contiguous, {dec.imbalance_after:.2f} after EPLB) against balanced "
    f"experts, at the scenario's {dec_tokens:,.1f} decode tokens per GPU and a {pre_tokens:,.0f}-token prefill "
    "chunk. Redundant experts are read too: in a memory-bound decode step they can cost more than they save.",
    at=m[4],
)
st.caption(
    f"**What imbalance costs depends on the regime.** At {dec_tokens:,.1f} decode tokens per GPU the expert phase "
    "is memory-bound: every GPU reads the local experts its tokens touch, so the busiest GPU's extra tokens cost "
    f"little ({100 * dec.lost_before:.1f}%), and EPLB's {int(red)} replicas add "
    f"{room.extra_bytes / 1e9:,.2f} GB per GPU of weights to hold and read ({100 * dec.lost_after:.1f}% after). In a "
    f"{pre_tokens:,.0f}-token prefill chunk the experts are compute-bound and the busiest GPU sets the pace: "
    f"{100 * pre.lost_before:.0f}% lost, {100 * pre.lost_after:.0f}% after EPLB. Counting tokens alone (every layer "
    f"waits for its busiest GPU, all compute) gives {lost_before:.1f}% → {lost_after:.1f}%, the compute-bound limit."
)
n_cold, cold_bytes = bcost.cold_expert_memory(model, layout, prec, fractions, 0.1)
st.caption(
    f"**Cold experts:** the {n_cold:,.0f} least-loaded of {n} experts per layer serve 10% of the assignments yet "
    f"hold {cold_bytes / 1e9:,.2f} GB per GPU; replicating hot ones costs {room.extra_bytes / 1e9:,.2f} GB per GPU "
    "more. Both are weights every GPU keeps whatever the traffic."
)
gpu_df = pd.concat(
    [
        pd.DataFrame({"gpu": np.arange(ep), "load": 100 * plan.gpu_before[layer], "placement": "contiguous (no EPLB)"}),
        pd.DataFrame(
            {"gpu": np.arange(ep), "load": 100 * plan.gpu_after[layer], "placement": f"EPLB, +{int(red)} replicas"}
        ),
    ]
)
chart(
    grouped_bars_chart,
    gpu_df,
    x="gpu",
    y="load",
    series="placement",
    x_title="GPU in the EP group",
    y_title="share of the layer's assignments (%)",
    title=f"Per-GPU load, layer {layer}: EP {ep}, {n} experts",
    subtitle=f"max / mean per-GPU load over all {fractions.shape[0]} layers: {dec.imbalance_before:.2f} contiguous, "
    f"{dec.imbalance_after:.2f} with EPLB (+{int(red)} replicas, +{room.extra_bytes / 1e9:,.2f} GB per GPU)",
    hrule=100 / ep,
    hrule_label=f"ideal {100 / ep:.2f}%",
    width="stretch",
)
per_gpu = plan.phy2log.shape[1] // ep
p2l = plan.phy2log[layer]
cnt = plan.logcnt[layer]
st.dataframe(
    pd.DataFrame(
        [
            {
                "GPU": g,
                "experts (* = replicated)": ", ".join(
                    f"{x}{'*' if cnt[x] > 1 else ''}" for x in p2l[g * per_gpu : (g + 1) * per_gpu]
                ),
                "load (%)": 100 * plan.gpu_after[layer, g],
            }
            for g in range(ep)
        ]
    ),
    hide_index=True,
    width="stretch",
    height=min(table_height(ep), 600),
    column_config={"load (%)": st.column_config.NumberColumn(format="%.2f")},
)
st.caption(
    "EPLB (DeepSeek's open-source algorithm): replicate the hottest experts into the redundant slots, then pack "
    "replicas onto GPUs heaviest first; with expert groups dividing the nodes, groups are packed to nodes first."
)
show_published_eplb()

# ---- capacity factor
st.subheader("Capacity factor and dropped tokens")
tokens = wl.batch
cfs = np.round(np.arange(1.0, 3.01, 0.05), 2)
drops = bal.drop_rate(f, tokens, k, cfs)
cf_now = st.slider("Capacity factor", 1.0, 3.0, 1.25, 0.05)
over = bal.capacity_overflow(f, tokens, k, cf_now)
cap = bal.capacity_per_expert(tokens, k, n, cf_now)
chart(
    lines_chart,
    pd.DataFrame({"cf": cfs, "drop": 100 * drops, "series": f"{tokens:,} tokens per step, layer {layer}"}),
    x="cf",
    y="drop",
    series="series",
    x_title="capacity factor",
    y_title="assignments dropped (%)",
    log_x=False,
    log_y=False,
    y_format=".1f",
    title="Tokens over capacity vs capacity factor",
    subtitle=f"capacity = tokens × {k} / {n} × factor; a dropped token skips the expert (residual only)",
    markers=pd.DataFrame(
        {
            "cf": [cf_now],
            "drop": [100 * over.sum() / (tokens * k)],
            "label": [f"{100 * over.sum() / (tokens * k):.1f}% at {cf_now:g}"],
        }
    ),
    height=260,
    width="stretch",
)
hottest = int(np.argmax(f))
st.markdown(
    f"At capacity factor {cf_now:g}: **{cap:,.1f} slots per expert**; the hottest expert receives "
    f"{f[hottest] * tokens * k:,.1f} assignments and overflows **{over[hottest]:,.1f}**; "
    f"{100 * over.sum() / (tokens * k):.2f}% of all assignments are dropped. Dropped tokens pass through the residual "
    "connection only: the layer's expert contribution is lost for them, which hurts quality. Inference engines usually "
    "run dropless (no capacity limit) and pay for imbalance in time instead."
)

# ---- bias-based balancing
st.subheader("Auxiliary-loss-free balancing (DeepSeek-V3's bias update)")


@st.cache_data(show_spinner="Simulating the router…", max_entries=32)
def _bias(n: int, k: int, steps: int, speeds: tuple[float, ...], skew: float) -> np.ndarray:
    return bal.bias_balancing(
        n, k, steps=steps, tokens_per_step=512, update_speed=np.array(speeds), skew=skew, seed=1
    ).imbalance


# a Monte-Carlo run (100 steps x 512 tokens x every expert x 3 speeds, ~0.6 s for DeepSeek-V3): on request, so the
# page opens without it
if not st.toggle("Simulate the bias update on a skewed router", value=False, key="bias_sim"):
    st.caption(
        "Each token picks its top-k experts by affinity + b_i; after each step b_i −= u for an overloaded expert and "
        "+= u for an underloaded one. The simulation shows how fast that balances a skewed router for three speeds u."
    )
else:
    bb = st.columns(3)
    skew = bb[0].slider("Router skew", 0.0, 3.0, 1.5, 0.1)
    steps = bb[1].select_slider("Steps", [50, 100, 200, 400], 100)
    u_mid = bb[2].select_slider("Update speed u", [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3], 0.01)

    speeds = (u_mid / 10, u_mid, min(u_mid * 10, 1.0))
    asked, steps = int(steps), bal.bias_steps_within_budget(n, 512, len(speeds), int(steps))
    if steps < asked:
        st.info(
            f"With {n:,} experts the simulation runs {steps} of the {asked} steps: {512:,} tokens × {n:,} experts × "
            f"3 speeds a step, at most {bal.BIAS_SIM_MAX_SCORES:,.0f} router scores (about 3 s)."
        )
    hist = _bias(n, k, steps, speeds, float(skew))
    curves = pd.concat(
        [
            pd.DataFrame({"step": np.arange(1, steps + 1), "imbalance": hist[i], "series": f"u = {u:g}"})
            for i, u in enumerate(speeds)
        ]
    )
    chart(
        lines_chart,
        curves,
        x="step",
        y="imbalance",
        series="series",
        x_title="training / routing step",
        y_title="imbalance ratio (max / mean)",
        log_x=False,
        log_y=True,
        y_format=".1f",
        title=f"Bias balancing on a skewed router: {n} experts, top-{k}",
        subtitle="b_i −= u when expert i is overloaded, += u when underloaded; too small converges slowly, "
        "too large oscillates",
        hrules=pd.DataFrame({"value": [threshold], "label": [f"alert {threshold:g}"]}),
        height=280,
        width="stretch",
    )
