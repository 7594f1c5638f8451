"""Disaggregation & cost: prefill / decode pool sizes, the KV stream between them, $ per million tokens."""

import numpy as np
import pandas as pd
import streamlit as st

from core import speculative as sd
from core._util.validated import bounds, describe_validation_error
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Workload
from core.hardware import ClusterSpec
from core.serving import cost, disagg
from core.serving import layout as lay_mod
from core.validation import calibration_note
from ui.charts import grouped_bars_chart, lines_chart
from ui.commands import show_dynamo_recipe
from ui.format import md_escape
from ui.layout_check import launch_commands
from ui.render import chart, model_errors
from ui.scenario import catalog, page

scenario, cat, model, gpu, d = page("Disaggregation & cost", "💰")
wl, prec, spec = scenario.workload, scenario.precision, scenario.spec
block = ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node)
search = lay_mod.search_deployment(scenario, cat, model)  # the commands' model, precision, cluster and memory
MAX_TOKENS = int(bounds(Workload, "input_len")[1])  # the prompt and output lengths a scenario (and the URL) allow
MAX_SPEEDUP = 20.0  # the decode speedup core.serving.disagg.size_pools sizes pools for

st.title("Disaggregation & cost")
st.markdown(
    f"How many **{gpu.name}** GPUs does **{md_escape(model.name)}** need for this traffic, split into a prefill and a decode pool "
    f"or colocated, what does the KV hand-off cost the network, and what is a million tokens worth? Layouts are searched "
    f"on the scenario's cluster ({block.total_gpus} GPUs) as the building block."
)
st.caption(calibration_note(cat, gpu.id, scenario.serving_stack))

c = st.columns(6)
rate = c[0].number_input("Requests per minute", 1.0, 10_000_000.0, 3000.0, 100.0)
isl = c[1].number_input("Prompt tokens (mean)", 1, MAX_TOKENS, wl.input_len, 128)
osl = c[2].number_input("Output tokens (mean)", 1, MAX_TOKENS, wl.output_len, 64)
ttft = c[3].number_input(
    "TTFT target (s)",
    0.05,
    600.0,
    3.0,
    0.1,
    help="Time to first token of a prompt (chunk by chunk, through every pipeline stage) that prefill plans meet.",
)
tpot = c[4].number_input("TPOT target (ms)", 5.0, 5000.0, 100.0, 5.0)
price = c[5].number_input(
    "$ per GPU-hour",
    0.0,
    1000.0,
    float(gpu.price_per_gpu_hour_usd or 3.0),
    0.25,
    help=f"Catalog default for {gpu.name}: {gpu.price_source or 'an assumption'}",
)
k = st.columns(3)
interference = k[0].slider(
    "Colocation interference",
    0.0,
    1.0,
    0.3,
    0.05,
    help="A stated assumption: colocated serving runs both phases this much slower "
    "(prefill chunks stall decode steps and the other way round).",
)

try:
    traffic = disagg.Traffic(float(rate), int(isl), int(osl), float(ttft), float(tpot) / 1e3, wl.prefix_reuse)
except ValueError as err:
    st.error(str(err))
    st.stop()


def _search(m, gpu_id, nodes, gpn, precision, assumptions, stack) -> Deployment:
    """The block the layouts are searched on (its layout left to the search)."""
    c = catalog()
    cl = ClusterSpec(gpu=c.gpu(gpu_id), num_nodes=nodes, gpus_per_node=gpn)
    eff = c.efficiency_for(gpu_id, stack)
    return Deployment(m, cl.gpu, ParallelLayout(), precision, eff, cluster=cl, assumptions=assumptions)


@st.cache_data(show_spinner="Sizing the pools…", max_entries=32)
def _size(m, gpu_id, nodes, gpn, traffic, precision, interference, speedup, assumptions, stack):
    d1 = _search(m, gpu_id, nodes, gpn, precision, assumptions, stack)
    return disagg.size_pools(d1, traffic, catalog=catalog(), interference=interference, decode_speedup=speedup)


def _pools(speedup: float):
    """The scenario's pools with decode sped up ``speedup`` times (speculative decoding)."""
    return _size(
        model,
        gpu.id,
        block.num_nodes,
        block.gpus_per_node,
        traffic,
        prec,
        interference,
        speedup,
        scenario.memory,
        scenario.serving_stack,
    )


try:
    pools = _pools(1.0)
except ValueError as err:
    st.error(
        f"{md_escape(describe_validation_error(err))}. Add GPUs to the building block, quantise further or relax the "
        "targets."
    )
    st.stop()

# speculative decoding: the scenario's method, at the decode plan's batch
if spec.enabled:
    alpha, c_cost = sd.resolved_alpha_cost(spec, cat.draft_methods)
    dplan = pools.decode_plan
    with model_errors("The speculative speedup of the decode plan"):
        bs = sd.batch_speedup(
            # the decode plan's layout with its own redundant experts (the layout search adds them where EP must
            # divide the experts); every draft priced at c target steps here, a separate draft model's too
            search.with_(layout=dplan.layout, redundant_experts=dplan.redundant_experts, draft=None),
            [dplan.tokens_per_gpu * dplan.layout.gpus_per_stage],
            alpha=alpha,
            gamma=spec.num_speculative_tokens,
            context_len=Workload(input_len=isl, output_len=osl).decode_context_len,
            draft_cost=c_cost,
        )
    default_speedup = float(max(bs.speedup[0], 0.1))
    note = (
        f"{spec.method} at α {alpha:.2f}, γ {spec.num_speculative_tokens}, c {c_cost:g}, at the decode plan's "
        f"{dplan.tokens_per_gpu:,.0f} sequences per GPU"
    )
else:
    default_speedup, note = 1.0, "speculative decoding is off in the scenario (sidebar)"
start = min(max(default_speedup, 0.1), MAX_SPEEDUP) if np.isfinite(default_speedup) else 1.0
if start != default_speedup:  # the box can only start within its range
    k[2].caption(
        f"The scenario's speculative decoding computes {default_speedup:.2f}×; pool sizing takes 0.1-{MAX_SPEEDUP:g}×, "
        f"so the box starts at {start:g}×."
    )
speedup = k[1].number_input("Speculative decode speedup (×)", 0.1, MAX_SPEEDUP, round(start, 2), 0.05, help=note)
with_spec = _pools(float(speedup))

m = st.columns(5)
m[0].metric(
    "Prefill pool", f"{pools.prefill_gpus:,} GPUs", pools.prefill_plan.label, delta_color="off", delta_arrow="off"
)
m[1].metric("Decode pool", f"{pools.decode_gpus:,} GPUs", pools.decode_plan.label, delta_color="off", delta_arrow="off")
m[2].metric(
    "P : D",
    f"1 : {pools.decode_gpus / pools.prefill_gpus:.2f}",
    f"{pools.disaggregated_gpus:,} GPUs in all",
    delta_color="off",
    delta_arrow="off",
)
m[3].metric(
    "Colocated instead",
    f"{pools.colocated_gpus:,} GPUs",
    f"+{interference:.0%} interference",
    delta_color="off",
    delta_arrow="off",
)
m[4].metric(
    "Sequences decoding at once",
    f"{pools.concurrent_sequences:,.0f}",
    f"{pools.decode_plan.tokens_per_gpu:,.0f} per decode GPU",
    delta_color="off",
    delta_arrow="off",
)
st.caption(
    f"Prefill: {traffic.computed_input_tokens_per_s:,.0f} prompt tokens/s computed"
    + (
        f" ({traffic.input_tokens_per_s:,.0f} arrive; a warm prefix cache serves {100 * traffic.prefix_reuse:g}% of "
        "each prompt)"
        if traffic.prefix_reuse
        else ""
    )
    + f" at {pools.prefill_plan.tokens_per_s_per_gpu:,.0f} per GPU; "
    f"decode: {traffic.output_tokens_per_s:,.0f} output tokens/s at {pools.decode_plan.tokens_per_s_per_gpu:,.0f} per GPU "
    f"({pools.decode_plan.step_s * 1e3:,.0f} ms per step). Pools are whole replicas of their layout: the prefill "
    f"pool is {100 * pools.prefill_utilisation:.0f}% busy, the decode pool {100 * pools.decode_utilisation:.0f}%."
)
with st.expander("Launch commands for the prefill and decode workers (vLLM, SGLang, TensorRT-LLM)"):
    for title, plan, role in (
        (f"Prefill workers: {pools.prefill_plan.label}", pools.prefill_plan, "prefill"),
        (f"Decode workers: {pools.decode_plan.label}", pools.decode_plan, "decode"),
    ):
        st.markdown(f"**{title}**")
        launch_commands(plan, search, role)
with st.expander("Kubernetes: a disaggregated deployment for NVIDIA Dynamo (DynamoGraphDeployment)"):
    show_dynamo_recipe(pools, search)

# ---- cost per million tokens
st.subheader("$ per million tokens")
work_p = traffic.computed_input_tokens_per_s / pools.prefill_plan.tokens_per_s_per_gpu
work_d = traffic.output_tokens_per_s / pools.decode_plan.tokens_per_s_per_gpu
share_in = work_p / (work_p + work_d)
rows = []
for name, s_, colocated in (
    ("colocated", pools, True),
    ("disaggregated", pools, False),
    (f"disaggregated + speculative ({speedup:g}×)", with_spec, False),
):
    if colocated:
        din = cost.dollars_per_million_tokens(s_.colocated_gpus * share_in, price, traffic.input_tokens_per_s)
        dout = cost.dollars_per_million_tokens(s_.colocated_gpus * (1 - share_in), price, traffic.output_tokens_per_s)
        busy = (s_.colocated_utilisation, s_.colocated_utilisation)
    else:
        din = cost.dollars_per_million_tokens(s_.prefill_gpus, price, traffic.input_tokens_per_s)
        dout = cost.dollars_per_million_tokens(s_.decode_gpus, price, traffic.output_tokens_per_s)
        busy = (s_.prefill_utilisation, s_.decode_utilisation)
    rows += [
        {"serving": name, "tokens": "input", "usd": din, "busy": 100 * busy[0]},
        {"serving": name, "tokens": "output", "usd": dout, "busy": 100 * busy[1]},
    ]
cost_df = pd.DataFrame(rows)
full_in = cost.dollars_per_million_tokens(1, price, pools.prefill_plan.tokens_per_s_per_gpu)
full_out = cost.dollars_per_million_tokens(1, price, pools.decode_plan.tokens_per_s_per_gpu)
chart(
    grouped_bars_chart,
    cost_df,
    x="tokens",
    y="usd",
    series="serving",
    x_title=None,
    y_title="$ per million tokens",
    title=f"Cost per million tokens: {model.name} on {gpu.short_name} at ${price:g}/GPU-hour",
    subtitle=f"{rate:,.0f} requests/min, {isl:,} in / {osl:,} out; input per arriving prompt token (cache hits "
    "included); colocated cost split by work share",
    width="stretch",
)
table = cost_df.pivot(index="serving", columns="tokens", values=["usd", "busy"])
table.columns = [f"{a}_{b}" for a, b in table.columns]
st.dataframe(
    table.reset_index(),
    hide_index=True,
    width="stretch",
    column_config={
        "usd_input": st.column_config.NumberColumn("$/M input (per arriving token)", format="$%.3f"),
        "usd_output": st.column_config.NumberColumn("$/M output", format="$%.3f"),
        "busy_input": st.column_config.NumberColumn("prefill busy (%)", format="%.0f%%"),
        "busy_output": st.column_config.NumberColumn("decode busy (%)", format="%.0f%%"),
    },
)
st.caption(
    f"Pools are whole replicas ({pools.prefill_plan.replica_gpus} GPUs per prefill replica, "
    f"{pools.decode_plan.replica_gpus} per decode replica), so at this traffic the prefill pool is "
    f"{100 * pools.prefill_utilisation:.0f}% and the decode pool {100 * pools.decode_utilisation:.0f}% busy. "
    f"Fully busy, the plans themselves cost ${full_in:.3f}/M computed input tokens (the prompt tokens the prefill pool "
    "computes; the table's input column counts every arriving prompt token, prefix-cache hits included) and "
    f"${full_out:.3f}/M output tokens; "
    "raise the traffic (or use smaller replicas) to approach that."
)
saved = pools.decode_gpus - with_spec.decode_gpus
if speedup > 1:
    st.markdown(
        f"**Speculative decoding at {speedup:g}×** shrinks the decode pool from {pools.decode_gpus:,} to "
        f"{with_spec.decode_gpus:,} GPUs (whole replicas): **${cost.yearly_gpu_cost(saved, price):,.0f} a year** "
        f"({saved:,} GPUs × ${price:g}/GPU-hour × 8,760 h)"
        + (
            "; the decode pool stays at whole replicas, so the speedup shows as idle time "
            f"({100 * with_spec.decode_utilisation:.0f}% busy), not as fewer GPUs."
            if saved == 0
            else "."
        )
    )
else:
    st.markdown("**Speculative decoding** is off (speedup 1×): no decode GPUs saved.")
st.caption(f"GPU price: {gpu.price_source or 'an assumption'}")

# ---- KV hand-off
st.subheader("KV cache from prefill to decode")
kv_gbps = pools.kv_bytes_per_s / 1e9
links = [link for link in cat.interconnects.values() if link.kind in ("scale_out", "scale_up")]
util = pd.DataFrame(
    [
        {
            "link": link.name,
            "GB/s per direction": link.bw_gbps_per_direction,
            "one link (%)": 100 * disagg.link_utilisation(pools.kv_bytes_per_s, 1, link.bw_gbps_per_direction),
            "one per prefill GPU (%)": 100
            * disagg.link_utilisation(pools.kv_bytes_per_s, pools.prefill_gpus, link.bw_gbps_per_direction),
        }
        for link in links
    ]
)
st.markdown(
    f"**{pools.kv_bytes_per_request / 1e9:,.3f} GB per request** ({isl:,} prompt tokens, KV {prec.kv_cache}) × "
    f"{rate / 60:,.1f} requests/s = **{kv_gbps:,.2f} GB/s**, {kv_gbps / pools.prefill_gpus:,.2f} GB/s out of each prefill GPU."
)
scale_out = cat.interconnects.get(gpu.scale_out_link)
if scale_out is not None:
    u = disagg.link_utilisation(pools.kv_bytes_per_s, pools.prefill_gpus, scale_out.bw_gbps_per_direction)
    if u > 1:
        st.error(
            f"The prefill pool's {scale_out.name} links cannot carry the KV stream ({100 * u:,.0f}% of their capacity): "
            "add prefill GPUs or NICs, quantise the KV cache, or colocate."
        )
    elif u > 0.7:
        st.warning(
            f"The KV stream uses {100 * u:,.0f}% of the prefill pool's {scale_out.name} links: little room for bursts."
        )
    else:
        st.success(f"The KV stream uses {100 * u:,.1f}% of the prefill pool's {scale_out.name} links (one per GPU).")
st.dataframe(
    util,
    hide_index=True,
    width="stretch",
    column_config={
        "one link (%)": st.column_config.NumberColumn(format="%.1f"),
        "one per prefill GPU (%)": st.column_config.NumberColumn(format="%.2f"),
    },
)

# ---- break-even
st.subheader("When does disaggregation pay?")
rates = np.unique(np.round(np.geomspace(max(rate / 100, 1), rate * 10, 40)))


@st.cache_data(show_spinner="Costing both ways over the request rates…", max_entries=32)
def _break_even(m, gpu_id, nodes, gpn, traffic, rates, precision, interference, assumptions, stack):
    d1 = _search(m, gpu_id, nodes, gpn, precision, assumptions, stack)
    return disagg.break_even_rate(d1, traffic, rates, catalog=catalog(), interference=interference)


colo, dis, even = _break_even(
    model,
    gpu.id,
    block.num_nodes,
    block.gpus_per_node,
    traffic,
    rates,
    prec,
    interference,
    scenario.memory,
    scenario.serving_stack,
)
curve = pd.concat(
    [
        pd.DataFrame({"rate": rates, "usd_per_hour": colo * price, "series": "colocated"}),
        pd.DataFrame({"rate": rates, "usd_per_hour": dis * price, "series": "disaggregated"}),
    ]
)
chart(
    lines_chart,
    curve,
    x="rate",
    y="usd_per_hour",
    series="series",
    x_title="requests per minute",
    y_title="$ per hour",
    y_format="$,.0f",
    title="GPU cost vs request rate: colocated vs disaggregated",
    subtitle=f"pools rounded to whole replicas; colocation pays {interference:.0%} interference; "
    "the sources' rule of thumb puts the break-even near 2,000 requests/min",
    vrules=pd.DataFrame({"value": [even], "label": [f"break-even ≈ {even:,.0f}/min"]}) if even else None,
    markers=pd.DataFrame(
        {"rate": [rate], "usd_per_hour": [pools.disaggregated_gpus * price], "label": [f"{rate:,.0f}/min"]}
    ),
    width="stretch",
)
st.markdown(
    f"For this scenario disaggregation needs no more GPUs than colocation from about **{even:,.0f} requests/min** on."
    if even
    else "Within this range of rates disaggregation never needs fewer GPUs than colocation."
)
