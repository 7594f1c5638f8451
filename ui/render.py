"""Drawing charts with a cached Vega-Lite spec, and tables at their full height.

Building an Altair chart and validating it against the Vega-Lite schema takes tens of milliseconds per
chart, most of a chart-heavy page's rerun. :func:`chart` builds ``builder(*args, **kwargs)`` once per
distinct set of arguments (hashed by Streamlit, DataFrames included) and keeps the finished spec, so a
rerun with the same inputs (a widget elsewhere on the page, a navigation back) sends the cached spec.
Each session still gets its own copy of the spec (``st.cache_data`` returns copies).

Schema validation (Altair's ``to_dict(validate=True)``, about half of a spec's build time, 0.5 s of the
Balance page's first run) runs where ``PLANNER_VALIDATE_CHARTS=1``: the test suite sets it (tests/conftest.py),
so every chart every page draws is validated there; a served page trusts the same builders and skips it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import streamlit as st

from ui.format import md_escape

VALIDATE_ENV = "PLANNER_VALIDATE_CHARTS"


@contextmanager
def model_errors(what: str) -> Iterator[None]:
    """Run a block of the model's computations: a ``ValueError`` from the model (an input its formulas refuse,
    with a message naming the value and the allowed range) is shown as ``st.error`` saying ``what`` could not be
    computed and why, and the page stops there, instead of a traceback (issue 37)."""
    try:
        yield
    except ValueError as e:
        st.error(f"**{what} could not be computed for this scenario:** {md_escape(e)}")
        st.stop()


def _frame_digest(df: pd.DataFrame) -> bytes:
    # a pickle digest of the frame: several times faster than Streamlit's row-wise pandas hash on the
    # few-thousand-row frames the heatmaps draw, and just as exact
    return hashlib.blake2b(pickle.dumps(df, protocol=5), digest_size=16).digest()


@st.cache_data(max_entries=512, show_spinner=False, hash_funcs={pd.DataFrame: _frame_digest})
def _spec(module: str, name: str, args: tuple, kwargs: dict) -> dict:
    import importlib

    builder = getattr(importlib.import_module(module), name)
    return builder(*args, **kwargs).to_dict(validate=os.environ.get(VALIDATE_ENV) == "1")


def chart(builder: Callable[..., Any], *args: Any, width: str | int = "stretch", **kwargs: Any) -> None:
    """Draw ``builder(*args, **kwargs)`` (an Altair chart builder of ``ui.charts``) at ``width``."""
    st.vega_lite_chart(spec=_spec(builder.__module__, builder.__qualname__, args, kwargs), width=width)


def table_height(rows: int) -> int:
    """Pixels that show a ``st.dataframe`` of ``rows`` rows whole, with no inner scroll bar: 35 px per row
    and for the header, 3 px of border."""
    return 35 * (rows + 1) + 3
