"""The Balance page's check of the priced imbalance against published EPLB runs (:mod:`core.balance.published`)."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from core.balance.published import compare_case, load_eplb_cases
from core.catalog import load_catalog

__all__ = ["published_eplb_frame", "show_published_eplb"]


@st.cache_data(show_spinner=False, max_entries=2)
def published_eplb_frame() -> tuple[pd.DataFrame, float, tuple[str, ...]]:
    """One row per published measurement: its setup, the published and the modelled throughput against the
    case's baseline, and the gap; and the Zipf exponent the model's loads assume."""
    cases, cat = load_eplb_cases(), load_catalog()
    rows = []
    for case in cases:
        run = f"{cat.model(case.model).name} · {case.ep} × {case.gpu.upper()} · {case.context_len:,}-token prefill"
        for r in compare_case(case, cat):
            rows.append(
                {
                    "run": run,
                    "placement (against)": f"{r.row.label} (against {case.baseline.label})",
                    "published (× baseline)": r.published_ratio,
                    "model (× baseline)": r.model_ratio,
                    "gap (%)": 100 * r.gap,
                }
            )
    return pd.DataFrame(rows), cases[0].zipf_s, tuple(re.split(r"[:,(]", c.source)[0].strip() for c in cases)


def show_published_eplb() -> None:
    with st.expander("EPLB's gain against published runs (ATOM on MI355X, LMSYS on H100)"):
        frame, s, sources = published_eplb_frame()
        st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            column_config={
                "published (× baseline)": st.column_config.NumberColumn(format="%.3f×"),
                "model (× baseline)": st.column_config.NumberColumn(format="%.3f×"),
                "gap (%)": st.column_config.NumberColumn(format="%+.1f%%"),
            },
        )
        st.caption(
            "Throughput of each placement over the run's baseline, as published and as the step-time model prices "
            f"a prefill step with the busiest GPU's expert load. Neither run published its expert loads: the model "
            f"assumes a skewed router (load ∝ 1 / rank^{s:g}, shuffled per layer), an exponent picked so ATOM's "
            "rearrange-only row comes closest; the 64-redundant rows and LMSYS's gap to perfect balance are "
            "predictions. The model has one EPLB (DeepSeek's), so ATOM's 'naive' and 'biased' replica choices get "
            f"the same model value; they bracket it. Sources: {'; '.join(sources)}."
        )
