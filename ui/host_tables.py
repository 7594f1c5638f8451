"""Off-GPU lookup tables (Engram, n-gram embeddings) on the Fit and Single box pages: where each tier keeps them,
what that costs in memory, and what reading them costs a decode step and a prefill chunk (:mod:`core.memory.host_tables`,
the same call the step-time model makes). The tables are read through the model's extras (:mod:`core.model.extras`:
what they store, the rows their lookups read), never by kind."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import perf
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.hardware import GPUSpec
from core.memory import host_tables
from core.model import ModelSpec
from ui.format import md_escape

__all__ = ["host_tables_frame", "show_host_tables", "single_box_tables_note"]


@st.cache_data(show_spinner=False, max_entries=64)
def host_tables_frame(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision,
    eff,
    batch: int,
    chunk: int,
    ctx: int,
    hbm_free_bytes_per_gpu: float | None = None,
) -> pd.DataFrame:
    """One row per tier: where the tables live, the memory they take, and the exposed read time of a decode step of
    ``batch`` sequences and of a ``chunk``-token prefill step on the busiest GPU. The GPU tier, when its share of the
    tables is more than ``hbm_free_bytes_per_gpu`` (the HBM left beside the weights, activations and reserve), is
    "gpu: does not fit" with no times (they would time a placement that cannot exist)."""
    rows = []
    # tokens per GPU as the step-time model counts them (core.serving.operating_point): a decode batch over a stage's GPUs
    # and the replicas; a prefill chunk over its attention-TP group
    per_gpu = {"decode": batch / (layout.gpus_per_stage * layout.dp), "prefill": chunk / layout.attention_tp}
    d = Deployment(model, gpu, layout, precision, eff)
    for tier in host_tables.TIERS:
        out = {}
        for phase, tokens in per_gpu.items():
            cfg = perf.StepConfig(phase, max(tokens, 1e-6), ctx, table_tier=tier)
            st_ = perf.step_time(d, cfg)
            reads = host_tables.table_read(
                d, tier, cfg.tokens_per_gpu, st_.compute_s, perf.replayed_fraction(model, cfg)
            )
            out[phase] = (reads, st_.step_s)
        (dec, dec_s), (pre, pre_s) = out["decode"], out["prefill"]
        rows.append(
            {
                "tier": tier + (" (priced)" if tier == "host" else ""),
                "where": dec.where,
                "HBM per GPU (GB)": dec.gpu_bytes_per_gpu / 1e9,
                "host DRAM per node (GB)": dec.host_bytes_per_node / 1e9,
                "NVMe per node (GB)": dec.disk_bytes_per_node / 1e9,
                "decode: read (ms)": 1e3 * dec.read_s,
                "decode: exposed (ms)": 1e3 * dec.exposed_s,
                "decode step (ms)": 1e3 * dec_s,
                "prefill chunk: read (ms)": 1e3 * pre.read_s,
                "prefill chunk: exposed (ms)": 1e3 * pre.exposed_s,
                "prefill step (ms)": 1e3 * pre_s,
            }
        )
    frame = pd.DataFrame(rows)
    if hbm_free_bytes_per_gpu is not None:
        over = (frame["tier"] == "gpu") & (frame["HBM per GPU (GB)"] * 1e9 > hbm_free_bytes_per_gpu)
        frame.loc[over, [c for c in frame.columns if c.endswith("(ms)")]] = float("nan")
        frame.loc[over, "tier"] = "gpu: does not fit"
    return frame


def show_host_tables(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision,
    eff,
    batch: int,
    chunk: int,
    ctx: int,
    hbm_free_bytes_per_gpu: float | None = None,
) -> None:
    """The section, for a model with off-GPU tables (nothing otherwise); ``hbm_free_bytes_per_gpu``: the HBM per GPU
    left beside the weights, activations and reserve, against which the GPU tier fits or not."""
    lookups = model.lookups
    if not lookups:
        return
    total = model.extra_bytes
    per_token = sum(lk.rows_per_token * lk.row_bytes for lk in lookups)
    stored = "; ".join(f"{md_escape(e.label())}: {md_escape(e.describe())}" for e in model.extras if e.stored_bytes)
    st.subheader("Off-GPU lookup tables: where they live, what reading them costs")
    st.markdown(
        f"**{md_escape(model.name)}** carries, beside its weights, {stored}, "
        f"**{total / 1e9:,.1f} GB** ({model.extra_params / 1e9:,.1f}B parameters, not in the totals above), "
        f"read at {sum(lk.rows_per_token for lk in lookups)} rows = **{per_token:,} B per token**. They are neither "
        "weights every token multiplies nor KV cache: the planner keeps them in **host DRAM** (the design intent, "
        "vLLM `--engram-config table_memory=ram`), outside the GPU budget above, and every step time on every page "
        "includes the exposed part of their reads."
    )
    frame = host_tables_frame(model, gpu, layout, precision, eff, batch, chunk, ctx, hbm_free_bytes_per_gpu)
    num = st.column_config.NumberColumn
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_order=["tier", *frame.columns[2:], "where"],  # the numbers first, the long description last
        column_config={c: num(c, format="%,.3f" if "ms" in c else "%,.1f") for c in frame.columns[2:]},
    )
    if "gpu: does not fit" in set(frame["tier"]):
        need = float(frame.set_index("tier").loc["gpu: does not fit", "HBM per GPU (GB)"])
        st.warning(
            f"**The GPU tier does not fit:** the tables would take {need:,.1f} GB of HBM on each GPU (sharded over "
            f"attention TP {layout.attention_tp}), and {max(hbm_free_bytes_per_gpu or 0.0, 0.0) / 1e9:,.1f} GB are "
            "left beside the weights, activations and reserve; its step times are not shown."
        )
    st.caption(
        f"Decode: {batch:,} sequences; prefill: a {chunk:,}-token chunk, on the busiest GPU. Rows depend only on the "
        "token ids, so reads start with the step; each table's rows are due at its first consumer layer and the "
        "layers before it hide that share of the step's compute. Assumptions (not measured: no engine publishes "
        f"per-step Engram timings yet): scattered reads reach {host_tables.SCATTER_EFF:.0%} of the host link; "
        f"{host_tables.DISK['drives_per_node']} NVMe drives per node at "
        f"{host_tables.DISK['iops_per_drive'] / 1e6:g}M random 4-KiB reads/s each, "
        f"{host_tables.DISK['latency_s'] * 1e6:.0f} µs per read; HBM gathers at half its bandwidth."
    )


def single_box_tables_note(model: ModelSpec, host) -> None:
    """On the Single box page: the tables are not in the box's placement; where they would go and what it costs."""
    if not model.lookups:
        return
    total = model.extra_bytes
    per_token = sum(lk.rows_per_token * lk.row_bytes for lk in model.lookups)
    rows = sum(lk.rows_per_token for lk in model.lookups)
    share = total / (host.memory_gb * 1e9)
    st.warning(
        f"Not in the placement above: {md_escape(model.name)}'s n-gram tables, {total / 1e9:,.1f} GB "
        f"({share:.0%} of this host's {host.memory_gb:,.0f} GB). In host RAM they need that much beside the "
        f"offloaded experts and cost a token {per_token:,} B of scattered reads; on an NVMe drive, {rows} random "
        f"reads per token ({rows / (host_tables.DISK['iops_per_drive'] / 1e6):,.0f} µs per token per drive at "
        f"{host_tables.DISK['iops_per_drive'] / 1e6:g}M reads/s, an assumption).",
        icon="⚠️",
    )
