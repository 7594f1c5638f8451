"""The engines' launch commands for a plan, as copyable code blocks (one tab per engine), and under a decode plan's
the benchmark that checks it with the planner's predictions beside."""

from __future__ import annotations

import streamlit as st

from core.deployment.bundle import Deployment
from core.serving.benchmark import benchmark_commands
from core.serving.launch import TRTLLM_YAML
from core.serving.launch.k8s import lws_manifest
from core.serving.plan_commands import plan_commands
from ui.format import md_escape

__all__ = ["show_benchmark", "show_dynamo_recipe", "show_launch_commands"]

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
BENCH_NAMES = {"vllm": "vllm bench serve", "sglang": "sglang.bench_serving", "aiperf": "AIPerf"}


def show_launch_commands(plan, d: Deployment, role: str) -> None:
    """Tabs with each engine's command line for ``plan`` serving deployment ``d`` (its model, precision,
    speculative config, cluster and memory assumptions; ``role``: aggregated, prefill or decode worker), the
    engine version it was written for, and what it cannot express exactly."""
    cmds, notes = plan_commands(plan, d, role=role)
    gpus_per_node = d.cluster.gpus_per_node if d.cluster is not None else d.gpu.gpus_per_node
    tabs = st.tabs([f"{ENGINE_NAMES.get(e, e)} {c.version}" for e, c in cmds.items()])
    for tab, c in zip(tabs, cmds.values(), strict=True):
        with tab:
            st.code(c.command, language="bash")
            if c.config_yaml:
                st.caption(f"`{TRTLLM_YAML}`:")
                st.code(c.config_yaml, language="yaml")
            for n in c.notes:
                st.caption(md_escape(n))
            manifest = lws_manifest(c, gpus_per_node)
            if manifest:
                with st.expander("Kubernetes: a LeaderWorkerSet for one replica"):
                    st.code(manifest, language="yaml")
    for n in notes:  # one names the model, and an imported model's name is user text
        st.caption(md_escape(n))
    if plan.phase == "decode":
        show_benchmark([plan], d)


def show_dynamo_recipe(pools, d: Deployment) -> None:
    """The NVIDIA Dynamo DynamoGraphDeployment that runs sized pools (:func:`core.report.commands.dynamo_recipe`:
    a frontend, the prefill and the decode workers with the pools' replicas and GPUs, SGLang's arguments), or why
    there is none."""
    from core.report.commands import dynamo_recipe

    try:
        manifest, _ = dynamo_recipe(pools, d)
    except ValueError as e:
        st.caption(md_escape(f"No Dynamo recipe: {e}"))
        return
    st.code(manifest, language="yaml")
    st.caption(
        "NVIDIA Dynamo's DynamoGraphDeployment (nvidia.com/v1alpha1), as ai-dynamo/dynamo's SGLang disaggregation "
        "examples write it: each worker runs `python3 -m dynamo.sglang` with the plan's SGLang arguments; a worker "
        "over several nodes is one replica of `multinode.nodeCount` pods, each with one node's GPUs, and the operator "
        "adds the multi-node rendezvous. Create the `hf-token-secret` Secret (HF_TOKEN) first; the runtime image "
        "carries its own SGLang release."
    )


def show_benchmark(plans, d: Deployment) -> None:
    """The benchmark commands for the decode plan among ``plans`` (vLLM, SGLang, AIPerf) serving ``d``'s model,
    precision and workload, with the planner's predictions for them beside."""
    try:
        b = benchmark_commands(plans, d.model, d.precision, d.workload)
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
