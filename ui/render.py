"""Drawing charts with a cached Vega-Lite spec, tables at their full height, and metrics with a grey note.

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
from typing import Any, Literal

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


def metric(
    label: str,
    value: str,
    note: str | None = None,
    *,
    help: str | None = None,
    at: Any = None,
    alert: bool = False,
) -> None:
    """``st.metric`` as every page draws it: ``value`` under ``label``, with ``note`` beneath in grey and no arrow
    (the planner's deltas say what a figure is of or against, not a change), drawn in the container ``at`` (a
    column; the page itself by default). ``alert`` shows the note in red: a figure past its alert threshold."""
    color: Literal["inverse", "off"] = "inverse" if alert else "off"
    (at or st).metric(label, value, note, delta_color=color, delta_arrow="off", help=help)


Column = str | tuple[str, str | None] | tuple[str, str | None, str]


def number_columns(spec: dict[str, Column], *, pin_first: bool = False) -> dict[str, Any]:
    """A ``st.dataframe`` ``column_config`` from a compact table, column key -> ``"Label"`` (text as it is),
    ``("Label", "%,.1f")`` (a number in that printf format) or ``("Label", format, "help")``; a ``None`` format is
    a text column with its help. ``pin_first`` pins the first column (the row's name) while the table scrolls."""
    out: dict[str, Any] = {}
    for i, (key, col) in enumerate(spec.items()):
        label, fmt, hlp = (col, None, None) if isinstance(col, str) else (*col, None)[:3]
        pinned = pin_first and i == 0
        if fmt is not None:
            out[key] = st.column_config.NumberColumn(label, format=fmt, help=hlp, pinned=pinned or None)
        elif hlp is not None or pinned:
            out[key] = st.column_config.TextColumn(label, help=hlp, pinned=pinned or None)
        else:
            out[key] = label
    return out
