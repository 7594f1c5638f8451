"""The Speculative page's rejection-sampling simulator: a Monte-Carlo run (100,000 steps by default) shown on
request, so the page opens without it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.speculative import sim as speculative_sim
from ui.charts import lines_chart
from ui.render import chart, metric

__all__ = ["show_simulator"]


@st.cache_data(show_spinner="Sampling…", max_entries=16)
def _simulate(vocab: int, closeness: float, gamma: int, steps: int, seed: int):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(vocab, 0.3))
    q = closeness * p + (1 - closeness) * rng.dirichlet(np.full(vocab, 0.3))
    return speculative_sim.simulate(p, q, gamma, steps, seed=seed + 1)


def show_simulator(gamma: int) -> None:
    """The simulator section: draws p and a draft q, runs rejection sampling, compares with the closed form."""
    st.subheader("Simulator: rejection sampling, for real")
    if not st.toggle("Run the simulator", value=False, key="spec_sim"):
        st.caption(
            "Samples a target distribution p and a draft q over a vocabulary, runs speculative decoding's rejection "
            "sampling for real, and checks the measured acceptance and tokens per step against α = Σ min(p, q) and "
            "the closed form, and that the emitted tokens follow p."
        )
        return
    sim_c = st.columns(5)
    vocab = sim_c[0].number_input("Vocabulary", 2, 50_000, 1000, 100)
    closeness = sim_c[1].slider(
        "Draft closeness to the target",
        0.0,
        1.0,
        0.7,
        0.05,
        help="q = closeness × p + (1 − closeness) × an unrelated distribution",
    )
    sim_gamma = sim_c[2].number_input("γ", 1, 16, min(gamma, 16), 1)
    steps = sim_c[3].select_slider("Steps", [1_000, 10_000, 100_000, 300_000], 100_000)
    seed = sim_c[4].number_input("Seed", 0, 2**31 - 1, 0, 1)

    res = _simulate(int(vocab), float(closeness), int(sim_gamma), int(steps), int(seed))
    r = st.columns(4)
    metric("α = Σ min(p, q)", f"{res.alpha:.4f}", f"measured {res.measured_acceptance:.4f}", at=r[0])
    metric(
        "Tokens per step (simulated)",
        f"{res.tokens_per_step:.3f}",
        f"closed form {res.expected_tokens_per_step:.3f}",
        at=r[1],
    )
    metric(
        "Emitted vs p (total variation)",
        f"{res.final_tv:.4f}",
        f"after {int(res.tv_checkpoints[-1]):,} tokens",
        at=r[2],
    )
    metric("Steps simulated", f"{res.steps:,}", f"γ = {res.gamma}", at=r[3])
    chart(
        lines_chart,
        pd.DataFrame({"tokens": res.tv_checkpoints, "tv": res.tv_distance, "series": "emitted histogram vs p"}),
        x="tokens",
        y="tv",
        series="series",
        x_title="tokens emitted",
        y_title="total variation distance",
        y_format=".3f",
        title="The output follows the target distribution p",
        subtitle="TV distance between the emitted tokens and p shrinks as samples accumulate (no bias from the draft)",
        height=240,
        width="stretch",
    )
