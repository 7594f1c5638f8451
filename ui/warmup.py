"""Warm a fresh server before its first visitor: what every page's first run would otherwise pay.

``serve.py`` (the entry `make run`, Docker and compose.yaml start) calls :func:`warm_up` once at startup,
before the server listens. Measured on a 2-core machine (bench/RESULTS.md, `python -m bench pages`): the
catalog (YAML of the 1,128 validation cases, models, GPUs), pandas / pyarrow / Altair imports and Altair's
first chart cost a fresh server's first page 1.5-3 s; here
they cost the server's start instead, once, and every session after shares them.
"""

from __future__ import annotations

import os
import time

__all__ = ["warm_up"]


def warm_up() -> dict[str, float]:
    """Import, load and build what pages share; return the seconds each step took (for the log)."""
    took: dict[str, float] = {}
    t = time.perf_counter()
    import altair as alt
    import pandas as pd
    import pyarrow  # noqa: F401 - Streamlit serialises every dataframe and chart's data through Arrow

    took["imports_s"] = time.perf_counter() - t
    t = time.perf_counter()
    from core.catalog import load_catalog

    load_catalog()
    took["catalog_s"] = time.perf_counter() - t
    t = time.perf_counter()
    # Altair's first chart builds its API classes (and, where charts are validated, reads the schema once)
    from ui.render import VALIDATE_ENV

    validate = os.environ.get(VALIDATE_ENV) == "1"
    frame = pd.DataFrame({"x": [0, 1], "y": [1, 2], "k": ["a", "b"]})
    base = alt.Chart(frame).encode(
        x=alt.X("x:Q", title="x"), y=alt.Y("y:Q", title="y"), color="k:N", tooltip=["x:Q", "y:Q", "k:N"]
    )
    alt.layer(base.mark_line(strokeDash=[4, 2]), base.mark_point().encode(shape="k:N")).to_dict(validate=validate)
    # st.set_page_config's emoji icon: Streamlit's emoji table is imported and its pattern compiled on first use
    from streamlit.string_util import is_emoji

    is_emoji("📄")
    # Streamlit's first element of a process decides whether to warn that it is not run by `streamlit run`,
    # asking inspect.stack() whether it is a REPL (every frame's source file read: 0.2 s of the first page);
    # this process is served by `streamlit run serve.py`, so the answer is known: no warning
    from streamlit import delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True
    took["first_chart_s"] = time.perf_counter() - t
    t = time.perf_counter()
    # scenario-independent results pages show: the published EPLB runs priced by the step-time model (Balance)
    from ui.eplb_published import published_eplb_frame

    published_eplb_frame()
    took["published_runs_s"] = time.perf_counter() - t
    return took
