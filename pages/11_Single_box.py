"""Single box: routed experts in host RAM beside PCIe GPUs (llama.cpp --n-cpu-moe), or one unified pool (Apple
M-series, Strix Halo, DGX Spark). Where does each tensor go, does it fit, and how fast does it decode?"""

import pandas as pd
import streamlit as st

from core.deployment.specs import Precision, SingleBox
from core.memory import WEIGHT_FORMATS
from core.model.dtypes import DTYPES, GGUF_DTYPES
from core.single_box import cases, offload, options
from core.single_box.box import Box
from ui.charts import lines_chart, placement_chart, pool_bars_chart
from ui.controls import on_single_box_change, single_box_gpus
from ui.format import md_escape
from ui.host_tables import single_box_tables_note
from ui.render import chart, metric
from ui.scenario import page

scenario, cat, model, _, d = page("Single box", "🖥️")
box = scenario.box or SingleBox()
GB = 1e9

st.title("Single box")
st.markdown(
    f"Can **{md_escape(model.name)}** run on one machine, with its routed experts in host RAM (llama.cpp "
    "`--n-cpu-moe`, ktransformers) or in one unified-memory pool, and how fast does it decode at batch 1?"
)
if not model.is_moe:
    st.info(
        f"{md_escape(model.name)} is a dense model: expert offload does not apply. Pick an MoE model in the sidebar "
        "(the Fit page sizes dense models)."
    )
    st.stop()

hosts = dict(cat.hosts)
box_gpus = single_box_gpus(cat)
quants = [d for d in DTYPES if d != "fp32"]


host = hosts.get(box.host_id) or hosts[SingleBox().host_id]
c = st.columns([3, 2, 1, 2, 2])
c[0].selectbox(
    "Host",
    list(hosts),
    index=list(hosts).index(host.id),
    format_func=lambda i: hosts[i].name,
    key="_w_box_host",
    on_change=on_single_box_change,
    help="CPU hosts keep routed experts in DDR5 beside a PCIe GPU; unified machines share one pool.",
)
if host.kind == "discrete":
    gid = box.gpu_id if box.gpu_id in box_gpus else box_gpus[0]
    c[1].selectbox(
        "GPU",
        box_gpus,
        index=box_gpus.index(gid),
        format_func=lambda i: cat.gpus[i].name,
        key="_w_box_gpu",
        on_change=on_single_box_change,
    )
    c[2].selectbox(
        "GPUs",
        [1, 2, 3, 4],
        index=box.n_gpus - 1,
        key="_w_box_n",
        on_change=on_single_box_change,
        help="More cards split the layers (llama.cpp -sm layer): more memory, not more bandwidth per token.",
    )
else:
    c[1].text_input("GPU", "integrated (unified pool)", disabled=True, max_chars=40)
    c[2].text_input("GPUs", "—", disabled=True, max_chars=40)
c[3].selectbox(
    "Quantisation",
    quants,
    index=quants.index(box.quant) if box.quant in quants else quants.index("q4_k_m"),
    key="_w_box_q",
    on_change=on_single_box_change,
    help="GGUF types (llama.cpp) with their bits per weight from the block layouts; the expander below lists them.",
)
c[4].number_input(
    "Context (tokens)",
    min_value=1,
    max_value=min(10_000_000, model.max_position_embeddings),
    value=min(box.context_len, model.max_position_embeddings),
    step=1024,
    key="_w_box_ctx",
    on_change=on_single_box_change,
    help=f"KV cache for one sequence of this many tokens (the model allows {model.max_position_embeddings:,}).",
)

prec = Precision(weights=box.quant, kv_cache=scenario.precision.kv_cache)
gpu = (
    cat.gpus[box.gpu_id]
    if (host.kind == "discrete" and box.gpu_id in cat.gpus)
    else (cat.gpus[box_gpus[0]] if host.kind == "discrete" else None)
)
ctx, n_gpus = min(box.context_len, model.max_position_embeddings), (box.n_gpus if gpu is not None else 1)
sbox = Box(model, host, gpu, n_gpus, prec, ctx)  # the box, resolved once
best = offload.best_n_cpu_moe(sbox) if sbox.discrete else None

if gpu is not None:
    cc = st.columns([1, 3])
    auto = cc[0].toggle(
        "Best --n-cpu-moe",
        value=box.n_cpu_moe is None,
        key="_w_box_auto",
        on_change=on_single_box_change,
        help="The fewest leading layers with experts on the host that still fit the GPU: the fastest that fits.",
    )
    if not auto:
        cc[1].slider(
            "--n-cpu-moe (leading layers whose routed experts stay in host RAM)",
            0,
            model.num_layers,
            value=min(box.n_cpu_moe if box.n_cpu_moe is not None else (best or model.num_layers), model.num_layers),
            key="_w_box_ncm",
            on_change=on_single_box_change,
        )
    n_cpu_moe = None if auto else box.n_cpu_moe
else:
    n_cpu_moe = None

pl = offload.placement(sbox, n_cpu_moe)
weights_total = offload.text_weights_bytes(model, prec)

if pl.fits:
    st.success(
        f"**Fits.** {pl.decode_tokens_per_s:,.1f} tokens/s decode at batch 1, "
        f"{pl.prefill_tokens_per_s:,.0f} tokens/s prompt processing ({WEIGHT_FORMATS[box.quant].bits_per_weight:.3g} "
        f"bits per weight, {weights_total / GB:,.0f} GB of weights)."
    )
else:
    st.error(
        f"**{pl.status[0].upper() + pl.status[1:]}.** The speeds below are what this placement would "
        "run at if the memory were there."
    )

m = st.columns(5)
metric("Weights", f"{weights_total / GB:,.0f} GB", f"{box.quant}, text model", at=m[0])
pool = "GPU" if pl.kind == "discrete" else "GPU share"
metric(f"{pool} memory used", f"{pl.gpu_total_bytes / GB:,.1f} GB", f"of {pl.gpu_capacity_bytes / GB:,.1f} GB", at=m[1])
if pl.kind == "discrete":
    metric("Host RAM used", f"{pl.host_total_bytes / GB:,.1f} GB", f"of {pl.host_capacity_bytes / GB:,.0f} GB", at=m[2])
else:
    metric("Pool bandwidth", f"{host.peak_bandwidth_gbps:,.0f} GB/s", "peak, bus × MT/s", at=m[2])
metric("Decode", f"{pl.decode_tokens_per_s:,.1f} tok/s", f"{pl.decode_s_per_token * 1e3:,.0f} ms/token", at=m[3])
metric(
    "Prompt processing", f"{pl.prefill_tokens_per_s:,.0f} tok/s", pl.prefill_path[:38], help=pl.prefill_path, at=m[4]
)
st.caption(
    (
        f"`--n-cpu-moe {pl.n_cpu_moe}`: routed experts of {pl.offloaded_layers} of {model.num_moe_layers} MoE layers "
        f"in host RAM ({host.peak_bandwidth_gbps:,.1f} GB/s peak), the rest on {n_gpus} × {gpu.name} "
        f"({gpu.hbm_bandwidth_gbps:,.0f} GB/s). Per token: {pl.decode_gpu_s * 1e3:,.1f} ms on the GPU side + "
        f"{pl.decode_host_s * 1e3:,.1f} ms on the host side. "
        if pl.kind == "discrete"
        else f"One pool of {host.memory_gb:,.0f} GB at {host.peak_bandwidth_gbps:,.0f} GB/s. "
    )
    + " · ".join(pl.notes)
)
single_box_tables_note(model, host)

left, right = st.columns(2)
with left:
    cells = pd.DataFrame(offload.layer_map(model, pl))
    chart(
        placement_chart,
        cells,
        title=f"Where {model.name}'s tensors live",
        subtitle=(f"{host.name} + {n_gpus} × {gpu.name}, --n-cpu-moe {pl.n_cpu_moe}" if gpu else host.name),
        width="stretch",
    )
with right:
    rows = []
    if pl.kind == "discrete":
        gpu_pool, host_pool = f"{n_gpus} × {gpu.name.replace('NVIDIA GeForce ', '')}", "host RAM"
        rows += [
            {"pool": gpu_pool, "part": "non-expert weights", "gb": pl.gpu_non_routed_bytes / GB, "order": 0},
            {"pool": gpu_pool, "part": "routed experts", "gb": pl.gpu_routed_bytes / GB, "order": 1},
            {"pool": gpu_pool, "part": "KV cache", "gb": pl.gpu_kv_bytes / GB, "order": 2},
            {"pool": gpu_pool, "part": "compute buffer / OS", "gb": pl.gpu_buffer_bytes / GB, "order": 3},
            {"pool": host_pool, "part": "routed experts", "gb": pl.host_weights_bytes / GB, "order": 1},
            {"pool": host_pool, "part": "compute buffer / OS", "gb": pl.host_reserve_bytes / GB, "order": 3},
        ]
        caps = {gpu_pool: pl.gpu_capacity_bytes / GB, host_pool: pl.host_capacity_bytes / GB}
    else:
        gpu_pool = f"GPU share ({host.gpu_share:.0%})"
        rows += [
            {"pool": gpu_pool, "part": "weights", "gb": pl.gpu_weights_bytes / GB, "order": 0},
            {"pool": gpu_pool, "part": "KV cache", "gb": pl.gpu_kv_bytes / GB, "order": 2},
            {"pool": gpu_pool, "part": "compute buffer / OS", "gb": pl.gpu_buffer_bytes / GB, "order": 3},
        ]
        caps = {gpu_pool: pl.gpu_capacity_bytes / GB}
    df = pd.DataFrame(rows)
    df["capacity_gb"] = df["pool"].map(caps)
    chart(
        pool_bars_chart,
        df,
        title="Memory per pool",
        subtitle=f"{box.quant}, {ctx:,}-token context, batch 1",
        width="stretch",
    )

if pl.kind == "discrete":
    sweep = options.speed_vs_offload(sbox)
    data = pd.DataFrame(
        [
            {
                "layers": p.offloaded_layers,
                "tokens_per_s": p.decode_tokens_per_s,
                "series": "decode (tokens/s)",
                "fits": p.fits,
            }
            for p in sweep
        ]
    )
    fit_from = next((p.offloaded_layers for p in sweep if p.fits_gpu), None)
    bands = (
        pd.DataFrame({"start": [fit_from], "end": [model.num_moe_layers], "label": ["fits the GPU"]})
        if fit_from is not None
        else None
    )
    markers = pd.DataFrame(
        {
            "layers": [pl.offloaded_layers],
            "tokens_per_s": [pl.decode_tokens_per_s],
            "label": [f"{pl.decode_tokens_per_s:,.1f} tok/s at --n-cpu-moe {pl.n_cpu_moe}"],
        }
    )
    chart(
        lines_chart,
        data,
        x="layers",
        y="tokens_per_s",
        series="series",
        x_title="MoE layers with routed experts in host RAM",
        y_title="decode tokens/s (batch 1)",
        title="Decode speed vs experts offloaded",
        subtitle=f"{model.name}, {box.quant}, {host.name} + {n_gpus} × {gpu.name}",
        log_x=False,
        log_y=False,
        bands=bands,
        markers=markers,
        y_format=",.1f",
        width="stretch",
    )

    ups = options.upgrades(sbox, hosts, n_cpu_moe)
    if ups:
        st.subheader("What an upgrade buys")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "change": u["change"],
                        "decode (tok/s)": u["placement"].decode_tokens_per_s,
                        "speed-up": u["decode_speedup"],
                        "--n-cpu-moe": u["placement"].n_cpu_moe,
                        "status": u["placement"].status,
                    }
                    for u in ups
                ]
            ),
            hide_index=True,
            width="stretch",
            column_config={
                "decode (tok/s)": st.column_config.NumberColumn(format="%.1f"),
                "speed-up": st.column_config.NumberColumn(format="%.2f×"),
            },
        )
        st.caption(
            "Decode is bound by host bandwidth once most experts are in RAM: more memory channels pay almost "
            "linearly, a second GPU only moves a few more layers' experts off the host."
        )

st.subheader(f"Every single-box option for {md_escape(model.name)} at {box.quant}")
opts = options.single_box_options(sbox, list(hosts.values()), dict(cat.gpus))
table = pd.DataFrame(
    [
        {
            "host": p.host_id,
            "GPU": "integrated"
            if p.gpu_id is None
            else f"{p.n_gpus} × {cat.gpus[p.gpu_id].name.replace('NVIDIA GeForce ', '')}",
            "decode (tok/s)": f"{p.decode_tokens_per_s:,.1f}" if p.fits else "—",
            "prompt (tok/s)": f"{p.prefill_tokens_per_s:,.0f}" if p.fits else "—",
            "memory": p.short_status,
            "--n-cpu-moe": p.n_cpu_moe if p.kind == "discrete" else 0,
            "GPU used / total (GB)": f"{p.gpu_total_bytes / GB:,.1f} / {p.gpu_capacity_bytes / GB:,.1f}",
            "host RAM used / total (GB)": (
                f"{p.host_total_bytes / GB:,.0f} / {p.host_capacity_bytes / GB:,.0f}" if p.kind == "discrete" else "—"
            ),
        }
        for p in opts
    ]
)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config={
        "host": st.column_config.TextColumn(width="medium"),
        "--n-cpu-moe": st.column_config.NumberColumn(format="%d"),
    },
)
st.caption(
    "Decode and prompt speeds show — where the setup does not fit (memory: which side is short, by how much; --n-cpu-moe 0 on unified machines: nothing is offloaded). Unified machines "
    "use the GPU share macOS / the driver grants by default; Apple's can be raised with "
    "`sysctl iogpu.wired_limit_mb`."
)

st.subheader("Against published measurements")
val = cases.validate_cases(cat.offload_cases, {**dict(cat.models)}, hosts, dict(cat.gpus))
st.dataframe(
    pd.DataFrame(
        [
            {
                "case": r["case"],
                "role": r["role"],
                "decode: model (tok/s)": r["decode_tokens_per_s"][0],
                "measured (tok/s)": r["decode_tokens_per_s"][1],
                "error": r["decode_tokens_per_s"][2],
                "prompt: model (tok/s)": r["prefill_tokens_per_s"][0],
                "measured  (tok/s)": r["prefill_tokens_per_s"][1],
                "error ": r["prefill_tokens_per_s"][2],
            }
            for r in val
        ]
    ),
    hide_index=True,
    width="stretch",
    column_config={
        **{
            c: st.column_config.NumberColumn(format="%.1f")
            for c in ("decode: model (tok/s)", "measured (tok/s)", "prompt: model (tok/s)", "measured  (tok/s)")
        },
        "error": st.column_config.NumberColumn(format="percent"),
        "error ": st.column_config.NumberColumn(format="percent"),
    },
)
st.caption(
    "The single-socket case sets the host-bandwidth efficiency (0.40 of peak); dual-socket cases are predictions, "
    "15-27% high as two NUMA nodes do not give one token's experts twice the bandwidth. Sources: offload_cases.yaml."
)

with st.expander("Assumptions and GGUF types"):
    eff = sbox.eff  # the box's factors (the shipped ones)
    st.markdown(
        f"- Achieved fraction of peak bandwidth: GPU {eff.gpu_bandwidth:.0%}, host DDR5 {eff.host_bandwidth:.0%} "
        f"(fitted, see above), unified pool {eff.unified_bandwidth:.0%} (assumption).\n"
        f"- Compute efficiency for prompt processing: CPU {eff.cpu_compute:.0%}, GPU {eff.gpu_compute:.0%}; PCIe "
        f"{eff.pcie:.0%} of its link; llama.cpp micro-batch {eff.ubatch_tokens} tokens.\n"
        f"- Reserved: {eff.compute_buffer_gb:g} GB per GPU (compute buffer), {eff.host_reserve_gb:g} GB of host RAM (OS).\n"
        "- Embeddings, LM head, router and norms are counted in bf16; the attention V and output tensors that "
        "llama.cpp's _M mixes raise to Q6_K are not.\n"
        "- Attention FLOPs and the KV read of prompt processing are not modelled (short prompts)."
    )
    st.dataframe(
        pd.DataFrame(
            [
                {"type": d, "bits per weight": WEIGHT_FORMATS[d].bits_per_weight, "layout": WEIGHT_FORMATS[d].scales}
                for d in GGUF_DTYPES
            ]
        ),
        hide_index=True,
        width="stretch",
        column_config={"bits per weight": st.column_config.NumberColumn(format="%.4f")},
    )
    st.markdown("Hosts: " + "; ".join(f"**{h.name}**: {h.notes}" for h in hosts.values()))
