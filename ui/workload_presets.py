"""The sidebar's workload preset: apply a published workload profile (core.serving.workload_profiles) to the scenario.

Choosing a profile sets the prompt and output lengths (its means where published, else its medians) and its
prefix-cache hit rate, keeping the number of concurrent sequences; every field stays editable and the URL carries
the numbers (isl, osl, reuse), so a copied link reopens the same workload. The preset shows the profile whose
numbers the scenario holds, else "custom"."""

from __future__ import annotations

import streamlit as st

from core.deployment.specs import Scenario
from core.serving.workload_profiles import WorkloadProfile, load_profiles
from ui.state import update_scenario

__all__ = ["CUSTOM", "preset_control", "profile_workload"]

CUSTOM = "custom"


def profile_workload(s: Scenario, p: WorkloadProfile):
    """The scenario's workload with ``p``'s lengths and hit rate (its concurrency kept)."""
    return p.workload(batch=s.workload.batch)


def _on_preset() -> None:
    choice = st.session_state._w_profile
    for p in load_profiles():
        if p.id == choice:
            update_scenario(workload=profile_workload(st.session_state.scenario, p))


def preset_control(s: Scenario) -> None:
    """The preset selectbox (inside the sidebar's Workload expander)."""
    profiles = load_profiles()
    names = {p.id: p.name for p in profiles}
    current = next((p.id for p in profiles if profile_workload(s, p) == s.workload), CUSTOM)
    options = [CUSTOM, *names]
    st.selectbox(
        "Preset",
        options,
        index=options.index(current),
        key="_w_profile",
        on_change=_on_preset,
        format_func=lambda i: names.get(i, "custom (the numbers below)"),
        help="Published traffic shapes (Catalog page: each figure's source): prompt and output tokens per request "
        "(means) and the share of each prompt a warm prefix cache serves.",
    )
