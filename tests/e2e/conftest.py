"""Real-browser fixtures: a Streamlit server on a free local port and Debian's chromium via Playwright.

Without chromium (or Playwright) the browser tests skip with a notice naming the package, except under
CI=true, where a missing browser is a failure. ``make test`` installs Debian's chromium when run as root.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
]


def _missing(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests need {reason} (CI=true: not skipping)")
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the Python package 'playwright' (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _missing("Debian's 'chromium' package (apt-get install chromium)")
    from playwright.sync_api import expect

    # web-first assertions return as soon as they hold; the default 5 s failed three chart counts on a loaded
    # 2-core machine (charts drawn a few seconds later), so they wait as long as wait_drawn's charts may take
    expect.set_options(timeout=30_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *, script: str = "serve.py", extra_env: dict[str, str] | None = None):
        """``script``: serve.py (the guarded, warmed-up entry `make run`, Docker and compose.yaml start), or
        app.py; ``extra_env`` is added to the server's environment (PLANNER_DB, PLANNER_ALLOWED_HOSTS, ...)."""
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = ARTIFACTS / f"server-{self.port}.log"
        ARTIFACTS.mkdir(exist_ok=True)
        # served as users are served: chart specs unvalidated (the AppTest page tests validate every chart every
        # page draws, tests/conftest.py); it keeps the tour of every model on every page within CI's time
        env = {
            **os.environ,
            "PLANNER_DB": str(ARTIFACTS / f"scenarios-{self.port}.db"),
            "PLANNER_VALIDATE_CHARTS": "0",
            **(extra_env or {}),
        }
        (ARTIFACTS / f"scenarios-{self.port}.db").unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                script,
                "--server.headless",
                "true",
                "--server.address",
                "127.0.0.1",
                "--server.port",
                str(self.port),
                "--server.fileWatcherType",
                "none",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                healthy = urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2).read() == b"ok"
                # serve.py has started once it has warmed up (ui/warmup.py): it says so in its log
                if healthy and (script != "serve.py" or "Warmed up" in self.log.read_text()):
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"streamlit did not become healthy; log:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)  # polling a health endpoint, not waiting for a result

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def fresh_server():
    """A server nobody has talked to yet (for 'first request is a deep link' tests)."""
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def wait_rendered(page, timeout_ms: int = 60_000) -> None:
    """Streamlit's own done signal: connected, the page has content, and the script is not running.

    The content check guards against the moment between connecting and the first script run.
    """
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached", timeout=timeout_ms
    )
    page.get_by_test_id("stMain").get_by_test_id("stHeading").first.wait_for(state="visible", timeout=timeout_ms)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=timeout_ms
    )


@pytest.fixture
def new_page(browser):
    contexts = []

    def make(*, height: int = 1000, **options):
        """A page in a fresh context (its own session), 1500 px wide; ``options`` go to the context
        (``color_scheme="dark"``, ...)."""
        ctx = browser.new_context(viewport={"width": 1500, "height": height}, device_scale_factor=1, **options)
        contexts.append(ctx)
        page = ctx.new_page()
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        return page

    yield make
    for c in contexts:
        c.close()


# Everything lazy has drawn: Streamlit shows a skeleton while an element's code loads (data frames, charts),
# Vega draws after the script has finished, the data grid paints its canvas last.
_DRAWN = """() => {
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const big = el => { const r = el.getBoundingClientRect(); return r.width >= 50 && r.height >= 20; };
  const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
  const chartsOk = charts.every(c => {
    const m = c.querySelector("svg.marks, canvas.marks");
    return m && big(m) && (m.tagName.toLowerCase() === "canvas" || m.querySelectorAll("path, rect, line, text").length > 0);
  });
  // a table inside a collapsed expander is not painted until the expander is opened
  const shown = el => { const d = el.closest("details"); return !d || d.open; };
  const frames = [...document.querySelectorAll("[data-testid='stDataFrame']")].filter(shown);
  return chartsOk && frames.every(f => { const c = f.querySelector("canvas"); return c && big(c); });
}"""


def wait_drawn(page, timeout_ms: int = 60_000) -> int:
    """After :func:`wait_rendered`: wait until no skeleton is left, every chart has drawn a non-empty view
    and every data frame has painted its grid. Returns the number of charts on the page."""
    page.wait_for_function(_DRAWN, timeout=timeout_ms)
    return page.locator("[data-testid='stVegaLiteChart']").count()
