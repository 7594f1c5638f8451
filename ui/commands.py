"""The engines' launch commands for a plan, as copyable code blocks (one tab per engine)."""

from __future__ import annotations

import streamlit as st

from core.deployment.specs import ModelSpec, Scenario
from core.serving.launch import TRTLLM_YAML
from core.serving.plan_commands import plan_commands
from ui.format import md_escape
from ui.state import catalog

__all__ = ["show_launch_commands"]

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


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
    for n in notes:  # one names the model, and an imported model's name is user text
        st.caption(md_escape(n))
