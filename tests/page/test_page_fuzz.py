"""Hostile URLs on every page (issue #21): hypothesis draws query strings from hostile values (NaN, infinities,
negatives, 0, 1e30, 10**30, 100,000 characters, unicode digits and controls, emoji, Markdown links and images,
HTML) over the URL keys the README documents plus unknown ones, some repeated with different values, and runs
each page through AppTest. No page may show an exception, and every key given a value no key accepts, every
unknown key and every key repeated with different values is named by a warning.

Kept small: two drawn examples and one explicit one per page (seeded per page, no shrinking), so the file runs
in about a minute; the per-function fuzz of the parsers behind these pages is tests/unit/test_fuzz.py."""

import json
import os
import re
import zlib
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, Phase, event, example, given, seed, settings
from hypothesis import strategies as st

from core.catalog import CATALOG_DIR, load_catalog
from core.hardware.efficiency import SERVING_STACKS
from core.hf import encode_config, imported_model_id, model_from_config_text
from core.model.dtypes import DTYPES, KV_DTYPES
from core.scenario import SPEC_METHODS, URL_KEYS
from tests.page._util import ROOT, run_page
from tests.unit.test_fuzz import mutated_within_bounds, named_field
from ui.format import md_escape

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
# read only with a speculative method (sd, never a valid one here), an imported model, the layout keys (dcp) or a
# calibration's scales (cdec / cpre): ignored otherwise
CONTEXT_KEYS = {"gamma", "alpha", "c", "dw", "cfg", "dcp", "csrc", "cruns", "cres"}

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
    above 8,192 with core.serving.launch's "dp must be a whole number in 1..1,024" although the user set no dp."""
    at = run_page("pages/10_Report.py", timeout=120, nodes="4096", gpn="16")
    assert not at.error, [e.value for e in at.error]
    assert at.get("download_button")
    preview = " ".join(md.value for md in at.markdown)
    assert "dp must be a whole number" not in preview and "launch commands" not in preview
    # 65,536 GPUs of 8 per replica (the best prefill plan here): the commands size one replica, run 8,192 times
    assert "dp = 8192: the command sizes one replica of 8 GPUs" in preview


# ---- issue 37: every input the README or the importer allows renders, or is refused with a message naming it


def _whole(lo: int, hi: int):
    """A whole number in lo..hi as URL text, its ends a third of the time."""
    return st.one_of(st.sampled_from([lo, hi]), st.integers(lo, hi), st.integers(lo, hi)).map(str)


def _number(lo: float, hi: float):
    return st.one_of(st.sampled_from([lo, hi]), st.floats(lo, hi)).map(lambda x: f"{x:g}")


CAT = load_catalog()
# every URL key the README documents, over its documented range (the cluster and the layout are drawn together)
README_VALUES = {
    "model": st.sampled_from(sorted(CAT.models)),
    "gpu": st.sampled_from(sorted(CAT.gpus)),
    "w": st.sampled_from(DTYPES),
    "ex": st.sampled_from(DTYPES),
    "kv": st.sampled_from(KV_DTYPES),
    "a2a": st.sampled_from(("bf16", "fp8")),
    "stack": st.sampled_from(sorted(SERVING_STACKS)),
    "batch": _whole(1, 1_000_000),
    "isl": _whole(1, 10_000_000),
    "osl": _whole(1, 10_000_000),
    "reuse": _number(0, 99),
    "gamma": _whole(1, 64),
    "alpha": _number(0, 1),
    "c": _number(0, 10),
    "bn": _whole(1, 4),
    "ncm": _whole(0, 10_000),
    "q": st.sampled_from(DTYPES),
    "bctx": _whole(1, 10_000_000),
    "util": _number(0.05, 1),
    "reserve": _number(0, 1000),
    "mbt": _whole(1, 10_000_000),
    "act": _number(0, 1000),
    "red": _whole(0, 100_000),
}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def readme_urls(draw) -> dict[str, str]:
    """A URL query with two to eight keys the README documents, each value inside its documented range; half the
    time a cluster (at most 65,536 GPUs), a quarter of the time a layout that divides it, a speculative method with
    its keys, and a single box whose host and GPU go together."""
    q = {k: draw(README_VALUES[k]) for k in draw(st.lists(st.sampled_from(sorted(README_VALUES)), max_size=8))}
    nodes, gpn = 1, 8
    if draw(st.booleans()):
        gpn = draw(st.sampled_from([1, 2, 4, 8, 16, 72, 1024]) | st.integers(1, 1024))
        nodes = draw(st.sampled_from([1, 65_536 // gpn]) | st.integers(1, min(4096, 65_536 // gpn)))
        q.update(nodes=str(nodes), gpn=str(gpn))
    if draw(st.integers(0, 3)) == 0:
        total = nodes * gpn
        pp = draw(st.sampled_from([d for d in _divisors(total) if d <= 64]))
        dp = draw(st.sampled_from(_divisors(total // pp)))
        stage = total // (pp * dp)
        q.update(pp=str(pp), dp=str(dp), tp=str(draw(st.sampled_from(_divisors(stage)))))
        q["etp"] = str(draw(st.sampled_from(_divisors(stage))))
    if draw(st.integers(0, 3)) == 0:
        q["sd"] = method = draw(st.sampled_from(SPEC_METHODS))
        if method == "draft_model":
            q["draft"] = draw(st.sampled_from(sorted(CAT.models)))
            q["dw"] = draw(st.sampled_from(DTYPES))
    if draw(st.integers(0, 3)) == 0:
        q["host"] = host = draw(st.sampled_from(sorted(CAT.hosts)))
        single = sorted(g.id for g in CAT.gpus.values() if g.single_box)
        q["bgpu"] = "none" if CAT.hosts[host].kind == "unified" else draw(st.sampled_from(single))
    return q


# every README maximum at once (65,536 GPUs, 10^7-token prompts and outputs, 99% reuse, ncm 10,000 on a 61-layer
# model, ...), and every minimum: the probe's all-maxima URL broke the Fit page (CR-1)
README_MAXIMA = {
    **dict(nodes="4096", gpn="16", batch="1000000", isl="10000000", osl="10000000", reuse="99", util="1"),
    **dict(reserve="1000", mbt="10000000", act="1000", red="100000", sd="mtp", gamma="64", alpha="1", c="10"),
    **dict(host="server-ddr5-8ch-2s-1024", bgpu="rtx-5090", bn="4", ncm="10000", bctx="10000000"),
}
README_MINIMA = {
    **dict(nodes="1", gpn="1", batch="1", isl="1", osl="1", reuse="0", util="0.05", reserve="0", mbt="1", act="0"),
    **dict(red="0", sd="ngram", gamma="1", alpha="0", c="0", host="desktop-ddr5-2ch-96", bgpu="rtx-4090", bn="1"),
    **dict(ncm="0", bctx="1"),
}


def _k3_merge_kernel():
    """The probe's Kimi-K3 config with vision_config.merge_kernel_size [10**300, 10**300] (CR-3)."""
    cfg = json.loads((CATALOG_DIR / "models" / "kimi-k3" / "config.json").read_text())
    cfg["vision_config"]["merge_kernel_size"] = [10**300, 10**300]
    return "kimi-k3", cfg, [(("vision_config", "merge_kernel_size", 0), 10**300)]


def _names_a_key(text: str, keys) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(k)}(?=[=',/ :]|$)", text) for k in keys)


@pytest.mark.parametrize("page", PAGES)
def test_readme_urls_and_bounded_imports_render_on_every_page(page):
    """Issue 37: URLs inside the README's ranges, half of them carrying a catalog config.json with an integer
    (anywhere, list elements included) changed up to the importer's bounds or past them. No page shows an exception;
    a refused import is a warning with the importer's message, naming the field where that is checkable; an ncm
    above the model's layers is named; every URL warning names one of the URL's keys. Six drawn examples per page
    and three explicit ones (every README maximum, every minimum, the probe's Kimi-K3 link), seeded per page, no
    shrinking: about a minute and a half for the twelve pages on two cores."""

    # README_URL_EXAMPLES=30 README_URL_SEED=x: a deeper or another (still reproducible) search, run locally
    @seed(zlib.crc32((page + os.environ.get("README_URL_SEED", "")).encode()))
    @settings(
        max_examples=int(os.environ.get("README_URL_EXAMPLES", "6")),
        deadline=timedelta(seconds=90),  # a page the probe saw took 3 s alone, 15 s under load
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(readme_urls(), st.one_of(st.none(), mutated_within_bounds(n_max=1)))
    @example(README_MAXIMA, None)
    @example(README_MINIMA, None)
    @example({"gpu": "h100-sxm", "reuse": "90"}, _k3_merge_kernel())
    def check(q, imported):
        refusal = None
        if imported is not None:
            text = json.dumps(imported[1], sort_keys=True, separators=(",", ":"))
            q = {**q, "model": imported_model_id(text), "cfg": encode_config(text)}
            try:
                model_from_config_text(text)
            except ValueError as e:
                refusal = str(e)
        event("catalog model" if imported is None else "import refused" if refusal else "import accepted")
        at = run_page(page, timeout=120, **q)  # asserts that no exception element is shown
        warnings = [w.value for w in at.sidebar.warning]
        if refusal is not None:
            assert md_escape(f"URL parameter cfg: {refusal}; using the catalog models only") in warnings, warnings
            key = named_field(imported[2])
            assert key is None or key in refusal, (imported[2], refusal)
        s = at.session_state.scenario
        layers = all_models_of(at)[s.model_id].num_layers
        if "ncm" in q and int(q["ncm"]) > layers:
            assert any(f"URL key ncm={int(q['ncm']):,}" in w for w in warnings), warnings
        url = [w for w in warnings if "URL" in w]
        assert all(_names_a_key(w, q) for w in url), (q, url)

    check()


def all_models_of(at) -> dict:
    """The models the session knows: the catalog's and the ones it imported."""
    custom = at.session_state["custom_models"] if "custom_models" in at.session_state else {}
    return {**dict(CAT.models), **{k: v[0] for k, v in custom.items()}}
