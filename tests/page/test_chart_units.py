"""One unit on every chart (numbers audit 3 A-M14, issue 34): bytes are decimal GB / MB like every figure beside
them; a chart in GiB (the Fit page's cache per sequence was) read 7% apart from the page's own GB."""

import json
from pathlib import Path

import pyarrow as pa
import pytest

from tests.page._util import run_page

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))


def _specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


@pytest.mark.parametrize("page", ["app.py", *PAGES])
def test_no_chart_uses_binary_units(page):
    specs = _specs(run_page(page, timeout=120))
    bad = [s.get("title") for s in specs if any(u in json.dumps(s) for u in ("GiB", "MiB", "KiB"))]
    assert not bad, f"{page}: charts in binary units: {bad}"


def test_fit_cache_per_sequence_is_in_decimal_gb():
    # DeepSeek-V3's MLA cache in bf16: (512 + 64) x 61 layers x 2 B = 70,272 B per token; at 4,096 tokens
    # 287,834,112 B = 0.2878 GB (0.2681 GiB before)
    at = run_page("pages/1_Fit.py")
    (chart,) = [c for c in at.get("vega_lite_chart") if "what one sequence keeps" in c.proto.spec]
    assert '"title": "cache per sequence (GB)"' in chart.proto.spec
    (data,) = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in chart.proto.datasets]
    at_4k = data[data["context"] == "4,096 tokens"]
    assert len(at_4k) == 1 and float(at_4k["gb"].iloc[0]) == pytest.approx(287_834_112 / 1e9, rel=1e-9)
