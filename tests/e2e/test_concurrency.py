"""Concurrent sessions (issue 13, part 3): 20 browser sessions on one server, each with its own scenario.

One Chromium, 20 browser contexts (20 Streamlit sessions, no shared cookies). All pages are opened before
any is waited on, so their first script runs overlap on the server; then every session changes one input
(a widget or an in-session page switch), all changes are fired before any is waited on, and every session
is checked again. Each check is scenario specific: the URL query, the sidebar's Model and Weights boxes,
the sidebar's GPU count and cluster HBM, and a number or sentence on the page computed here from the
catalog. The server's RSS is recorded before any session, after one and after all twenty, and written to
test-artifacts/concurrency.json.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, wait_rendered

pytestmark = pytest.mark.e2e

N_SESSIONS = 20
MAX_MB_PER_SESSION = 300  # generous: the notes measured ~0.2 MiB plus session_state per session
RENDER_TIMEOUT_MS = 150_000
EXPECT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Case:
    page: str  # URL path segment; "" is Home
    model: str
    gpu: str
    nodes: int
    gpn: int
    w: str

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpn

    def query(self) -> dict[str, str]:
        return {"model": self.model, "gpu": self.gpu, "nodes": str(self.nodes), "gpn": str(self.gpn), "w": self.w}

    def url(self, base: str) -> str:
        return f"{base}/{self.page}?{urlencode(self.query())}"


# (opening scenario, the one input its session changes later: (kind, value))
SCENARIOS: list[tuple[Case, tuple[str, object]]] = [
    (Case("Fit", "deepseek-v3", "h200", 1, 8, "fp8"), ("nodes", 2)),
    (Case("", "deepseek-v3", "h200", 2, 8, "fp8"), ("model", "kimi-k2")),
    (Case("", "qwen3-235b-a22b", "h100-sxm", 2, 8, "fp8"), ("w", "bf16")),
    (Case("", "mixtral-8x7b", "h100-sxm", 1, 2, "bf16"), ("page", "Fit")),
    (Case("", "kimi-k2", "gb200", 18, 4, "nvfp4"), ("gpn", 2)),
    (Case("", "llama-3-70b", "a100-80gb", 1, 4, "bf16"), ("nodes", 3)),
    (Case("Fit", "qwen3-30b-a3b", "l40s", 1, 4, "fp8"), ("model", "mixtral-8x7b")),
    (Case("Fit", "gpt-oss-120b", "h100-sxm", 1, 2, "fp8"), ("w", "int4")),
    (Case("Fit", "mixtral-8x22b", "mi300x", 1, 8, "bf16"), ("page", "Intensity")),
    (Case("Fit", "glm-5", "b200", 2, 8, "fp8"), ("gpn", 4)),
    (Case("Intensity", "deepseek-v2-lite", "rtx-4090", 1, 2, "int4"), ("nodes", 5)),
    (Case("Intensity", "qwen3-coder-480b-a35b", "h200", 2, 8, "fp8"), ("model", "deepseek-v3")),
    (Case("Intensity", "llama-4-scout", "h100-pcie", 1, 4, "bf16"), ("w", "fp8")),
    (Case("Intensity", "minimax-m3", "mi355x", 1, 8, "fp8"), ("page", "")),
    (Case("Layouts", "deepseek-v3", "h800", 4, 8, "fp8"), ("gpn", 4)),
    (Case("Layouts", "qwen3-235b-a22b", "b200", 1, 8, "fp8"), ("nodes", 2)),
    (Case("Layouts", "mixtral-8x7b", "h100-sxm", 1, 4, "bf16"), ("model", "qwen3-30b-a3b")),
    (Case("Disaggregation_and_cost", "llama-3-70b", "h100-sxm", 1, 2, "fp8"), ("w", "bf16")),
    (Case("Disaggregation_and_cost", "deepseek-v2", "mi325x", 1, 8, "bf16"), ("page", "Layouts")),
    (Case("", "snowflake-arctic", "b300", 1, 8, "fp8"), ("gpn", 2)),
]

# sidebar link labels (PAGES in ui/scenario.py) for the in-session page switches
LINK = {
    "": "Home",
    "Fit": "Fit",
    "Intensity": "Intensity",
    "Layouts": "Layouts",
    "Disaggregation_and_cost": "Disaggregation & cost",
}


def qs(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def _path(url: str) -> str:
    return urlparse(url).path.strip("/")


def after_change(case: Case, change: tuple[str, object]) -> Case:
    kind, value = change  # the kinds are Case's field names
    return replace(case, **{kind: value})


# ---- expected values, computed here from the catalog (not read back from the app)

_CAT = None


def cat():
    global _CAT
    if _CAT is None:
        from core.catalog import load_catalog

        _CAT = load_catalog()
    return _CAT


def signature(case: Case) -> list[str]:
    """Scenario-specific texts that must appear in the page's main area."""
    m, g = cat().model(case.model), cat().gpu(case.gpu)
    if case.page == "":
        return [f"{m.name} on {case.nodes} × {case.gpn} {g.name}"]
    if case.page == "Fit":
        return [f"Does {m.name} fit on {case.gpus} × {g.name}"]
    if case.page == "Intensity":
        return [f"Is each GEMM of {m.name} memory- or compute-bound on {g.name}"]
    if case.page == "Layouts":
        return [f"How should {m.name} (", f"be laid out on {case.nodes} × {case.gpn} {g.name} ({case.gpus:,} GPUs"]
    if case.page == "Disaggregation_and_cost":
        return [f"How many {g.name} GPUs does {m.name} need", f"cluster ({case.gpus} GPUs) as the building block"]
    raise AssertionError(case.page)


def home_metrics(case: Case) -> tuple[str, str]:
    """Home's first and last metric: total parameters and cluster HBM."""
    from core.model import params
    from ui.format import params_h

    m, g = cat().model(case.model), cat().gpu(case.gpu)
    return params_h(params.total_params(m)), f"{case.gpus * g.memory_bytes / 1e9:,.0f} GB"


def sidebar_caption(case: Case) -> str:
    # the device's bytes in decimal GB, as the Fit page budgets them (what CUDA reports of an H200, 150.11 GB:
    # 8 of them read "1,201 GB", not the datasheet's 8 x 141 = 1,128)
    g = cat().gpu(case.gpu)
    return f"{case.gpus:,} GPUs · {case.gpus * g.memory_bytes / 1e9:,.0f} GB {g.memory_type} in total"


# ---- the checks in the browser


def check_session(page, case: Case, label: str) -> None:
    t = EXPECT_TIMEOUT_MS
    q = qs(page.url)
    assert _path(page.url) == case.page, (label, page.url)
    assert {k: q.get(k) for k in case.query()} == case.query(), (label, page.url)
    sidebar = page.get_by_test_id("stSidebar")
    name = cat().model(case.model).name
    expect(sidebar.get_by_role("combobox", name="Model")).to_have_value(
        re.compile(f"^{re.escape(name)} \\("), timeout=t
    )
    expect(sidebar.get_by_role("combobox", name="Weights")).to_have_value(case.w, timeout=t)
    expect(sidebar.get_by_label("Nodes")).to_have_value(str(case.nodes), timeout=t)
    expect(sidebar).to_contain_text(sidebar_caption(case), timeout=t)
    main = page.get_by_test_id("stMain")
    for text in signature(case):
        expect(main).to_contain_text(text, timeout=t)
    if case.page == "":
        total, hbm = home_metrics(case)
        values = page.get_by_test_id("stMetricValue")
        expect(values).to_have_count(5, timeout=t)
        expect(values.first).to_have_text(total, timeout=t)
        expect(values.nth(4)).to_have_text(hbm, timeout=t)
    assert page.get_by_test_id("stException").count() == 0, label
    assert not page.errors, (label, page.errors)


def fire_change(page, change: tuple[str, object]) -> None:
    """Start one input change; returns without waiting for the rerun."""
    kind, value = change
    sidebar = page.get_by_test_id("stSidebar")
    if kind in ("nodes", "gpn"):
        box = (
            sidebar.get_by_label("Nodes") if kind == "nodes" else sidebar.get_by_role("spinbutton", name="GPUs / node")
        )
        box.fill(str(value))
        box.press("Enter")
    elif kind in ("model", "w"):
        box = sidebar.get_by_role("combobox", name="Model" if kind == "model" else "Weights")
        text = cat().model(str(value)).name if kind == "model" else str(value)
        box.click()
        box.fill(text)
        option = re.compile(f"^{re.escape(text)} \\(") if kind == "model" else re.compile(f"^{re.escape(text)}$")
        page.get_by_role("option", name=option).click()
    elif kind == "page":
        sidebar.get_by_role("link", name=LINK[str(value)], exact=True).click()
    else:
        raise AssertionError(kind)


def wait_changed(page, case: Case) -> None:
    """The URL shows the new scenario (written by the rerun), then the rerun has finished."""
    want = case.query()
    page.wait_for_url(
        lambda url: _path(url) == case.page and all(qs(url).get(k) == v for k, v in want.items()),
        timeout=RENDER_TIMEOUT_MS,
    )
    wait_rendered(page, timeout_ms=RENDER_TIMEOUT_MS)


# ---- memory of the server process (and any children)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def rss_mb(pid: int) -> float:
    kb = 0
    for p in _descendants(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb += int(line.split()[1])
        except OSError:
            pass
    return kb / 1024


def test_scenarios_are_distinct_and_valid():
    """Preconditions: every scenario is accepted as given (no URL warning), and no two sessions on the same
    page would show the same scenario-specific text, so a leak between them could not go unseen."""
    from core.scenario import scenario_from_params

    assert len(SCENARIOS) >= N_SESSIONS
    seen: dict[tuple, int] = {}
    for i, (case, change) in enumerate(SCENARIOS):
        for c in (case, after_change(case, change)):
            _, warnings = scenario_from_params(c.query(), cat())
            assert not warnings, (i, c, warnings)
            key = (c.page, c.model, c.gpu, c.nodes, c.gpn, c.w)
            assert seen.setdefault(key, i) == i, f"sessions {seen[key]} and {i} share {key}"
        assert after_change(case, change) != case


def test_twenty_concurrent_sessions_keep_their_own_scenarios(fresh_server, new_page):
    server = fresh_server
    pid = server.proc.pid
    t_start = time.perf_counter()
    rss = {"baseline": rss_mb(pid)}

    cases = [c for c, _ in SCENARIOS[:N_SESSIONS]]
    changes = [ch for _, ch in SCENARIOS[:N_SESSIONS]]

    # one session first: it pays for the imports and the catalog
    pages = [new_page()]
    pages[0].goto(cases[0].url(server.url))
    wait_rendered(pages[0], timeout_ms=RENDER_TIMEOUT_MS)
    check_session(pages[0], cases[0], "session 0")
    rss["one_session"] = rss_mb(pid)

    # the other 19: open all, then wait, so the script runs overlap on the server
    t_open = time.perf_counter()
    for case in cases[1:]:
        page = new_page()
        page.goto(case.url(server.url), wait_until="commit")
        pages.append(page)
    for page in pages:
        wait_rendered(page, timeout_ms=RENDER_TIMEOUT_MS)
    t_rendered = time.perf_counter() - t_open
    rss["all_sessions"] = rss_mb(pid)
    for i, (page, case) in enumerate(zip(pages, cases, strict=False)):
        check_session(page, case, f"session {i} ({case})")

    # every session changes one input; all changes are fired before any is waited on
    t_change = time.perf_counter()
    for page, change in zip(pages, changes, strict=False):
        fire_change(page, change)
    new_cases = [after_change(c, ch) for c, ch in zip(cases, changes, strict=False)]
    for page, case in zip(pages, new_cases, strict=False):
        wait_changed(page, case)
    t_changed = time.perf_counter() - t_change
    # each session shows its own new scenario, and nobody else's change reached it
    for i, (page, case) in enumerate(zip(pages, new_cases, strict=False)):
        check_session(page, case, f"session {i} after its change {changes[i]} ({case})")
    rss["after_changes"] = rss_mb(pid)

    per_session = (rss["all_sessions"] - rss["one_session"]) / (N_SESSIONS - 1)
    report = {
        "sessions": N_SESSIONS,
        "rss_mb": {k: round(v, 1) for k, v in rss.items()},
        "first_session_mb": round(rss["one_session"] - rss["baseline"], 1),
        "mb_per_session": round(per_session, 2),
        "seconds": {
            "open_and_render_19": round(t_rendered, 1),
            "change_and_rerender_20": round(t_changed, 1),
            "total": round(time.perf_counter() - t_start, 1),
        },
        "scenarios": [
            {"opened": c.url(""), "change": list(ch), "then": n.url("")}
            for c, ch, n in zip(cases, changes, new_cases, strict=False)
        ],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "concurrency.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\nconcurrency:", json.dumps({k: v for k, v in report.items() if k != "scenarios"}))
    assert per_session < MAX_MB_PER_SESSION, report
