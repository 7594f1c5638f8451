"""Layouts: which TP / EP / DP / PP / Wide-EP layout, for prefill and for decode?"""

import pandas as pd
import streamlit as st

from core import perf
from core._util.validated import describe_validation_error
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Workload
from core.hardware import ClusterSpec
from core.serving import layout as lay_mod
from core.serving.breakdown import time_per_token
from core.serving.headline import pool_headline
from core.serving.operating_point import cold_prefill, layout_label
from core.validation import calibration_note
from ui.charts import lines_chart, token_time_chart
from ui.format import md_escape
from ui.layout_check import launch_commands
from ui.layout_plans import COMMAND_ROLES, TABLE_COLUMNS, best_banner, plans_table, split_banner
from ui.render import chart
from ui.scenario import catalog, page, update_scenario
from ui.slo import queue_note, show_under_load

scenario, cat, model, gpu, d = page("Layouts", "🧩")
wl, prec = scenario.workload, scenario.precision
cluster = ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node)
search = lay_mod.search_deployment(scenario, cat, model)  # the scenario on its cluster, the layout left to the search

st.title("Layouts")
st.markdown(
    f"How should **{md_escape(model.name)}** ({prec.label}) be laid out on **{scenario.num_nodes} × {scenario.gpus_per_node} {gpu.name}** "
    f"({cluster.total_gpus:,} GPUs, scale-up domain {cluster.scale_up_domain_gpus} GPUs) for prefill and for decode? "
    "Every valid layout is scored with the step-time model (see the Validation page for its accuracy)."
)
st.caption(calibration_note(cat, gpu.id, scenario.serving_stack))
case, advice = lay_mod.decision_rule(search)
st.info(
    f"**Sources' decision table:** {case} → {advice}. A rule of thumb; the ranking below scores every layout the "
    "engines can start on this cluster."
)

c = st.columns(3)
tpot = c[0].number_input(
    "TPOT target (ms per output token)",
    5.0,
    2000.0,
    100.0,
    5.0,
    help="Decode plans use the largest batch per GPU whose step stays under this.",
)
ttft = c[1].number_input(
    "TTFT target (s)",
    0.1,
    60.0,
    3.0,
    0.1,
    help="Prefill plans use the prompt chunk per GPU with the most input tokens/s whose time to first token "
    "(the prompt chunk by chunk, through every pipeline stage) stays under this.",
)
top_n = c[2].slider("Plans shown", 3, 30, 10)
split = 0  # prefill nodes; 0: each phase searched over the whole cluster, as a pool of its own (review 3 M13)
if scenario.num_nodes > 1:
    split = st.number_input(
        "Prefill nodes (0: each phase on the whole cluster)",
        0,
        scenario.num_nodes - 1,
        0,
        1,
        key="prefill_nodes",
        help="Split the cluster: prefill plans are searched on this many nodes, decode plans on the rest (LMSYS ran "
        "DeepSeek-V3 as 4 prefill + 9 decode nodes of 8 H100). 0 searches each phase over every GPU.",
    )
nodes_of = {"prefill": split or scenario.num_nodes, "decode": scenario.num_nodes - split}
gpus_of = {ph: n * scenario.gpus_per_node for ph, n in nodes_of.items()}
search_of = {  # each phase's search on its nodes (the scenario's calibration and its stack's served step)
    ph: search.with_(cluster=ClusterSpec(gpu=gpu, num_nodes=n, gpus_per_node=scenario.gpus_per_node))
    for ph, n in nodes_of.items()
}


@st.cache_data(show_spinner="Scoring every layout…", max_entries=32)
def _plans(sc, m, phase: str, target: float):
    """``phase``'s plans for the scenario ``sc`` (its nodes: the phase's share of the cluster) on the deployment
    every page plans with (:func:`core.serving.layout.search_deployment`: calibration and served step included)."""
    c = catalog()
    w = sc.workload
    wl1 = Workload(batch=1, input_len=w.input_len, output_len=w.output_len, prefix_reuse=w.prefix_reuse)
    d1 = lay_mod.search_deployment(sc, c, m, workload=wl1)
    return lay_mod.recommend_with_rejections(d1, phase, catalog=c, target_s=target)


def _use(p) -> None:
    update_scenario(layout=ParallelLayout(**p.layout.model_dump()))


searched = {}
for phase, target in (("prefill", ttft), ("decode", tpot / 1e3)):
    sc_phase = scenario.model_copy(update={"num_nodes": nodes_of[phase], "layout": None})
    try:
        searched[phase] = _plans(sc_phase, model, phase, float(target))
    except ValueError as err:  # a limit of the search's own bookkeeping: a message, and the other phase still runs
        searched[phase] = err
tops = {ph: found[0][0] for ph, found in searched.items() if not isinstance(found, ValueError) and found[0]}
headline = pool_headline(tops["prefill"], tops["decode"], wl, cluster.total_gpus) if len(tops) == 2 else None
if split:
    headline = None  # each phase's figure is its own pool's: the split's banner says what the pair serves
    st.info(split_banner(tops.get("prefill"), tops.get("decode"), wl, nodes_of, scenario.gpus_per_node))

results = {}
for phase, found in searched.items():
    if isinstance(found, ValueError):
        st.error(
            f"The {phase} layout search could not finish on {gpus_of[phase]:,} GPUs: "
            f"{md_escape(describe_validation_error(found))}. Data-parallel replicas repeat one plan: search a smaller "
            "cluster (fewer nodes) for the plan of one replica."
        )
        results[phase] = []
        continue
    plans, rejected = found
    results[phase] = plans
    on = f" on {nodes_of[phase]:,} nodes ({gpus_of[phase]:,} GPUs)" if split else ""
    st.subheader(f"{phase.capitalize()}{on}: {len(plans)} feasible layouts of {len(plans) + len(rejected)}")
    if not plans:
        reasons = pd.Series([r for _, r in rejected]).value_counts()
        st.error(
            f"No layout works for {phase} on this cluster. Most common reasons: "
            + "; ".join(f"{r} ({n} layouts)" for r, n in reasons.head(3).items())
            + ". Add GPUs, quantise further, relax the target or shorten the workload."
        )
        continue
    best = plans[0]
    tier = [p for p in plans if p.tier == 1]
    st.success(best_banner(phase, best, headline, wl, tops.get("prefill"), split=bool(split)))
    if phase == "prefill" and wl.prefix_reuse:
        miss = cold_prefill(search_of[phase], best)
        st.warning(
            f"**If the prefix cache misses** (0% hits instead of {100 * wl.prefix_reuse:g}%: a load generator sending "
            f"random prompts, routing that scatters sessions, a cache too small), {best.label} computes whole "
            f"{wl.input_len:,}-token prompts instead of {wl.computed_prompt_tokens:,} tokens each: one prompt alone "
            f"waits {miss.lone_ttft_miss_s * 1e3:,.0f} ms for its first token instead of "
            f"{miss.lone_ttft_hit_s * 1e3:,.0f} ms, and a GPU prefills {miss.prompts_per_s_miss:,.2f} prompts/s instead "
            f"of {miss.prompts_per_s_hit:,.2f} at the same chunk. {queue_note(best, miss)}"
        )
    spread = lay_mod.error_distribution(phase, cat)
    second = sum(p.tier == 2 for p in plans)
    if len(tier) > 1 or second:
        st.info(
            f"**{len(tier)} plan{'s are' if len(tier) > 1 else ' is'} equivalent within the model's accuracy** (their "
            f"predicted throughput is within {100 * spread.median:.0f}% of the best: the step-time model's median "
            f"leave-one-out error on {spread.cases} measured {phase} steps, Validation page): "
            + ", ".join(f"{p.label}" for p in tier[:8])
            + (f" and {len(tier) - 8} more" if len(tier) > 8 else "")
            + f". **{second} more** lie within its 90th-percentile error ({100 * spread.p90:.0f}%): ranked lower, "
            "but one prediction in ten errs by more than their gap (tier 2, *not ruled out*). Choose among the first "
            "tier on what the model does not rank: KV headroom, GPUs per replica (what one failure takes down) and "
            "traffic over the network (the *why* column)."
        )
    one = lay_mod.fewest_gpus(plans)  # replicas on the fewest GPUs that hold the model: always shown (review 3 M7)
    st.dataframe(
        plans_table(plans[:top_n] + ([one] if one.rank > top_n else [])),
        hide_index=True,
        width="stretch",
        column_config=TABLE_COLUMNS,
    )
    if model.is_moe:
        st.caption(
            "Every throughput here assumes perfectly balanced expert routing: LMSYS measured its real EPLB 15.2% below "
            "simulated perfect balance on 32 × H100 (README, Balance page, which prices a measured load)."
        )
    if one.replica_gpus < best.replica_gpus:
        st.caption(
            f"Replicas on the fewest GPUs that hold the model: **{one.label}** ({one.replica_gpus} GPU"
            f"{'s' if one.replica_gpus > 1 else ''} per replica) ranks #{one.rank}, "
            f"{one.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, tier {one.tier}: {md_escape(one.reason)}."
        )
    if model.is_moe and gpus_of[phase] >= 32:
        known = [(tp_k, ep_k) for ph, tp_k, ep_k, _ in lay_mod.REFERENCE_DEPLOYMENTS if ph == phase]
        notes = []
        for tp_k, ep_k in known:
            hit = lay_mod.rank_of(plans, tp=tp_k, ep=ep_k)
            if hit:
                notes.append(
                    f"attention-DP EP{ep_k} ranks #{hit.rank} ({hit.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
                    + ("the best, " if hit is best else f"{100 * hit.below(best):.1f}% below the best, ")
                    + {1: "in the first tier", 2: "in the second tier: not ruled out"}.get(hit.tier, "below")
                    + ")"
                )
        if notes:
            st.caption(
                f"DeepSeek's and LMSYS's {phase} deployments on this model's class of cluster: "
                + "; ".join(notes)
                + "."
            )
    role, words = COMMAND_ROLES[phase]
    with st.expander(f"Launch commands for {best.label} ({words}): vLLM, SGLang, TensorRT-LLM"):
        launch_commands(best, search_of[phase], role)
    if phase == "decode":
        st.button(
            f"Use the best decode layout ({best.label}) for the scenario",
            on_click=_use,
            args=(best,),
            help="Sets it on the Fit page and in the URL.",
        )
    with st.expander(f"Rejected {phase} layouts ({len(rejected)})"):
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "layout": layout_label(lay, model.moe is None),
                        "why": r,
                    }
                    for lay, r in rejected
                ]
            ),
            hide_index=True,
            width="stretch",
        )

# ---- where the time goes in the top plans: GPU time per token, one bar per distinct plan, one chart per phase
if any(results.values()):
    st.subheader("Where the time goes in the top plans")
for phase, plans in results.items():
    if plans:
        per = "output token" if phase == "decode" else "prompt token"
        chart(
            token_time_chart,
            time_per_token(plans[:64]),
            per=per,
            title=f"{phase.capitalize()}: GPU time per {per}, {model.name} ({prec.label}) on {gpus_of[phase]:,} × "
            f"{gpu.short_name}",
            subtitle="the best plans, alike layouts as one bar; kernel time per token before overlap (1 / tokens/s "
            "per GPU once overlap is counted: the tick), largest part first",
            width="stretch",
        )

# ---- the top decode layouts under load: throughput vs interactivity, SLO percentiles and goodput
show_under_load(search_of["decode"], results, ttft, tpot / 1e3)

# ---- all-to-all vs EP size on NVLink vs the network
if model.is_moe:
    st.subheader("All-to-all time vs EP size: why EP stays inside the scale-up domain")
    eff = cat.efficiency_for(gpu.id, scenario.serving_stack)
    tokens = st.select_slider("Tokens per GPU per step", [16, 64, 128, 256, 512, 1024, 4096], 128)
    eps = [e for e in (2, 4, 8, 16, 32, 64, 72, 128, 144, 256) if model.moe.n_routed_experts % e == 0 or e in (72, 144)]
    curves = []
    for name, domain in (
        ("inside one NVLink / scale-up domain", 100_000),
        (f"{gpu.gpus_per_node} GPUs per node, network beyond", gpu.gpus_per_node),
    ):
        times = []
        for e in eps:
            # EP 72 / 144 over 256 or 384 experts run with redundant slots that make the experts divide
            slots = -model.moe.n_routed_experts % e
            lay = Deployment(
                model, gpu, ParallelLayout(attention_dp=e, ep=e), prec, eff, domain_gpus=domain, redundant_experts=slots
            )
            t = sum(
                perf.alltoall_call_s(lay, tokens, dt, "low_latency", eff["alltoall_low_latency"])
                for dt in (prec.dispatch, "bf16")
            )
            times.append(t * 1e6)
        curves.append(pd.DataFrame({"ep": eps, "us": times, "series": name}))
    data = pd.concat(curves)
    ratio = gpu.scale_up_bw_gbps / gpu.scale_out_bw_gbps
    chart(
        lines_chart,
        data,
        x="ep",
        y="us",
        series="series",
        x_title="EP size (GPUs)",
        y_title="dispatch + combine per MoE layer (µs)",
        log_y=False,
        y_format=",.0f",
        title=f"Low-latency all-to-all of {tokens} tokens per GPU: {gpu.short_name}",
        subtitle=f"scale-up {gpu.scale_up_bw_gbps:,.0f} GB/s vs scale-out {gpu.scale_out_bw_gbps:,.0f} GB/s per GPU "
        f"per direction ({ratio:.0f}× apart); fitted DeepEP factors",
        vrules=pd.DataFrame({"value": [gpu.gpus_per_node], "label": ["node boundary"]}),
        width="stretch",
    )
    st.caption(
        f"The same bytes take {ratio:.0f}× longer over the network than over the scale-up links; every GPU added "
        "beyond the domain moves a larger share of each token's top-k copies onto the slower link."
    )
