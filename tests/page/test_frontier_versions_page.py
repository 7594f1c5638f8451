"""AppTest run of the Validation page's band table: every point's bands beside the current engine versions' (#35)."""

from pathlib import Path

import yaml
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_band_table_shows_the_current_engine_versions_beside_every_point():
    # counted from the two YAML files alone: deployments tagged "(older ...)" are measured on an older engine version
    pts = {p["id"]: p for p in yaml.safe_load((ROOT / "catalogs/frontier_points.yaml").read_text())["points"]}
    deps = [
        d
        for c in yaml.safe_load((ROOT / "catalogs/frontier_cases.yaml").read_text())["cases"]
        for d in c["deployments"]
    ]
    every = [pts[i] for d in deps for i in d["points"]]
    current = [pts[i] for d in deps if "(older" not in d.get("tag", "") for i in d["points"]]
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    bands = next(d.value for d in at.dataframe if "concurrency band" in d.value.columns)
    row = dict(zip(bands["concurrency band"], bands["current-version points"], strict=True))
    assert row["all"] == len(current) and bands["points"].iloc[-1] == len(every)  # the last row: all
    assert row["low (1-4 clients)"] == sum(1 for p in current if p.get("concurrency") and p["concurrency"] <= 4)
    med, p90 = bands["current tok/s/GPU median |error| (%)"], bands["current tok/s/GPU P90 |error| (%)"]
    assert (p90 >= med).all()
    caption = next(c.value for c in at.caption if "current* columns" in c.value)
    assert f"every published point ({len(every)})" in caption
    assert f"({len(current)}: {len(every) - len(current)} points on curves tagged as an older version" in caption
