"""Page-level controls that edit the shared scenario: the parallel layout, the memory assumptions and the Single box
page's box.

Widgets only; each writes back into ``st.session_state.scenario`` (and so into the URL) through
:func:`ui.scenario.update_scenario`.
"""

from __future__ import annotations

import streamlit as st

from core._util.validated import bounds
from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import divisors
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Scenario, SingleBox
from core.model import ModelSpec
from core.scenario import layout_from_sizes, resolved_layout
from core.scenario.deploy import resolve
from ui.state import catalog, update_scenario

__all__ = [
    "PASTE_MAX_CHARS",
    "assumption_controls",
    "current_layout",
    "layout_controls",
    "on_single_box_change",
    "paste_box",
    "single_box_gpus",
]

# a pasted CSV of expert loads or a Prometheus scrape: what their parsers read (core.balance.loads_io, core.speculative.live), and the
# 5 MB upload cap of .streamlit/config.toml
PASTE_MAX_CHARS = 5_000_000


def paste_box(label: str, max_chars: int, *, where=st, **kwargs) -> str:
    """``st.text_area`` bounded to ``max_chars``: a browser stops a paste there, and the server cuts a longer value
    from a client that ignores the limit. A text that fills the box is said to be cut, since what follows the
    limit is not read."""
    text = where.text_area(label, max_chars=max_chars, **kwargs)
    if len(text) >= max_chars:
        where.warning(
            f"The pasted text reached this box's limit of {max_chars:,} characters: anything beyond it was cut, so "
            "what is read may be incomplete."
        )
    return text


def scenario_deployment(scenario: Scenario, model: ModelSpec) -> Deployment | None:
    """The scenario's deployment (:func:`core.scenario.deploy.resolve`), or None where its layout does not run the
    model (the page then says why: :func:`ui.layout_check.runnable_layout`)."""
    try:
        return resolve(scenario, catalog(), model)
    except ValueError:
        return None


def current_layout(s: Scenario, model: ModelSpec, gpus_per_node: int) -> tuple[ParallelLayout, bool]:
    """The scenario's layout (or the default one), and whether it is the default."""
    return resolved_layout(s, model), s.layout is None


def _on_layout() -> None:
    s: Scenario = st.session_state.scenario
    ss = st.session_state
    try:
        lay = layout_from_sizes(s.total_gpus, int(ss._w_tp), int(ss._w_etp), int(ss._w_pp), int(ss._w_dp))
    except ValueError as e:
        ss.scenario_error = str(e)
        return
    update_scenario(layout=lay)


def _on_layout_reset() -> None:
    update_scenario(layout=None)


def layout_controls(s: Scenario, model: ModelSpec, gpus_per_node: int) -> ParallelLayout:
    """TP / expert-TP / PP / DP pickers limited to sizes that divide the cluster; returns the layout."""
    layout, is_default = current_layout(s, model, gpus_per_node)
    total = s.total_gpus
    pp_opts = [d for d in divisors(total) if d <= model.num_layers]
    pp = layout.pp if layout.pp in pp_opts else 1
    dp_opts = divisors(total // pp)
    dp = layout.dp if layout.dp in dp_opts else 1
    stage = total // (pp * dp)
    tp_opts = divisors(stage)
    c = st.columns([1, 1, 1, 1, 1.3])
    c[0].selectbox(
        "Attention TP",
        tp_opts,
        index=tp_opts.index(layout.attention_tp) if layout.attention_tp in tp_opts else 0,
        key="_w_tp",
        on_change=_on_layout,
        help=f"Tensor parallel size of attention. Attention DP = {stage} / TP GPUs per stage.",
    )
    c[1].selectbox(
        "Expert TP",
        tp_opts,
        index=tp_opts.index(layout.expert_tp) if layout.expert_tp in tp_opts else 0,
        key="_w_etp",
        on_change=_on_layout,
        help=f"Each expert split over this many GPUs; EP = {stage} / expert TP. Dense models: set it equal to TP.",
    )
    c[2].selectbox("Pipeline stages (PP)", pp_opts, index=pp_opts.index(pp), key="_w_pp", on_change=_on_layout)
    c[3].selectbox("Replicas (DP)", dp_opts, index=dp_opts.index(dp), key="_w_dp", on_change=_on_layout)
    with c[4]:
        st.caption(
            f"{'Default' if is_default else 'Custom'} layout: TP {layout.attention_tp} × DP-attn {layout.attention_dp}"
            f" | EP {layout.ep} × expert-TP {layout.expert_tp} | PP {layout.pp} | DP {layout.dp}"
        )
        if not is_default:
            st.button("Back to the default layout", on_click=_on_layout_reset)
    return layout


def _on_assumptions() -> None:
    ss = st.session_state
    try:
        m = MemoryAssumptions(
            gpu_memory_utilization=float(ss._w_util),
            runtime_reserve_gb=float(ss._w_reserve),
            max_num_batched_tokens=int(ss._w_mbt),
            activation_factor=float(ss._w_act),
            redundant_experts=int(ss._w_red),
        )
    except ValueError as e:
        ss.scenario_error = str(e)
        return
    update_scenario(memory=m)


def assumption_controls(s: Scenario, model: ModelSpec) -> MemoryAssumptions:
    m = s.memory
    c = st.columns(5)
    c[0].slider(
        "gpu_memory_utilization",
        0.05,  # the model allows anything above 0; below 5% nothing useful fits
        float(bounds(MemoryAssumptions, "gpu_memory_utilization")[1]),
        float(m.gpu_memory_utilization),
        0.01,
        key="_w_util",
        on_change=_on_assumptions,
        help="vLLM's fraction of each GPU's memory for weights + activations + runtime + KV cache (default 0.9).",
    )
    c[1].number_input(
        "Runtime reserve per GPU (GB)",
        *(float(x) for x in bounds(MemoryAssumptions, "runtime_reserve_gb")),
        float(m.runtime_reserve_gb),
        0.5,
        key="_w_reserve",
        on_change=_on_assumptions,
        help="CUDA context (~0.5 GB), NCCL buffers (~0.4 GB), CUDA graphs and allocator fragmentation.",
    )
    c[2].number_input(
        "Max batched tokens / step",
        *(int(x) for x in bounds(MemoryAssumptions, "max_num_batched_tokens")),
        int(m.max_num_batched_tokens),
        1024,
        key="_w_mbt",
        on_change=_on_assumptions,
        help="vLLM's max_num_batched_tokens: sets the activation peak.",
    )
    c[3].number_input(
        "Activation factor",
        *(float(x) for x in bounds(MemoryAssumptions, "activation_factor")),
        float(m.activation_factor),
        1.0,
        key="_w_act",
        on_change=_on_assumptions,
        help="Activations = batched tokens × hidden × 2 bytes × this factor (residual, normed copies, "
        "attention and FFN intermediates at their peak).",
    )
    c[4].number_input(
        "Redundant experts (EPLB)",
        *(int(x) for x in bounds(MemoryAssumptions, "redundant_experts")),
        int(m.redundant_experts),
        8,
        key="_w_red",
        on_change=_on_assumptions,
        disabled=not model.is_moe,
        help="Extra expert replicas spread over the EP group (DeepSeek deploys 32 in prefill).",
    )
    return m


def single_box_gpus(cat: Catalog) -> list[str]:
    """The ids of the GPUs a single box can hold (PCIe cards beside a CPU host), in catalog order."""
    return [g.id for g in cat.gpus.values() if g.single_box]


def on_single_box_change() -> None:
    """The Single box page's widgets' callback: the box its ``_w_box_*`` widgets describe becomes the scenario's
    (a unified host has no GPU; "auto" leaves ``--n-cpu-moe`` to the planner), or an invalid box is named in
    ``scenario_error`` and the scenario keeps its box."""
    ss, cat = st.session_state, catalog()
    host = cat.hosts[ss._w_box_host]
    gpu_id = None if host.kind == "unified" else (ss.get("_w_box_gpu") or single_box_gpus(cat)[0])
    auto = ss.get("_w_box_auto", True)
    try:
        new = SingleBox(
            host_id=host.id,
            gpu_id=gpu_id,
            n_gpus=1 if gpu_id is None else int(ss.get("_w_box_n", 1)),
            n_cpu_moe=None if auto or gpu_id is None else int(ss.get("_w_box_ncm", 0)),
            quant=ss._w_box_q,
            context_len=int(ss._w_box_ctx),
        )
    except ValueError as e:
        ss.scenario_error = str(e)
        return
    update_scenario(box=new)
