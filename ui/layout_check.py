"""Guards for the layouts a page shows: the scenario's layout (or the default one for its cluster) when the
model can run it, else an error naming why and what to change; a plan's launch commands, or a note naming the
engine limit the plan is beyond. Either instead of a traceback further down the page."""

from __future__ import annotations

import streamlit as st

from core.deployment.bundle import Deployment
from core.deployment.parallel import check_layout
from core.deployment.specs import ParallelLayout, Scenario
from core.model import ModelSpec
from ui.commands import show_launch_commands
from ui.controls import current_layout
from ui.format import md_escape

__all__ = ["launch_commands", "runnable_layout"]


def runnable_layout(scenario: Scenario, model: ModelSpec) -> ParallelLayout | None:
    """The scenario's layout, or None after an ``st.error`` naming its problems (for example the default
    layout of a 4,096-GPU cluster asking for more pipeline stages than the model has layers)."""
    layout, is_default = current_layout(scenario, model, scenario.gpus_per_node)
    problems = check_layout(model, layout, scenario.memory.redundant_experts, scenario.precision)
    if not problems:
        return layout
    which = "The default layout" if is_default else "The scenario's layout"
    st.error(
        f"{which} for {scenario.total_gpus:,} GPUs (attention TP {layout.attention_tp}, EP {layout.ep}, expert TP "
        f"{layout.expert_tp}, PP {layout.pp}, DP {layout.dp}) does not run {md_escape(model.name)}: "
        f"{md_escape('; '.join(problems))}. Pick a layout on the Fit page (tp, etp, pp, dp in the URL): at most "
        f"{model.num_layers} pipeline stages, data-parallel replicas for the rest of the GPUs."
    )
    return None


def launch_commands(plan, d: Deployment, role: str) -> None:
    """:func:`ui.commands.show_launch_commands`, or an ``st.info`` naming the limit of the engines' flags that the
    plan is beyond (for example 1,024 GPUs per node, where the commands are checked up to 64)."""
    try:
        show_launch_commands(plan, d, role)
    except ValueError as err:
        st.info(f"No launch commands for {md_escape(plan.label)}: {md_escape(err)}.")
