"""The Speculative page's live-server panel: a pasted Prometheus scrape of vLLM or SGLang read for its
speculative-decoding acceptance (:mod:`core.speculative.live`), next to the page's constant-alpha assumption."""

from __future__ import annotations

import streamlit as st

from core import speculative as sd
from core.speculative import live
from ui.controls import PASTE_MAX_CHARS, paste_box
from ui.format import md_escape
from ui.render import metric

__all__ = ["show_live_scrape"]

_PLACEHOLDER = (
    "vllm:spec_decode_num_accepted_tokens_total{...} 2600\nvllm:spec_decode_num_draft_tokens_total{...} 5000\n..."
)


def show_live_scrape(gamma: int, alpha: float, cost: float) -> None:
    """An expander with a text box for a scrape; the observed tokens per step, the chain alpha they imply at the
    scrape's draft length (the scenario's ``gamma`` where the scrape does not say) and the closed-form speedup
    there against the page's ``alpha``, or a message naming what is wrong with the scrape."""
    with st.expander("Observed on a live server (paste a Prometheus scrape of vLLM or SGLang)"):
        scrape = paste_box(
            "Scrape of /metrics", PASTE_MAX_CHARS, height=120, key="live_scrape", placeholder=_PLACEHOLDER
        )
        if not scrape.strip():
            return
        try:
            obs = live.spec_observation(scrape)
            g_obs = round(obs.gamma) if obs.gamma else gamma
            implied = live.implied_alpha(min(obs.tokens_per_step, g_obs + 1), g_obs)
        except ValueError as err:
            st.error(f"Could not read the scrape: {md_escape(err)}")
            return
        o = st.columns(4)
        metric("Observed tokens per step", f"{obs.tokens_per_step:.2f}", obs.engine, at=o[0])
        metric(
            "Implied chain α",
            f"{implied:.3f}",
            f"γ {g_obs}"
            + (f"; per-token {obs.acceptance_rate:.3f}" if obs.acceptance_rate == obs.acceptance_rate else ""),
            at=o[1],
        )
        metric("Closed-form speedup there", f"{sd.speedup(implied, g_obs, cost):.2f}×", f"c = {cost:g}", at=o[2])
        metric("Page's assumption", f"{sd.speedup(alpha, g_obs, cost):.2f}×", f"α = {alpha:.2f}", at=o[3])
