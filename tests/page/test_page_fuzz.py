"""Hostile URLs on every page (issue #21): hypothesis draws query strings from hostile values (NaN, infinities,
negatives, 0, 1e30, 10**30, 100,000 characters, unicode digits and controls, emoji, Markdown links and images,
HTML) over the URL keys the README documents plus unknown ones, some repeated with different values, and runs
each page through AppTest. No page may show an exception, and every key given a value no key accepts, every
unknown key and every key repeated with different values is named by a warning.

Kept small: two drawn examples and one explicit one per page (seeded per page, no shrinking), so the file runs
in about a minute; the per-function fuzz of the parsers behind these pages is tests/unit/test_fuzz.py."""

import re
import zlib

import pytest
from hypothesis import Phase, example, given, seed, settings
from hypothesis import strategies as st

from core.scenario import URL_KEYS
from tests.page._util import ROOT, run_page

PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]

# values that no URL key accepts: each must be named in a warning
BAD = (
    "1e30",  # first: hypothesis starts from the simplest draw, {"model": "1e30", "gpu": "1e30", "nodes": "1e30"}
    "NaN",
    "inf",
    "-inf",
    "-1",
    str(10**30),
    "9" * 100_000,
    "\u202e8",  # a right-to-left override before a digit
    "🙂",
    "[Sign in again](https:evil.example)",
    "![](https://evil.example/x.png)",
    "<script>alert(1)</script>",
    "**bold** _it_ `code`",
)
# hostile but sometimes valid ("0" is a valid ncm, red, alpha; "٣" and "１" read as 3 and 1; "" means the default)
ODD = ("0", "1", "٣", "１", "", " ")
UNKNOWN = ("gpus", "precision")
# read only with a speculative method (sd, never a valid one here) or an imported model: ignored otherwise
CONTEXT_KEYS = {"gamma", "alpha", "c", "dw", "cfg"}

values = st.sampled_from(BAD + ODD)
query = st.dictionaries(
    st.sampled_from((*URL_KEYS, *UNKNOWN)),
    st.one_of(values, st.lists(values, min_size=2, max_size=2)),  # a list: the key repeated
    min_size=3,
    max_size=5,
)
# the README's largest cluster shape that the search still meets (512 x 8 = 4,096 GPUs), Markdown for a
# model id, a repeated batch and an unknown key, on every page
EXPLICIT = {
    "nodes": "512",
    "gpn": "8",
    "model": "[Sign in again](https:evil.example)",
    "batch": ["8", "NaN"],
    "gpus": "8",
}


def _named(key: str, text: str) -> bool:
    return bool(re.search(rf"(?<![\w]){re.escape(key)}(=|'|/)|(?<=/){re.escape(key)}\b", text))


def _must_be_named(q: dict) -> list[str]:
    out = []
    for key, v in q.items():
        last = v[-1] if isinstance(v, list) else v
        repeated = isinstance(v, list) and len(set(v)) > 1
        if key in UNKNOWN or repeated or (last in BAD and key not in CONTEXT_KEYS):
            out.append(key)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_hostile_urls_on_every_page(page):
    @seed(zlib.crc32(page.encode()))
    @settings(max_examples=2, deadline=None, database=None, phases=(Phase.explicit, Phase.generate))
    @example(EXPLICIT)
    @given(query)
    def check(q):
        at = run_page(page, timeout=120, **q)  # asserts that no exception element is shown
        warnings = " ".join(w.value for w in at.warning)
        missing = [k for k in _must_be_named(q) if not _named(k, warnings)]
        assert not missing, (missing, warnings[:2000])

    check()


def test_report_on_4096_gpus_is_built():
    """Issue #21: 512 x 8 GPUs (within the README's limits) raised in the report's speculative section (the
    default layout was PP 4,096 on 61 layers), then its layout search passed a Workload's 1,000,000 sequences.
    Pipelines now stop at the layer count and headroom is sized per replica: the report is built."""
    for extra in ({}, {"tp": "1", "etp": "1", "pp": "8", "dp": "64"}):
        at = run_page("pages/10_Report.py", timeout=120, nodes="512", gpn="8", **extra)
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert at.get("download_button")


def test_report_on_65536_gpus_is_built_with_its_launch_commands():
    """Issue 37 (probe 3, UX-2): the README allows 65,536 GPUs (4,096 nodes x 16); the report refused anything
    above 8,192 with core.launch's "dp must be a whole number in 1..1,024" although the user set no dp."""
    at = run_page("pages/10_Report.py", timeout=120, nodes="4096", gpn="16")
    assert not at.error, [e.value for e in at.error]
    assert at.get("download_button")
    preview = " ".join(md.value for md in at.markdown)
    assert "dp must be a whole number" not in preview and "launch commands" not in preview
    # 65,536 GPUs of 8 per replica (the best prefill plan here): the commands size one replica, run 8,192 times
    assert "dp = 8192: the command sizes one replica of 8 GPUs" in preview
