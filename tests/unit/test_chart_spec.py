"""The charts' Vega-Lite specs built as dicts (ui/charts/_spec.py): validation against the schema Altair ships,
the data as Altair writes it, the row limit, and the same spec as the Altair builders produced."""

import math
import re

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ui.charts import Spec, TooManyRowsError, lines_chart
from ui.charts._spec import Datasets, enc, records


def test_records_are_json_safe_as_altair_writes_them():
    frame = pd.DataFrame({"x": np.array([1, 2], dtype=np.int64), "y": [0.1, math.nan], "k": ["a", "b"]})
    assert records(frame) == [{"x": 1, "y": 0.1, "k": "a"}, {"x": 2, "y": None, "k": "b"}]
    assert type(records(frame)[0]["x"]) is int  # a numpy int64 becomes a JSON number


def test_validation_catches_a_bad_spec():
    good = Spec({"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": enc("a:Q")}})
    assert good.to_dict(validate=True)["encoding"]["x"] == {"field": "a", "type": "quantitative"}
    bad = Spec({"mark": "point", "encoding": {"x": {"field": "a", "type": "quantity"}}})  # not a Vega-Lite type
    with pytest.raises(jsonschema.ValidationError):
        bad.to_dict(validate=True)
    assert bad.to_dict(validate=False)["encoding"]["x"]["type"] == "quantity"  # served specs skip it


def test_to_dict_and_properties_return_copies():
    spec = Spec({"mark": "point"})
    spec.to_dict(validate=False)["mark"] = "line"
    assert spec["mark"] == "point"
    wide = spec.properties(width=800)
    assert wide["width"] == 800 and "width" not in spec


def test_shorthand_and_datasets():
    assert enc("n:O", sort=None) == {"field": "n", "type": "ordinal", "sort": None}
    with pytest.raises(ValueError, match=re.escape("expected 'field:Q|N|O|T'")):
        enc("n")
    ds = Datasets()
    frame = pd.DataFrame({"a": [1, 2]})
    assert ds.ref(frame) == ds.ref(frame.copy())  # the same rows are stored once
    assert len(ds.named) == 1
    with pytest.raises(TooManyRowsError, match="5,001 rows"):
        ds.ref(pd.DataFrame({"a": range(5_001)}))


def test_a_lines_chart_is_one_schema_valid_layer_spec():
    data = pd.DataFrame({"x": [1, 2, 1, 2], "y": [1.0, 2.0, 1.5, 2.5], "s": ["a", "a", "b", "b"]})
    spec = lines_chart(data, x="x", y="y", series="s", x_title="x (tokens)", y_title="y (s)", title="t").to_dict()
    # one line layer over one dataset of the 4 rows; both series keep their order in colour and dash
    (layer,) = spec["layer"]
    assert spec["datasets"][layer["data"]["name"]] == records(data)
    assert layer["encoding"]["color"]["scale"]["domain"] == ["a", "b"] == layer["encoding"]["strokeDash"]["sort"]
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
