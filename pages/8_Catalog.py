"""Catalog: every model and GPU, with derived figures and the source of each entry."""

import pandas as pd
import streamlit as st

from core import memory
from core.deployment.specs import Precision
from core.hf import MAX_CONFIG_BYTES, parse_config_text, quant_preset
from core.model import params
from core.report.catalog_rows import gpu_rows, model_rows, workload_rows
from ui.controls import paste_box
from ui.format import md_escape
from ui.render import table_height
from ui.scenario import imported_models, page, register_model, update_scenario

scenario, cat, *_ = page("Catalog", "📚")

st.title("Catalog")
st.caption(
    "Models are stored as their published Hugging Face config.json and parsed by the same importer "
    "a user's own config goes through. Parameter counts are derived from the architecture and "
    "compared with each vendor's headline under its own counting convention. Click a column header to sort."
)

st.subheader("Import a Hugging Face config.json")
st.caption(
    "Upload or paste a model's config.json (and optionally its hf_quant_config.json) to plan with it on every page. "
    "It goes through the same importer as the catalog; the URL carries it, so a copied link reopens it."
)
imp = st.columns([2, 2, 1])
up = imp[0].file_uploader("config.json", type=["json"], key="cfg_upload")
pasted = paste_box(
    "…or paste it",
    MAX_CONFIG_BYTES,
    where=imp[1],
    height=140,
    key="cfg_paste",
    placeholder='{"model_type": "deepseek_v3", ...}',
)
name = imp[2].text_input("Display name", key="cfg_name", max_chars=80, placeholder="my-moe")
quant = imp[2].file_uploader("hf_quant_config.json (optional)", type=["json"], key="quant_upload")
raw = None
if up is not None:
    raw = up.getvalue()
elif pasted.strip():
    raw = pasted
if raw is not None:
    try:
        spec = register_model(raw, name=name.strip() or None)
    except ValueError as err:
        st.error(f"Could not import this config.json: {md_escape(err)}")
    else:
        preset = None
        if quant is not None:
            try:
                preset = quant_preset(parse_config_text(quant.getvalue()))
            except ValueError as err:
                st.warning(f"hf_quant_config.json ignored: {md_escape(err)}")
        e = spec.moe
        st.success(
            f"**{md_escape(spec.name)}**: {spec.architecture}, {params.total_params(spec) / 1e9:,.2f}B parameters, "
            f"{params.active_params(spec) / 1e9:,.2f}B active"
            + (
                f", {e.n_routed_experts} experts top-{e.top_k}"
                + (f" + {e.n_shared_experts} shared" if e.n_shared_experts else "")
                if e
                else ", dense"
            )
            + f"; {memory.kv_bytes_per_token(spec) / 1e3:,.1f} KB of bf16 KV cache per token."
            + (
                f" Quantisation preset: weights {preset['weights']}, routed experts {preset['routed_experts']}."
                if preset
                else ""
            )
        )
        from core.hf import implausible_values  # a value the importer accepts but no real model has

        for why in implausible_values(spec):
            st.warning(md_escape(why))

        def _use(spec=spec, preset=preset) -> None:
            s = st.session_state.scenario
            changes = {"model_id": spec.id, "layout": None}
            if preset:
                changes["precision"] = Precision(
                    weights=preset["weights"],
                    routed_experts=preset["routed_experts"] if preset["routed_experts"] != preset["weights"] else None,
                    kv_cache=s.precision.kv_cache,
                    dispatch=s.precision.dispatch,
                )
            update_scenario(**changes)

        st.button(f"Plan with {md_escape(spec.name)}", on_click=_use, type="primary")
if imported_models():
    st.caption("Imported this session: " + ", ".join(md_escape(v[0].name) for v in imported_models().values()))

st.subheader(f"Models ({len(cat.models)})")
models = pd.DataFrame(model_rows(cat))
num = st.column_config.NumberColumn
st.dataframe(
    models,
    hide_index=True,
    width="stretch",
    height=table_height(len(models)),
    column_order=[
        "name",
        "kind",
        "release_date",
        "attention",
        "layers",
        "routed_experts",
        "top_k",
        "shared_experts",
        "total_b",
        "active_b",
        "active_ratio_pct",
        "flops_per_token_g",
        "kv_elems_per_token_per_layer",
        "kv_bytes_per_token_bf16",
        "linear_state_mib_per_seq",
        "published_total_b",
        "total_error_pct",
        "published_active_b",
        "active_error_pct",
        "active_convention",
        "mtp_b",
        "vision_b",
        "tokenizer_family",
        "max_context_tokens",
        "source",
        "counts_source",
    ],
    column_config={
        "name": st.column_config.TextColumn("Model", pinned=True),
        "kind": "Kind",
        "release_date": "Released",
        "attention": "Attention",
        "layers": num("Layers", format="%d"),
        "routed_experts": num("Routed experts", format="%d"),
        "top_k": num("Top-k", format="%d"),
        "shared_experts": num("Shared experts", format="%d"),
        "total_b": num("Total params (B)", format="%.2f", help="All weights; MTP apart, vision tower included."),
        "active_b": num("Active params (B)", format="%.2f", help="Per token, under the vendor's convention."),
        "active_ratio_pct": num("Active / total (%)", format="%.1f"),
        "flops_per_token_g": num("FLOPs / token (GFLOP)", format="%.1f", help="2 × active matmul parameters."),
        "kv_elems_per_token_per_layer": num(
            "KV elements / token / layer",
            format="%d",
            help="GQA: 2 × KV heads × head dim; MLA: latent + RoPE key (576).",
        ),
        "kv_bytes_per_token_bf16": num("KV / token, bf16 (bytes)", format="%,.0f", help="All layers."),
        "published_total_b": num("Published total (B)", format="%.2f"),
        "total_error_pct": num("Total vs published (%)", format="%+.2f"),
        "published_active_b": num("Published active (B)", format="%.2f"),
        "active_error_pct": num("Active vs published (%)", format="%+.2f"),
        "active_convention": "Active counted",
        "linear_state_mib_per_seq": num("Linear-attention state per sequence (MiB)", format="%.1f"),
        "mtp_b": num("MTP module (B)", format="%.2f"),
        "vision_b": num("Vision tower (B)", format="%.3f"),
        "tokenizer_family": "Tokenizer",
        "max_context_tokens": num("Max context (tokens)", format="%,d"),
        "source": "config.json source",
        "counts_source": "Published counts source",
    },
)

st.subheader(f"GPUs ({len(cat.gpus)})")
gpus = pd.DataFrame(gpu_rows(cat))
st.dataframe(
    gpus,
    hide_index=True,
    width="stretch",
    height=table_height(len(gpus)),
    column_order=[
        "name",
        "accelerator",
        "architecture",
        "memory_type",
        "hbm_gb",
        "runtime_gb",
        "hbm_tbps",
        "bf16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "ridge_bf16_flop_per_byte",
        "ridge_fp8_flop_per_byte",
        "ridge_fp4_flop_per_byte",
        "scale_up_link",
        "scale_up_gbps",
        "scale_up_domain_gpus",
        "scale_out_link",
        "scale_out_gbps",
        "host_link",
        "host_link_gbps",
        "power_w",
        "price_usd_per_hour",
        "confidence",
        "source",
    ],
    column_config={
        "name": st.column_config.TextColumn("GPU", pinned=True),
        "accelerator": "Kind",
        "architecture": "Architecture",
        "memory_type": "Memory",
        "hbm_gb": num("Marketed memory (GB)", format="%.0f", help="The datasheet's capacity (nominal)."),
        "runtime_gb": num(
            "Runtime-visible (GB)",
            format="%.2f",
            help="What CUDA / ROCm (or the TPU / Neuron runtime) reports to the engine, the total "
            "gpu_memory_utilization multiplies: every memory budget starts from it. Source in the Sources column.",
        ),
        "hbm_tbps": num("memory bandwidth (TB/s)", format="%.2f"),
        "bf16_tflops": num("BF16 dense (TFLOPS)", format="%,.0f"),
        "fp8_tflops": num("FP8 dense (TFLOPS)", format="%,.0f"),
        "fp4_tflops": num("FP4 dense (TFLOPS)", format="%,.0f"),
        "ridge_bf16_flop_per_byte": num(
            "Ridge BF16 (FLOP/byte)", format="%.0f", help="Dense FLOP/s ÷ HBM bytes/s: below it a GEMM is memory-bound."
        ),
        "ridge_fp8_flop_per_byte": num("Ridge FP8 (FLOP/byte)", format="%.0f"),
        "ridge_fp4_flop_per_byte": num("Ridge FP4 (FLOP/byte)", format="%.0f"),
        "scale_up_link": "Scale-up link",
        "scale_up_gbps": num("Scale-up (GB/s per direction)", format="%,.0f"),
        "scale_up_domain_gpus": num("Scale-up domain (GPUs)", format="%d"),
        "scale_out_link": "Scale-out link",
        "scale_out_gbps": num("Scale-out (GB/s per direction)", format="%,.0f"),
        "host_link": st.column_config.TextColumn(
            "Host link", help="What off-GPU lookup tables in host DRAM are read over (the Fit page's host tier)."
        ),
        "host_link_gbps": num("Host link (GB/s per direction)", format="%,.0f"),
        "power_w": num("Power (W)", format="%,.0f"),
        "price_usd_per_hour": num("Default price ($/GPU-hour)", format="$%.2f"),
        "confidence": "Confidence",
        "source": "Sources",
    },
)
st.caption(
    "None = the part has no native tensor-core support for that dtype. Bandwidths are per GPU per direction; GB and TB/s are decimal."
)

st.subheader(f"Interconnects ({len(cat.interconnects)})")
links = pd.DataFrame([link.model_dump() for link in cat.interconnects.values()])
if not links.empty:
    st.dataframe(
        links[["name", "kind", "bw_gbps_per_direction", "nominal", "latency_us", "source"]],
        hide_index=True,
        width="stretch",
        column_config={
            "name": "Link",
            "kind": "Kind",
            "bw_gbps_per_direction": num("Bandwidth (GB/s per direction)", format="%,.1f"),
            "nominal": "Nominal",
            "latency_us": num("Latency (µs, assumed)", format="%.1f"),
            "source": "Source",
        },
    )

st.subheader(f"Single-box hosts ({len(cat.hosts)})")
st.dataframe(
    pd.DataFrame(
        [
            {
                "name": h.name,
                "kind": h.kind,
                "memory_gb": h.memory_gb,
                "memory_type": h.memory_type,
                "bandwidth_gbps": h.peak_bandwidth_gbps,
                "tflops": h.cpu_tflops if h.kind == "discrete" else h.igpu_tflops,
                "gpu_share": h.gpu_share,
                "pcie_gbps": h.pcie_gbps,
                "notes": h.notes,
                "sources": "; ".join(f"{k}: {v}" for k, v in h.sources.items()),
                "confidence": h.confidence,
            }
            for h in cat.hosts.values()
        ]
    ),
    hide_index=True,
    width="stretch",
    column_config={
        "name": "Host",
        "kind": "Kind",
        "memory_gb": num("Memory (GB)", format="%,.0f"),
        "memory_type": "Memory",
        "bandwidth_gbps": num("Peak bandwidth (GB/s) = bus bytes × MT/s", format="%,.1f"),
        "tflops": num("CPU / iGPU dense TFLOPS", format="%,.1f"),
        "gpu_share": num("GPU share of pool", format="%.2f"),
        "pcie_gbps": num("PCIe to GPU (GB/s)", format="%,.0f"),
        "notes": "Derivation",
        "sources": "Sources",
        "confidence": "Confidence",
    },
)
st.caption(
    "Used by the Single box page. Bandwidth is derived from the bus width and transfer rate, never typed in; "
    "published measurements to check against are in catalogs/offload_cases.yaml."
)

profiles = workload_rows()
st.subheader(f"Workload profiles ({len(profiles)})")
st.dataframe(
    pd.DataFrame(profiles),
    hide_index=True,
    width="stretch",
    height=table_height(len(profiles)),
    column_order=[
        "name",
        "input_mean",
        "output_mean",
        "prefix_reuse_pct",
        "computed_input",
        "turns",
        "input_median",
        "input_p90",
        "output_median",
        "output_p90",
        "confidence",
        "description",
        "source",
        "notes",
    ],
    column_config={
        "name": st.column_config.TextColumn("Profile", pinned=True),
        "description": "What it is",
        "input_median": num("Prompt median (tokens)", format="%,d"),
        "input_p90": num("Prompt p90 (tokens)", format="%,d"),
        "input_mean": num("Prompt mean (tokens)", format="%,d"),
        "output_median": num("Output median (tokens)", format="%,d"),
        "output_p90": num("Output p90 (tokens)", format="%,d"),
        "output_mean": num("Output mean (tokens)", format="%,d"),
        "prefix_reuse_pct": num("Prefix reuse, warm cache (%)", format="%.1f"),
        "computed_input": num("Computed per prompt (tokens)", format="%,.0f"),
        "turns": num("Requests per session", format="%.1f"),
        "confidence": "Confidence",
        "source": "Sources",
        "notes": "Derivation",
    },
)
st.caption(
    "Published traffic shapes (catalogs/workloads.yaml, each figure with its source): prompt and output tokens per "
    "request, the share of a prompt a warm prefix cache serves, requests per session. Blank: not published."
)
