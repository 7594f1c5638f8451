"""Warm a fresh server before its first visitor: what every page's first run would otherwise pay.

``serve.py`` (the entry `make run`, Docker and compose.yaml start) calls :func:`warm_up` once at startup,
before the server listens. Measured on a 2-core machine (bench/RESULTS.md, `python -m bench pages`): the
catalog (YAML of the 1,128 validation cases, models, GPUs), pandas / pyarrow imports, the app's own modules
and the first chart cost a fresh server's first page 1.5-3 s; here
they cost the server's start instead, once, and every session after shares them.
"""

from __future__ import annotations

import os
import time

__all__ = ["warm_up"]


def warm_up() -> dict[str, float]:
    """Import, load and build what pages share; return the seconds each step took (for the log).

    It runs before Streamlit's runtime exists (serve.py is imported before the server starts), where every
    ``st.cache_data`` decorator warns "No runtime found, using MemoryCacheStorageManager": the in-memory store
    it falls back to is the one a local server uses anyway, so those warnings are silenced while it runs."""
    import logging

    import streamlit.runtime.caching.cache_data_api  # noqa: F401  (Streamlit sets its logger's level on import)

    quiet = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return _warm_up()
    finally:
        quiet.setLevel(level)


def _warm_up() -> dict[str, float]:
    took: dict[str, float] = {}
    t = time.perf_counter()
    # pandas, pyarrow (Streamlit serialises every dataframe and chart's data through Arrow) and every module of the
    # app's own packages (what any page imports: 0.1 s of a first Layouts page, part of it compiling the sources)
    import importlib
    import pkgutil

    import pandas as pd
    import pyarrow  # noqa: F401

    import core
    import ui

    for pkg in (core, ui):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(info.name)
    took["imports_s"] = time.perf_counter() - t
    t = time.perf_counter()
    from core.catalog import load_catalog

    load_catalog()
    took["catalog_s"] = time.perf_counter() - t
    t = time.perf_counter()
    # the first chart: pandas' JSON writer, the builders and, where charts are validated, the Vega-Lite schema
    from ui.charts import lines_chart
    from ui.render import VALIDATE_ENV

    frame = pd.DataFrame({"x": [1, 2], "y": [1, 2], "k": ["a", "b"]})
    spec = lines_chart(frame, x="x", y="y", series="k", x_title="x", y_title="y", title="warm-up")
    spec.to_dict(validate=os.environ.get(VALIDATE_ENV) == "1")
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
    # and the published throughput-vs-interactivity cases beside the serving model (Validation)
    from core.catalog import load_catalog
    from core.serving.frontier import load_frontier_cases, model_case

    for case in load_frontier_cases():
        model_case(case.id, load_catalog())
    took["published_runs_s"] = time.perf_counter() - t
    return took
