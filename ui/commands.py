"""The engines' launch commands for a plan, as copyable code blocks (one tab per engine), and under a decode plan's
the benchmark that checks it with the planner's predictions beside."""

from __future__ import annotations

import streamlit as st

from core.deployment.specs import ModelSpec, Scenario
from core.serving.benchmark import benchmark_commands
from core.serving.launch import TRTLLM_YAML
from core.serving.launch.k8s import lws_manifest
from core.serving.plan_commands import plan_commands
from ui.format import md_escape
from ui.state import catalog

__all__ = ["show_benchmark", "show_launch_commands"]

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
BENCH_NAMES = {"vllm": "vllm bench serve", "sglang": "sglang.bench_serving", "aiperf": "AIPerf"}


def show_launch_commands(plan, model: ModelSpec, scenario: Scenario, role: str) -> None:
    """Tabs with each engine's command line for ``plan`` (``role``: aggregated, prefill or decode worker), the
    engine version it was written for, and what it cannot express exactly."""
    try:
        gpu = catalog().gpu(scenario.gpu_id)
    except ValueError:  # an unknown GPU id: the commands are written without the memory fractions it sizes
        gpu = None
    cmds, notes = plan_commands(
        plan,
        model,
        scenario.precision,
        gpus_per_node=scenario.gpus_per_node,
        spec=scenario.spec,
        role=role,
        gpu=gpu,
        assumptions=scenario.memory,
    )
    tabs = st.tabs([f"{ENGINE_NAMES.get(e, e)} {c.version}" for e, c in cmds.items()])
    for tab, c in zip(tabs, cmds.values(), strict=True):
        with tab:
            st.code(c.command, language="bash")
            if c.config_yaml:
                st.caption(f"`{TRTLLM_YAML}`:")
                st.code(c.config_yaml, language="yaml")
            for n in c.notes:
                st.caption(md_escape(n))
            manifest = lws_manifest(c, scenario.gpus_per_node)
            if manifest:
                with st.expander("Kubernetes: a LeaderWorkerSet for one replica"):
                    st.code(manifest, language="yaml")
    for n in notes:  # one names the model, and an imported model's name is user text
        st.caption(md_escape(n))
    if plan.phase == "decode":
        show_benchmark([plan], model, scenario)


def show_benchmark(plans, model: ModelSpec, scenario: Scenario) -> None:
    """The benchmark commands for the decode plan among ``plans`` (vLLM, SGLang, AIPerf), with the planner's
    predictions for them beside."""
    try:
        b = benchmark_commands(plans, model, scenario.precision, scenario.workload)
    except ValueError as e:
        st.caption(md_escape(f"No benchmark command: {e}"))
        return
    st.markdown("**Benchmark this plan**")
    left, right = st.columns([3, 2])
    with left:
        tabs = st.tabs([BENCH_NAMES[t] for t in b.commands])
        for tab, command in zip(tabs, b.commands.values(), strict=True):
            with tab:
                st.code(command, language="bash")
    with right:
        st.markdown(
            "The planner predicts:\n" + "\n".join(f"- {md_escape(w)}: **{md_escape(v)}**" for w, v in b.predicted)
        )
    for n in b.notes:
        st.caption(md_escape(n))
