"""Speculative: what does speculative decoding buy for this scenario, and when does it stop paying?"""

import numpy as np
import pandas as pd
import streamlit as st

from core import memory
from core import speculative as sd
from core.deployment.parallel import check_layout, default_layout
from core.deployment.specs import SpecDecodeConfig
from core.speculative.worked_example import CODE_ASSISTANT
from ui.charts import heatmap_chart, lines_chart, speedup_vs_alpha_chart
from ui.controls import current_layout
from ui.format import md_escape
from ui.layout_check import runnable_layout
from ui.live_scrape import show_live_scrape
from ui.measured_acceptance import measured_view, show_measured
from ui.render import chart, metric, model_errors, table_height
from ui.scenario import default_draft_id, page, update_scenario
from ui.spec_simulator import show_simulator

scenario, cat, model, gpu, d = page("Speculative", "⚡")
prec, wl = scenario.precision, scenario.workload
methods = cat.draft_methods

st.title("Speculative decoding")

# ---- the method: the scenario's, or a suggestion when speculation is off
spec = scenario.spec if scenario.spec.enabled else sd.suggested_spec(model, methods)
method = methods.get(spec.method)
alpha0, cost = sd.resolved_alpha_cost(spec, methods)
gamma = spec.num_speculative_tokens

st.markdown(
    f"What does speculative decoding buy **{md_escape(model.name)}** on **{scenario.total_gpus} × {gpu.name}**? "
    + (
        ""
        if scenario.spec.enabled
        else f"It is **off** in this scenario; the page explores **{method.name if method else spec.method}**, the usual "
        "choice for this model. Turn it on in the sidebar to count the draft in the Fit page's memory."
    )
)


def _set_spec(**changes) -> None:
    update_scenario(spec=SpecDecodeConfig(**{**spec.model_dump(), **changes}))


def _on_method() -> None:
    m = st.session_state._w_sd_page
    if m == spec.method:
        return
    dm = methods[m]
    _set_spec(
        method=m,
        num_speculative_tokens=dm.default_gamma,
        acceptance_rate=None,
        draft_cost=None,
        draft_model_id=(spec.draft_model_id or default_draft_id(cat, model.id)) if m == "draft_model" else None,
    )


def _on_params() -> None:
    _set_spec(
        acceptance_rate=round(float(st.session_state._w_alpha), 4),
        draft_cost=round(float(st.session_state._w_c), 4),
        num_speculative_tokens=int(st.session_state._w_gamma_page),
    )


available = [m for m in methods if m != "mtp" or model.num_mtp_layers]
c = st.columns([2, 1.4, 1.2, 1.2])
if available:
    c[0].selectbox(
        "Method",
        available,
        index=available.index(spec.method) if spec.method in available else 0,
        key="_w_sd_page",
        on_change=_on_method,
        format_func=lambda i: methods[i].name,
        help="Picking a method fills in its published acceptance rate, draft cost and γ.",
    )
c[1].slider(
    "Acceptance rate α (greedy)",
    0.0,
    1.0,
    float(alpha0),
    0.01,
    key="_w_alpha",
    on_change=_on_params,
    help=f"Published range for {method.name}: {method.alpha_range[0]:g}–{method.alpha_range[1]:g}" if method else None,
)
c[2].number_input(
    "Draft cost c",
    0.0,
    10.0,
    float(cost),
    0.01,
    format="%.3f",
    key="_w_c",
    on_change=_on_params,
    help="One draft forward pass relative to one target forward pass.",
)
c[3].number_input("Draft tokens per step γ", 1, 64, int(gamma), 1, key="_w_gamma_page", on_change=_on_params)

temp_c = st.columns([1, 1, 2])
temperature = temp_c[0].slider(
    "Sampling temperature",
    0.0,
    2.0,
    0.0,
    0.1,
    help="Acceptance falls with temperature (a stated assumption, editable at right).",
)
drop = temp_c[1].number_input(
    "α drop per unit of temperature",
    0.0,
    1.0,
    0.125,
    0.005,
    format="%.3f",
    help="The blog post: 10–15 points lower at T = 1 than at T = 0.",
)
alpha = sd.alpha_at_temperature(alpha0, temperature, drop)
with temp_c[2]:
    if temperature > 0:
        st.info(
            f"At temperature {temperature:g}, α = {alpha0:.2f} − {drop:g} × {temperature:g} = **{alpha:.3f}** (used below)."
        )

e_tokens = sd.expected_tokens(alpha, gamma)
s_now = sd.speedup(alpha, gamma, cost)
lay_now = runnable_layout(scenario, model)  # None after an error naming why the model cannot run it
if lay_now is None or d is None:
    st.stop()
drafting, ctx_now = cat.draft_model_for(spec), wl.decode_context_len
ds = d.with_(spec=spec, draft=drafting)  # the method the page explores (a suggestion when the scenario's is off)
with model_errors("The speedups on the published acceptance curves"):
    mv = measured_view(ds, spec.method, alpha, cost, ctx_now)
with model_errors("The speedup at batch 1"):  # the one speedup at batch 1: the step-time model's, as the batch chart's
    s_batch1 = sd.batch_speedup(ds, [1], alpha=alpha, gamma=gamma, context_len=ctx_now, draft_cost=cost).speedup[0]
g_best = mv.gamma
be = sd.break_even_alpha(gamma, cost)
by_alpha, by_gamma = sd.sensitivity(alpha, gamma, cost, d_alpha=0.05)
m = st.columns(6)
metric("Tokens per step", f"{e_tokens:.2f}", f"of γ + 1 = {gamma + 1}", help="E = (1 − α^(γ+1)) / (1 − α)", at=m[0])
metric(
    "Speedup at batch 1",
    f"{s_batch1:.2f}×",
    f"closed form E / (γc + 1) = {s_now:.2f}×",
    help="The step-time model at one sequence with its fixed step costs (the chart below); the closed form has none.",
    at=m[1],
)
metric("Ceiling (tokens/step)", "∞" if alpha >= 1 else f"{sd.ceiling(alpha):.2f}", "1 / (1 − α), any γ", at=m[2])
metric("Break-even α", "—" if not np.isfinite(be) else f"{be:.3f}", "speedup = 1 at this γ and c", at=m[3])
metric("Best γ", f"{g_best}", f"{mv.speedup:.2f}× there: {mv.note}" if g_best else "speculation does not pay", at=m[4])
metric(
    "Gain from +0.05 α",
    f"{by_alpha:+.2f}×",
    f"vs {mv.gain(gamma, by_gamma)} from +1 γ",
    help="Where to invest: a better draft (α) or more draft tokens (γ).",
    at=m[5],
)

with model_errors("The best draft length as the batch grows"):
    show_measured(mv, alpha, ds, spec.method, wl.decode_context_len, cost)

# ---- surfaces
st.subheader("Speedup surface")
alphas = sd.ALPHA_GRID
gammas = np.arange(1, 17)
surface = sd.speedup_surface(alphas, gammas, cost)
edges = [0, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, np.inf]
labels = [
    "< 1.0×",
    "1.0–1.5×",
    "1.5–2.0×",
    "2.0–2.5×",
    "2.5–3.0×",
    "3.0–4.0×",
    "4.0–5.0×",
    "5.0–6.0×",
    "6.0–8.0×",
    "8.0–12×",
    "≥ 12×",
]
aa, gg = np.meshgrid(alphas, gammas, indexing="ij")
cells = pd.DataFrame({"gamma": gg.ravel(), "alpha": aa.ravel(), "speedup": surface.ravel()})
cells["band"] = pd.cut(cells["speedup"], edges, labels=labels, right=False).astype(str)
used = [b for b in labels if b in set(cells["band"])]
best_g = sd.optimal_gamma(alphas, cost, max_gamma=16)
ridge = pd.DataFrame({"gamma": best_g, "alpha": alphas})
ridge = ridge[ridge["gamma"] >= 1]
chart(
    heatmap_chart,
    cells,
    x="gamma",
    y="alpha",
    band="band",
    band_order=used,
    x_title="draft tokens per step γ",
    y_title="acceptance rate α",
    title=f"Speedup over α × γ at c = {cost:g}",
    subtitle="orange: the best γ for each α; diamond: this configuration",
    ridge=ridge,
    marker=pd.DataFrame({"gamma": [gamma], "alpha": [round(min(max(alpha, 0.5), 1.0), 2)], "label": [f"{s_now:.2f}×"]}),
    cell_px=(50, 8),
    width="content",
)
left, right = st.columns(2)
with left:
    chart(
        speedup_vs_alpha_chart,
        sd.ALPHA_GRID,
        sd.speedup_curves(cost),
        c=cost,
        now=(alpha, s_now),
        now_label=f"{s_now:.2f}×",
        zones=sd.ACCEPTANCE_ZONES,
        height=300,
        width="stretch",
    )
with right:
    g_axis = np.arange(0, 17)
    tok = pd.concat(
        [
            pd.DataFrame({"gamma": g_axis, "tokens": sd.expected_tokens(a, g_axis), "series": f"α = {a:g}"})
            for a in sorted({0.6, 0.75, 0.9, round(alpha, 2)})
        ]
    )
    ceilings = pd.DataFrame(
        [
            {"value": sd.ceiling(a), "label": f"ceiling 1/(1−{a:g}) = {sd.ceiling(a):.1f}"}
            for a in sorted({0.6, 0.75, 0.9, round(alpha, 2)})
            if a < 1
        ]
    )
    chart(
        lines_chart,
        tok,
        x="gamma",
        y="tokens",
        series="series",
        x_title="draft tokens per step γ",
        y_title="tokens per verification step",
        log_x=False,
        log_y=False,
        y_format=".0f",
        title="Tokens per step vs γ, against the ceiling",
        hrules=ceilings,
        height=300,
        width="stretch",
    )

# ---- when it does not help
st.subheader("When it stops paying: speedup vs batch")
layout, _ = current_layout(scenario, model, scenario.gpus_per_node)
ctx = wl.decode_context_len
draft_model = cat.draft_model_for(spec)
if check_layout(model, layout, scenario.memory.redundant_experts):
    st.error("The scenario's layout does not suit this model; set it on the Fit page.")
else:
    # the target's KV cache alone (no draft model or speculative tokens), per replica
    fit = memory.max_concurrent_sequences(d.with_(spec=SpecDecodeConfig(), draft=None), ctx) // max(layout.dp, 1)
    top = int(max(2, min(4096, fit if fit > 0 else 4096)))
    batches = np.unique(np.round(np.geomspace(1, top, 40)))
    other_id = "llama-3-70b" if model.is_moe else ("mixtral-8x7b" if "mixtral-8x7b" in cat.models else None)
    rows, marks, dips = [], [], []
    targets = [(model, None, f"{model.name} (this scenario)")]  # None: the scenario's deployment as it is
    if other_id and other_id in cat.models and other_id != model.id:
        other = cat.model(other_id)
        other_layout = default_layout(other, scenario.total_gpus, scenario.gpus_per_node, scenario.precision)
        if not check_layout(other, other_layout):
            targets.append((other, other_layout, f"{other.name} ({'dense' if not other.is_moe else 'MoE'}, same GPUs)"))
    for tgt, lay, label in targets:
        with model_errors(f"The speedup vs batch of {md_escape(tgt.name)}"):
            dt = ds if lay is None else ds.with_(model=tgt, layout=lay, draft=None)  # the other: a built-in head
            r = sd.batch_speedup(dt, batches, alpha=alpha, gamma=gamma, context_len=ctx, draft_cost=cost)
        rows.append(pd.DataFrame({"batch": batches, "speedup": r.speedup, "series": label}))
        if r.crossover_batch:
            marks.append({"value": r.crossover_batch, "label": f"{tgt.name}: < 1× from {r.crossover_batch:,.0f}"})
        if not r.pays[0] and r.pays.any():
            dips.append(
                f"{md_escape(tgt.name)} is below 1× at the smallest batches: verifying γ + 1 tokens touches more experts "
                "than decoding one, and the expert weights dominate the bytes read."
            )
    chart(
        lines_chart,
        pd.concat(rows),
        x="batch",
        y="speedup",
        series="series",
        x_title="concurrent sequences (batch)",
        y_title="speedup (×)",
        log_y=False,
        y_format=".1f",
        title=f"Speculative speedup vs batch on {scenario.total_gpus} × {gpu.short_name} (α = {alpha:.2f}, γ = {gamma})",
        subtitle=f"step-time model (calibrated; fixed per-step costs included): decode over B tokens vs verification "
        f"over B × (γ + 1); context {ctx:,} tokens; MoE verification touches more experts; up to {top:,} sequences",
        hrules=pd.DataFrame({"value": [1.0], "label": ["break-even"]}),
        vrules=pd.DataFrame(marks) if marks else None,
        width="stretch",
    )
    for d in dips:
        st.info(d)
    st.caption(
        "While a step is memory-bound the extra γ tokens ride along almost free; once it is compute-bound (large batch, "
        "short context) verification costs up to γ + 1 plain steps. Long contexts keep decode bound by KV reads, "
        "which verification shares, so the crossover moves out. TTFT is unchanged: the prompt's prefill is the same."
    )

# ---- short outputs
st.subheader("Short outputs")
setup = st.number_input(
    "Set-up cost per request (target decode steps)",
    0.0,
    100.0,
    1.0,
    0.5,
    help="Drafting the prompt, building the tree: a fixed cost amortised over the output.",
)
lens = np.unique(np.round(np.geomspace(2, 4096, 40)))
chart(
    lines_chart,
    pd.DataFrame({"tokens": lens, "speedup": sd.short_output_speedup(s_now, lens, setup), "series": "whole request"}),
    x="tokens",
    y="speedup",
    series="series",
    x_title="output length (tokens)",
    y_title="speedup (×)",
    log_y=False,
    y_format=".1f",
    title=f"Speedup over a whole output: step speedup {s_now:.2f}×, set-up {setup:g} steps",
    subtitle="(L − 1) / (set-up + (L − 1) / S): the first token comes from the prefill either way",
    hrules=pd.DataFrame({"value": [s_now], "label": [f"per-step {s_now:.2f}×"]}),
    markers=pd.DataFrame(
        {
            "tokens": [wl.output_len],
            "speedup": [sd.short_output_speedup(s_now, wl.output_len, setup)],
            "label": [f"{wl.output_len:,} tokens"],
        }
    ),
    height=260,
    width="stretch",
)

# ---- the worked example preset
ce = CODE_ASSISTANT
c_label = f"{ce.draft_weight_gb:g}/{ce.target_weight_gb:g}"
st.subheader("Worked example: a code assistant")
ex = st.columns(4)
code_share = ex[0].slider("Code share of traffic", 0.0, 1.0, ce.code_share, 0.05)
a_code = ex[1].slider("α on code", 0.0, 1.0, ce.alpha_code, 0.01)
a_chat = ex[2].slider("α on chat", 0.0, 1.0, ce.alpha_chat, 0.01)
blend = sd.blended_alpha([code_share, 1 - code_share], [a_code, a_chat])
metric(
    "Blended α",
    f"{blend:.3f}",
    f"{sd.expected_tokens(blend, ce.gamma):.2f} tokens/step, {sd.speedup(blend, ce.gamma, ce.draft_cost):.2f}× at "
    f"γ {ce.gamma}, c {c_label}",
    at=ex[3],
)
st.button(
    f"Load this example as the scenario ({cat.models[ce.model_id].name} + {cat.models[ce.draft_model_id].name} draft "
    f"on {ce.gpus} × {cat.gpus[ce.gpu_id].short_name}, γ {ce.gamma}, c = {c_label})",
    on_click=update_scenario,
    kwargs=ce.changes(scenario, blend),
)

# ---- simulator (on request)
show_simulator(gamma)

# ---- live metrics from a running server
show_live_scrape(gamma, alpha, cost)

# ---- method catalog
st.subheader("Draft methods")
table = pd.DataFrame(
    [
        {
            "method": d.name,
            "α range": f"{d.alpha_range[0]:g}–{d.alpha_range[1]:g}",
            "default c": d.draft_cost_c,
            "typical speedup": f"{d.typical_speedup[0]:g}–{d.typical_speedup[1]:g}×",
            "memory": d.memory_overhead,
            "vLLM": d.engines.get("vllm") or "—",
            "SGLang": d.engines.get("sglang") or "—",
            "TensorRT-LLM": d.engines.get("tensorrt_llm") or "—",
            "llama.cpp": d.engines.get("llama_cpp") or "—",
            "sources": "; ".join(d.sources),
        }
        for d in methods.values()
    ]
)
if len(table):
    st.dataframe(table, hide_index=True, width="stretch", height=table_height(len(table)))
if draft_model is not None and draft_model.tokenizer_family != model.tokenizer_family:
    st.error(
        f"{md_escape(draft_model.name)} does not share {md_escape(model.name)}'s tokenizer: speculative decoding would corrupt the output."
    )
