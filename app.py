"""Home: the scenario at a glance and a link to every page."""

from pathlib import Path

import streamlit as st

from core import memory
from core.deployment.bundle import Deployment
from core.hardware import ClusterSpec
from core.model import params
from core.scenario import resolved_layout
from ui.format import bytes_h, md_escape, params_h
from ui.render import metric
from ui.scenario import PAGES, page

PAGE_QUESTIONS = {
    "Fit": "does it fit, where does the memory go, how many sequences can it hold?",
    "Intensity": "is each expert GEMM memory- or compute-bound?",
    "Balance": "how bad is expert-load imbalance, and what does EPLB recover?",
    "Speculative": "what does speculative decoding buy here?",
    "Layouts": "which TP / EP / DP / PP / Wide-EP layout for prefill and for decode?",
    "Validation": "how close is the step-time model to published measurements?",
    "Disaggregation & cost": "prefill/decode pool sizes and $ per million tokens",
    "Single box": "on one machine: experts in host RAM (llama.cpp --n-cpu-moe) or a unified pool; fit and tokens/s",
    "Catalog": "every model and GPU with derived figures and sources; import your own config.json",
    "Compare & saved": "save scenarios, reopen them, compare two to four side by side",
    "Report": "everything above for this scenario as one HTML or Markdown document",
}

scenario, cat, model, gpu, d = page("Home", "🧮")
wl, prec = scenario.workload, scenario.precision

st.title("MoE Deployment Planner")
st.markdown(
    f"**{md_escape(model.name)}** on **{scenario.num_nodes} × {scenario.gpus_per_node} {gpu.name}** "
    f"({scenario.total_gpus:,} GPUs) · weights {prec.label} · "
    f"{wl.batch:,} sequences × ({wl.input_len:,} in + {wl.output_len:,} out) tokens"
)

total = params.total_params(model)
active = params.active_params(model)
kv_tok = memory.kv_bytes_per_token(model, prec.kv_cache)
c = st.columns(5)
metric(
    "Total parameters",
    params_h(total),
    help="All weights of the main model (MTP module apart; vision tower included).",
    at=c[0],
)
metric(
    "Active per token",
    params_h(active),
    f"{100 * active / params.total_params(model, include_vision=False):.1f}% of total",
    help=f"Counted as the vendor counts ({model.published.active_convention.replace('_', ' ')}).",
    at=c[1],
)
metric(
    "FLOPs per token",
    f"{params.flops_per_token(model) / 1e9:,.1f} GFLOP",
    help="2 × active matmul parameters (forward).",
    at=c[2],
)
metric(
    f"KV cache per token ({prec.kv_cache})",
    bytes_h(kv_tok),
    f"{bytes_h(memory.kv_bytes_per_sequence(model, wl.context_len, prec.kv_cache) / wl.context_len)} "
    f"per token at {wl.context_len:,}",
    help=memory.kv_per_token_note(model, prec.kv_cache),
    at=c[3],
)
cluster = ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node)
metric(
    f"Cluster memory ({gpu.memory_type})",
    f"{cluster.memory_gb:,.0f} GB",
    f"{gpu.memory_gb:,.1f} GB × {scenario.total_gpus:,}",
    help=f"Device memory as the runtime reports it, what every budget here divides; the datasheet says "
    f"{gpu.hbm_capacity_gb:g} GB per GPU ({cluster.hbm_total_gb:,.0f} GB over the cluster).",
    at=c[4],
)

layout = resolved_layout(scenario, model)
try:
    # d is None where the model cannot run the scenario's layout: building that deployment raises, naming why
    fit = memory.per_gpu_memory(d or Deployment(model, gpu, layout, prec, assumptions=scenario.memory))
except ValueError as e:
    st.error(f"Fit: {md_escape(e)}")
else:
    verdict = {
        "fits": "fits",
        "kv_short": "the weights fit, the workload's KV cache does not",
        "weights_short": "does not fit",
    }[fit.status]
    {"fits": st.success, "kv_short": st.warning, "weights_short": st.error}[fit.status](
        f"**Fit: {verdict}** with TP {layout.attention_tp} / EP {layout.ep} / PP {layout.pp}: "
        f"{fit.total_bytes / 1e9:,.1f} GB used of {fit.usable_bytes / 1e9:,.1f} GB usable per GPU "
        f"({fit.capacity_bytes / 1e9:,.1f} GB device). The Fit page has the breakdown."
    )

left, right = st.columns(2)
with left:
    st.subheader("Model")
    e = model.moe
    arch = (
        f"{e.n_routed_experts} routed experts, top-{e.top_k}"
        + (f", {e.n_shared_experts} shared" if e.n_shared_experts else "")
        + f" · {model.num_moe_layers} MoE + {model.num_dense_layers} dense layers"
        if e
        else f"dense · {model.num_layers} layers"
    )
    st.markdown(
        f"- {arch}\n"
        "- layers: "
        + "; ".join(f"{len(g.layers)} × {g.mixer.describe()}" for g in model.mixers)
        + f"\n- hidden {model.hidden_size:,} · vocab {model.vocab_size:,} · context up to {model.max_position_embeddings:,} tokens"
        + (
            f"\n- MTP module: {model.num_mtp_layers} layer ({params_h(params.mtp_params(model))}), usable as a built-in draft"
            if model.num_mtp_layers
            else ""
        )
    )
    with st.expander("Sources"):
        st.markdown(f"- config.json: {model.source}\n- published counts: {model.published.source}")
with right:
    st.subheader("GPU")
    tf = " · ".join(f"{k} {v:,.0f}" for k, v in gpu.dense_tflops.items())
    st.markdown(
        f"- {gpu.hbm_capacity_gb:g} GB {gpu.memory_type} at {gpu.hbm_bandwidth_gbps / 1000:.2f} TB/s\n"
        f"- dense TFLOPS: {tf}\n"
        f"- ridge point (bf16): {gpu.ridge_point_flop_per_byte('bf16' if gpu.supports('bf16') else 'fp16'):,.0f} FLOP/byte\n"
        f"- scale-up {gpu.scale_up_bw_gbps:,.0f} GB/s per direction ({gpu.scale_up_link}, domain {gpu.scale_up_domain_gpus} GPUs) · "
        f"scale-out {gpu.scale_out_bw_gbps:,.0f} GB/s ({gpu.scale_out_link})"
    )
    with st.expander("Sources"):
        st.markdown("\n".join(f"- {k}: {v}" for k, v in gpu.sources.items()))

st.subheader("Pages")
for path, label in PAGES[1:]:
    if (Path(__file__).parent / path).is_file():
        st.page_link(path, label=f"{label}: {PAGE_QUESTIONS[label]}", query_params=st.query_params.to_dict())
st.caption(
    "Change the scenario in the sidebar: every page uses it, and the URL carries it, so a copied link "
    "reopens the same scenario."
)
