"""Vega-Lite specs built as plain dicts, for the charts every page draws many times (lines, the speedup surface).

Altair builds each chart as a tree of schema objects and walks it again to emit JSON: 60-130 ms per layered line
chart on the 2-core machine, 0.7 s of the Speculative page's 1.3 s first run (bench/RESULTS.md). The builders
that use this module emit the same Vega-Lite directly (a few ms). :class:`Spec` keeps Altair's interface where
the rest of the app needs one: ``to_dict(validate=...)`` (``ui.render.chart``, the report's PNG export, the
tests), validating against the same Vega-Lite schema Altair ships when asked to, so the test suite
(``PLANNER_VALIDATE_CHARTS=1``) checks these specs exactly as it checks Altair's.

Data travel as named datasets at the top level, as Altair emits them (Streamlit ships each as Arrow).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pandas as pd

from core.hf import CHART_MAX_ROWS

_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"  # altair 6.x's (alt.SCHEMA_URL)


class Spec(dict):
    """A finished Vega-Lite spec with Altair's ``to_dict``."""

    def properties(self, **props: Any) -> Spec:
        """A copy with top-level properties set (``width=800``), as Altair's ``properties``."""
        return Spec({**self.to_dict(validate=False), **props})

    def to_dict(self, validate: bool = True, format: str = "vega-lite") -> dict:
        """The spec as a new dict: every part copied except the datasets' rows, which are shared (nothing
        downstream edits a row: Streamlit ships them as Arrow, the report's export reads them; copying the rows
        was most of a served chart's cost). ``validate``: check it against the Vega-Lite schema first."""
        if format != "vega-lite":
            raise ValueError(f"format {format!r}: only 'vega-lite' is built here")
        rows = self.get("datasets")
        spec = copy.deepcopy({k: v for k, v in self.items() if k != "datasets"})
        if rows is not None:
            spec["datasets"] = dict(rows)
        if validate:
            from altair.utils.schemapi import validate_jsonschema
            from altair.vegalite.v6.schema.core import load_schema

            validate_jsonschema(spec, load_schema())
        return spec


def records(frame: pd.DataFrame) -> list[dict]:
    """``frame``'s rows as JSON-safe records (NaN -> null, numpy scalars -> numbers), as Altair's data
    transformer writes them; pandas' C JSON writer does it in one pass."""
    return json.loads(frame.to_json(orient="records", double_precision=15, force_ascii=False))


def records_of(values: Any) -> list:
    """A sequence of numpy / pandas scalars as JSON values (for axis values, domains)."""
    return json.loads(pd.Series(values).to_json(orient="values", double_precision=15, force_ascii=False))


class TooManyRowsError(ValueError):
    """A chart's dataset has more rows than a browser draws in time (Altair's MaxRowsError, same limit)."""


class Datasets:
    """The spec's named datasets: ``ref(frame)`` stores a frame's records once and returns the layer's ``data``.
    A frame of more than ``CHART_MAX_ROWS`` (5,000) rows is refused, as Altair's default data transformer
    refuses it: the importer's bounds (``core.hf.MAX_ROUTED_EXPERTS``, ``MAX_LAYERS``) are set from it."""

    def __init__(self) -> None:
        self.named: dict[str, list[dict]] = {}

    def ref(self, frame: pd.DataFrame) -> dict:
        if len(frame) > CHART_MAX_ROWS:
            raise TooManyRowsError(f"a chart of {len(frame):,} rows: at most {CHART_MAX_ROWS:,} are drawn")
        values = records(frame)
        text = json.dumps(values, sort_keys=True, ensure_ascii=False)
        name = "data-" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        self.named.setdefault(name, values)
        return {"name": name}


def enc(shorthand: str, **props: Any) -> dict:
    """An encoding channel from Altair's shorthand ``"field:Q"`` (``Q``, ``N``, ``O``, ``T``) and properties."""
    name, _, kind = shorthand.rpartition(":")
    if kind not in _TYPES or not name:
        raise ValueError(f"encoding {shorthand!r}: expected 'field:Q|N|O|T'")
    return {"field": name, "type": _TYPES[kind], **props}


def mark(kind: str, **props: Any) -> dict:
    return {"type": kind, **props}


def title_params(title: str, subtitle: str = "") -> dict | str:
    return {"text": title, "subtitle": subtitle} if subtitle else {"text": title}


def layered(layers: list[dict], datasets: Datasets, *, title: str, subtitle: str = "", **top: Any) -> dict:
    """A layer spec (``layers`` each carry ``data``, ``mark``, ``encoding``) with its datasets and title."""
    return {"layer": layers, "title": title_params(title, subtitle), "datasets": datasets.named, **top}
