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
from ui.render import number_columns, table_height
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
model_columns = number_columns(
    {
        "name": "Model",
        "kind": "Kind",
        "release_date": "Released",
        "attention": "Attention",
        "layers": ("Layers", "%d"),
        "routed_experts": ("Routed experts", "%d"),
        "top_k": ("Top-k", "%d"),
        "shared_experts": ("Shared experts", "%d"),
        "total_b": ("Total params (B)", "%.2f", "All weights; MTP apart, vision tower included."),
        "active_b": ("Active params (B)", "%.2f", "Per token, under the vendor's convention."),
        "active_ratio_pct": ("Active / total (%)", "%.1f"),
        "flops_per_token_g": ("FLOPs / token (GFLOP)", "%.1f", "2 × active matmul parameters."),
        "kv_elems_per_token_per_layer": (
            "KV elements / token / layer",
            "%d",
            "GQA: 2 × KV heads × head dim; MLA: latent + RoPE key (576).",
        ),
        "kv_bytes_per_token_bf16": ("KV / token, bf16 (bytes)", "%,.0f", "All layers."),
        "linear_state_mib_per_seq": ("Linear-attention state per sequence (MiB)", "%.1f"),
        "published_total_b": ("Published total (B)", "%.2f"),
        "total_error_pct": ("Total vs published (%)", "%+.2f"),
        "published_active_b": ("Published active (B)", "%.2f"),
        "active_error_pct": ("Active vs published (%)", "%+.2f"),
        "active_convention": "Active counted",
        "mtp_b": ("MTP module (B)", "%.2f"),
        "vision_b": ("Vision tower (B)", "%.3f"),
        "tokenizer_family": "Tokenizer",
        "max_context_tokens": ("Max context (tokens)", "%,d"),
        "source": "config.json source",
        "counts_source": "Published counts source",
    },
    pin_first=True,
)
st.dataframe(
    models,
    hide_index=True,
    width="stretch",
    height=table_height(len(models)),
    column_order=list(model_columns),
    column_config=model_columns,
)

st.subheader(f"GPUs ({len(cat.gpus)})")
gpus = pd.DataFrame(gpu_rows(cat))
gpu_columns = number_columns(
    {
        "name": "GPU",
        "accelerator": "Kind",
        "architecture": "Architecture",
        "memory_type": "Memory",
        "hbm_gb": ("Marketed memory (GB)", "%.0f", "The datasheet's capacity (nominal)."),
        "runtime_gb": (
            "Runtime-visible (GB)",
            "%.2f",
            "What CUDA / ROCm (or the TPU / Neuron runtime) reports to the engine, the total "
            "gpu_memory_utilization multiplies: every memory budget starts from it. Source in the Sources column.",
        ),
        "hbm_tbps": ("memory bandwidth (TB/s)", "%.2f"),
        "bf16_tflops": ("BF16 dense (TFLOPS)", "%,.0f"),
        "fp8_tflops": ("FP8 dense (TFLOPS)", "%,.0f"),
        "fp4_tflops": ("FP4 dense (TFLOPS)", "%,.0f"),
        "ridge_bf16_flop_per_byte": (
            "Ridge BF16 (FLOP/byte)",
            "%.0f",
            "Dense FLOP/s ÷ HBM bytes/s: below it a GEMM is memory-bound.",
        ),
        "ridge_fp8_flop_per_byte": ("Ridge FP8 (FLOP/byte)", "%.0f"),
        "ridge_fp4_flop_per_byte": ("Ridge FP4 (FLOP/byte)", "%.0f"),
        "scale_up_link": "Scale-up link",
        "scale_up_gbps": ("Scale-up (GB/s per direction)", "%,.0f"),
        "scale_up_domain_gpus": ("Scale-up domain (GPUs)", "%d"),
        "scale_out_link": "Scale-out link",
        "scale_out_gbps": ("Scale-out (GB/s per direction)", "%,.0f"),
        "host_link": (
            "Host link",
            None,
            "What off-GPU lookup tables in host DRAM are read over (the Fit page's host tier).",
        ),
        "host_link_gbps": ("Host link (GB/s per direction)", "%,.0f"),
        "power_w": ("Power (W)", "%,.0f"),
        "price_usd_per_hour": ("Default price ($/GPU-hour)", "$%.2f"),
        "confidence": "Confidence",
        "source": "Sources",
    },
    pin_first=True,
)
st.dataframe(
    gpus,
    hide_index=True,
    width="stretch",
    height=table_height(len(gpus)),
    column_order=list(gpu_columns),
    column_config=gpu_columns,
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
        column_config=number_columns(
            {
                "name": "Link",
                "kind": "Kind",
                "bw_gbps_per_direction": ("Bandwidth (GB/s per direction)", "%,.1f"),
                "nominal": "Nominal",
                "latency_us": ("Latency (µs, assumed)", "%.1f"),
                "source": "Source",
            }
        ),
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
    column_config=number_columns(
        {
            "name": "Host",
            "kind": "Kind",
            "memory_gb": ("Memory (GB)", "%,.0f"),
            "memory_type": "Memory",
            "bandwidth_gbps": ("Peak bandwidth (GB/s) = bus bytes × MT/s", "%,.1f"),
            "tflops": ("CPU / iGPU dense TFLOPS", "%,.1f"),
            "gpu_share": ("GPU share of pool", "%.2f"),
            "pcie_gbps": ("PCIe to GPU (GB/s)", "%,.0f"),
            "notes": "Derivation",
            "sources": "Sources",
            "confidence": "Confidence",
        }
    ),
)
st.caption(
    "Used by the Single box page. Bandwidth is derived from the bus width and transfer rate, never typed in; "
    "published measurements to check against are in catalogs/offload_cases.yaml."
)

profiles = workload_rows()
st.subheader(f"Workload profiles ({len(profiles)})")
profile_columns = number_columns(
    {
        "name": "Profile",
        "input_mean": ("Prompt mean (tokens)", "%,d"),
        "output_mean": ("Output mean (tokens)", "%,d"),
        "prefix_reuse_pct": ("Prefix reuse, warm cache (%)", "%.1f"),
        "computed_input": ("Computed per prompt (tokens)", "%,.0f"),
        "turns": ("Requests per session", "%.1f"),
        "input_median": ("Prompt median (tokens)", "%,d"),
        "input_p90": ("Prompt p90 (tokens)", "%,d"),
        "output_median": ("Output median (tokens)", "%,d"),
        "output_p90": ("Output p90 (tokens)", "%,d"),
        "confidence": "Confidence",
        "description": "What it is",
        "source": "Sources",
        "notes": "Derivation",
    },
    pin_first=True,
)
st.dataframe(
    pd.DataFrame(profiles),
    hide_index=True,
    width="stretch",
    height=table_height(len(profiles)),
    column_order=list(profile_columns),
    column_config=profile_columns,
)
st.caption(
    "Published traffic shapes (catalogs/workloads.yaml, each figure with its source): prompt and output tokens per "
    "request, the share of a prompt a warm prefix cache serves, requests per session. Blank: not published."
)
