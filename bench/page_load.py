"""What a newcomer waits for, and what each session costs the server: real browser, fresh servers.

    python -m bench pages                                   # everything below, as recorded in bench/RESULTS.md
    python -m bench.page_load --repeat 3 --pages Home,Fit   # page loads only, some pages
    python -m bench.page_load --memory-only --sessions 1,10,30
    python -m bench.page_load --profile Fit                 # where a page's first script run goes (cProfile)
    python -m bench.page_load --memory-only --trace         # the server under tracemalloc: what grows per session
    python -m bench.page_load --memory-only --mix pages --rounds 3   # session i on page i, scenario i; 3 times
    python -m bench.page_load --loads-only --what-if csafeloader,preload   # proposed fixes, in the server only

bench/RESULTS.md ("First page load on a fresh server, and memory per session") has the commands and results.

Page load: for every page, ``--repeat`` times, a freshly started ``streamlit run app.py`` (nobody has talked to
it: no import, no catalog, no cache) and a fresh Chromium context (no HTTP cache) open the page's URL; the time
runs from ``goto`` until the page is fully drawn: the main heading is visible, the app reports
``data-test-script-state="notRunning"`` and no spinner is left. Also reported: until the websocket is connected
(the JS bundle), and until every chart and visible table has painted (the tour test's condition). Median over
the repeats (each on its own server).

Memory: one fresh server, N = 1, 10, 30 browser sessions (contexts) open on the default page; the server's RSS
(/proc) after each N, the slope in MB per session; then every session closed, and RSS once the disconnected
sessions have expired (``STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL``, 5 s here; Streamlit evicts expired sessions
lazily, on the next disconnect, so one probe session is opened and closed after the TTL). ``--trace`` runs that
server under tracemalloc and writes the allocation growth per file between the snapshots.

Needs Playwright and Debian's chromium (``pip install -e '.[test]'``, ``apt-get install chromium``); without them
it says so and does nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
TTL_S = 5
TARGET_S = 3.0
# --what-if: proposed fixes in files this bench does not own, applied inside the server process only
WHAT_IF_CHOICES = {
    "csafeloader": "core.catalog parses YAML with libyaml's C loader (yaml.CSafeLoader), not the pure-Python one",
    "preload": "the server imports pandas / altair / pyarrow and loads the catalog at startup, before any session",
}
WHAT_IF: list[str] = []
# --mix scenarios / pages: the scenarios of tests/e2e/test_concurrency.py (model, gpu, nodes, GPUs per node, weights)
SCENARIOS = [
    ("deepseek-v3", "h200", 1, 8, "fp8"),
    ("qwen3-235b-a22b", "h100-sxm", 2, 8, "fp8"),
    ("mixtral-8x7b", "h100-sxm", 1, 2, "bf16"),
    ("kimi-k2", "gb200", 18, 4, "nvfp4"),
    ("llama-3-70b", "a100-80gb", 1, 4, "bf16"),
    ("qwen3-30b-a3b", "l40s", 1, 4, "fp8"),
    ("gpt-oss-120b", "h100-sxm", 1, 2, "fp8"),
    ("mixtral-8x22b", "mi300x", 1, 8, "bf16"),
    ("glm-5", "b200", 2, 8, "fp8"),
    ("deepseek-v2-lite", "rtx-4090", 1, 2, "int4"),
    ("qwen3-coder-480b-a35b", "h200", 2, 8, "fp8"),
    ("llama-4-scout", "h100-pcie", 1, 4, "bf16"),
    ("minimax-m3", "mi355x", 1, 8, "fp8"),
    ("deepseek-v3", "h800", 4, 8, "fp8"),
    ("qwen3-235b-a22b", "b200", 1, 8, "fp8"),
    ("deepseek-v2", "mi325x", 1, 8, "bf16"),
    ("snowflake-arctic", "b300", 1, 8, "fp8"),
    ("deepseek-v3", "h200", 2, 8, "fp8"),
    ("qwen3-235b-a22b", "h200", 1, 8, "fp8"),
    ("kimi-k2", "h200", 4, 8, "fp8"),
]


def session_url(base: str, i: int, mix: str) -> str:
    """Session ``i``'s URL: Home on the default scenario (``none``), Home on scenario ``i`` (``scenarios``), or
    page ``i`` of the sidebar on scenario ``i`` (``pages``: what tests/e2e/test_concurrency.py opens)."""
    if mix == "none":
        return base
    model, gpu, nodes, gpn, w = SCENARIOS[i % len(SCENARIOS)]
    path = pages()[i % len(pages())][1] if mix == "pages" else ""
    return f"{base}/{path}?model={model}&gpu={gpu}&nodes={nodes}&gpn={gpn}&w={w}"


# fully drawn (the definition): heading visible, script not running, no spinner
_DONE = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  const h = document.querySelector("[data-testid='stMain'] [data-testid='stHeading']");
  if (!app || !h || h.getBoundingClientRect().height === 0) return false;
  return app.getAttribute("data-test-script-state") === "notRunning" && !document.querySelector("[data-testid='stSpinner']");
}"""
# and painted: no skeleton, every chart drew marks, every visible table painted its grid (tests/e2e/conftest.py)
_PAINTED = """() => {
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const big = el => { const r = el.getBoundingClientRect(); return r.width >= 50 && r.height >= 20; };
  const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].every(c => {
    const m = c.querySelector("svg.marks, canvas.marks");
    return m && big(m) && (m.tagName.toLowerCase() === "canvas" || m.querySelectorAll("path, rect, line, text").length > 0);
  });
  const shown = el => { const d = el.closest("details"); return !d || d.open; };
  const frames = [...document.querySelectorAll("[data-testid='stDataFrame']")].filter(shown);
  return charts && frames.every(f => { const c = f.querySelector("canvas"); return c && big(c); });
}"""


def pages() -> list[tuple[str, str, str]]:
    """(label, URL path, script) for Home and every page, in the sidebar's order."""
    files = sorted((ROOT / "pages").glob("*.py"), key=lambda p: int(p.name.split("_", 1)[0]))
    return [("Home", "", "app.py")] + [
        (p.stem.split("_", 1)[1], p.stem.split("_", 1)[1], f"pages/{p.name}") for p in files
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``streamlit run`` on a free local port with its own scenario store; ``trace``: under tracemalloc."""

    def __init__(
        self,
        script: str = "app.py",
        *,
        trace_dir: Path | None = None,
        ttl_s: int | None = None,
        env: dict | None = None,
    ):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-page-load-"))
        env = {**os.environ, "PLANNER_DB": str(self.tmp / "scenarios.db"), **(env or {})}
        if ttl_s is not None:
            env["STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL"] = str(ttl_s)
        run = [sys.executable, "-m", "streamlit", "run", script]
        if trace_dir is not None or WHAT_IF:
            env |= {"BENCH_TRACE_DIR": str(trace_dir or ""), "BENCH_WHAT_IF": ",".join(WHAT_IF)}
            run = [sys.executable, "-m", "bench.page_load", "--serve", script]
        opts = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(self.port)]
        self.log = self.tmp / "server.log"
        self.proc = subprocess.Popen(
            [*run, *opts], cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 90
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.log.read_text()[-2000:]
                self.stop()
                raise RuntimeError(f"streamlit did not start:\n{log}")
            time.sleep(0.05)  # polling the health endpoint
        # serve.py warms the process up (ui/warmup.py) as it starts; the server has started when it says so
        while script == "serve.py" and "Warmed up" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.log.read_text()[-2000:]
                self.stop()
                raise RuntimeError(f"serve.py did not finish warming up:\n{log}")
            time.sleep(0.05)  # polling the server's log

    def _healthy(self) -> bool:
        try:
            return urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2).read() == b"ok"
        except OSError:
            return False

    def cpu_s(self) -> float:
        """CPU seconds the server process has used (user + system, every thread): less sensitive than wall time
        to other work on the machine."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024

    def metrics(self) -> dict[str, float]:
        """``/_stcore/metrics``: active sessions and each cache's bytes (``cache_memory_bytes{cache=...}``)."""
        req = urllib.request.Request(f"{self.url}/_stcore/metrics", headers={"Accept": "text/plain"})
        out = {}
        for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
            if line and not line.startswith("#") and (line.startswith(("active_sessions", "cache_memory_bytes"))):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)  # its log and scenario store


def _open(browser, url: str, timeout_ms: int = 180_000) -> tuple[object, dict[str, float]]:
    """A fresh context on ``url``; seconds from ``goto`` to connected, fully drawn and painted."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached", timeout=timeout_ms
    )
    t = {"connected_s": time.perf_counter() - t0}
    page.wait_for_function(_DONE, timeout=timeout_ms)
    t["drawn_s"] = time.perf_counter() - t0
    page.wait_for_function(_PAINTED, timeout=timeout_ms)
    t["painted_s"] = time.perf_counter() - t0
    if page.get_by_test_id("stException").count():
        raise RuntimeError(f"{url}: the page shows an exception")
    return ctx, t


def page_loads(browser, labels: set[str] | None, repeat: int, script: str) -> list[dict]:
    rows = []
    for label, path, _file in pages():
        if labels and label not in labels:
            continue
        runs = []
        for _ in range(repeat):
            load = os.getloadavg()[0]  # other work on the machine inflates every number here: recorded
            server = Server(script)
            try:
                cpu0 = server.cpu_s()
                ctx, t = _open(browser, f"{server.url}/{path}")
                t["server_cpu_s"] = server.cpu_s() - cpu0
                t["rss_mb"] = server.rss_mb()
                ctx.close()
            finally:
                server.stop()
            runs.append(t | {"load_1min": load})
        row = {"page": label, **{k: statistics.median(r[k] for r in runs) for k in runs[0]}}
        row["runs_drawn_s"] = [round(r["drawn_s"], 2) for r in runs]
        rows.append(row)
        print(f"{label:24s} drawn {row['drawn_s']:5.2f} s  (runs {row['runs_drawn_s']})", flush=True)
    return rows


def memory(
    browser,
    counts: list[int],
    script: str,
    trace_dir: Path | None,
    env: dict | None = None,
    mix: str = "none",
    rounds: int = 1,
) -> dict:
    """RSS with N sessions open (``session_url``), the slope per session, and after they close and expire; each
    round opens the same sessions again on the same server (round 2 on: every page's imports and the scenarios'
    cache entries are already paid, so its slope is what one more session costs)."""
    server = Server(script, trace_dir=trace_dir, ttl_s=TTL_S, env=env)
    try:
        out: dict = {"idle_mb": server.rss_mb(), "rounds": []}
        for rnd in range(rounds):
            contexts, points = [], []
            for n in counts:
                while len(contexts) < n:
                    contexts.append(_open(browser, session_url(server.url, len(contexts), mix))[0])
                points.append((n, server.rss_mb()))
                _dump(server, trace_dir, f"r{rnd}-n{n}")
                print(f"round {rnd + 1}, {n:3d} sessions: RSS {points[-1][1]:7.1f} MB", flush=True)
            for ctx in contexts:
                ctx.close()
            _wait(lambda: server.metrics().get("active_sessions", 0) == 0, "the sessions to disconnect")
            closed_mb = server.rss_mb()
            time.sleep(TTL_S + 1)  # the disconnected sessions' TTL has to pass: nothing to poll on
            probe, _ = _open(browser, server.url)  # a disconnect evicts the expired sessions (TTLCache is lazy)
            probe.close()
            _wait(lambda: server.metrics().get("active_sessions", 0) == 0, "the probe session to disconnect")
            _dump(server, trace_dir, f"r{rnd}-expired")
            out["rounds"].append(
                {
                    "points_mb": points,
                    "mb_per_session": _slope(points),
                    "after_close_mb": closed_mb,
                    "after_expiry_mb": server.rss_mb(),
                }
            )
        out["metrics_after_expiry"] = server.metrics()
        return out
    finally:
        server.stop()


def _slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of RSS (MB) over the number of sessions."""
    mean_n = statistics.fmean(n for n, _ in points)
    mean_r = statistics.fmean(r for _, r in points)
    return sum((n - mean_n) * (r - mean_r) for n, r in points) / sum((n - mean_n) ** 2 for n, _ in points)


def _wait(cond, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)  # polling the server's metrics


# ------------------------------------------------------------------ the traced server (--trace)


def _dump(server: Server, trace_dir: Path | None, name: str) -> None:
    """Ask the traced server for a tracemalloc snapshot and wait until it is written."""
    if trace_dir is None:
        return
    (trace_dir / f"{name}.request").touch()
    _wait(lambda: (trace_dir / f"{name}.json").exists(), f"the {name} snapshot", timeout_s=300)


def serve(argv: list[str]) -> None:
    """Run ``streamlit run`` in this process, with the $BENCH_WHAT_IF changes; with $BENCH_TRACE_DIR, traced."""
    what_if = [w for w in os.environ.get("BENCH_WHAT_IF", "").split(",") if w]
    if "csafeloader" in what_if:
        import yaml

        def safe_load_c(stream):
            return yaml.load(stream, Loader=yaml.CSafeLoader)

        yaml.safe_load = safe_load_c  # core.catalog calls yaml.safe_load at run time
    if "preload" in what_if:
        import altair  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401

        from core.catalog import load_catalog

        load_catalog()
    if os.environ.get("BENCH_TRACE_DIR"):
        _start_tracing(Path(os.environ["BENCH_TRACE_DIR"]))
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", "run", *argv]
    streamlit_main()


def _start_tracing(out: Path) -> None:
    """Trace allocations; on ``<name>.request`` in ``out`` write ``<name>.snap`` and ``<name>.json`` (traced and RSS bytes; RSS again after glibc's malloc_trim; live objects
    by type; Streamlit's sessions). Python's allocator keeps freed arenas, so RSS minus what malloc_trim returns
    is what the process holds for reuse, not what is still referenced."""
    import ctypes
    import gc
    import threading
    import tracemalloc
    from collections import Counter

    tracemalloc.start(1)

    def rss() -> float:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024

    def watch() -> None:
        while True:
            for req in sorted(out.glob("*.request")):
                name = req.stem
                gc.collect()
                tracemalloc.take_snapshot().dump(str(out / f"{name}.snap"))
                before = rss()
                ctypes.CDLL("libc.so.6").malloc_trim(0)
                types = Counter(type(o).__name__ for o in gc.get_objects())
                from streamlit.runtime import Runtime

                mgr = Runtime.instance()._session_mgr
                info = {
                    "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20,
                    "rss_mb": before,
                    "rss_after_malloc_trim_mb": rss(),
                    "sessions_stored": len(mgr.list_sessions()),
                    "sessions_active": len(mgr.list_active_sessions()),
                    "objects": dict(types.most_common(40)),
                }
                req.unlink()
                (out / f"{name}.json").write_text(json.dumps(info, indent=1))
            time.sleep(0.2)  # a request file is the signal

    threading.Thread(target=watch, daemon=True).start()


def trace_report(trace_dir: Path, counts: list[int]) -> None:
    import tracemalloc

    written = sorted(trace_dir.glob("*.json"), key=lambda p: p.stat().st_mtime)  # in the order of the run
    infos = {p.stem: json.loads(p.read_text()) for p in written}
    for name, i in infos.items():
        print(
            f"{name:12s} traced {i['traced_mb']:6.1f} MB  RSS {i['rss_mb']:6.1f} MB  after malloc_trim "
            f"{i['rss_after_malloc_trim_mb']:6.1f} MB  sessions stored {i['sessions_stored']} active {i['sessions_active']}"
        )
    lo, hi = f"r0-n{counts[0]}", f"r0-n{counts[-1]}"
    snaps = {k: tracemalloc.Snapshot.load(str(trace_dir / f"{k}.snap")) for k in (lo, hi)}
    print(f"\ngrowth {lo} -> {hi} by file (tracemalloc, top 15):")
    for s in snaps[hi].compare_to(snaps[lo], "filename")[:15]:
        print(f"  {s.size_diff / 2**20:+8.2f} MB  {s.count_diff:+8d} blocks  {s.traceback[0].filename}")
    print(f"\nobjects {lo} -> {hi} (by type, growth > 1,000):")
    a, b = infos[lo]["objects"], infos[hi]["objects"]
    for t in sorted(set(a) | set(b), key=lambda t: b.get(t, 0) - a.get(t, 0), reverse=True):
        if b.get(t, 0) - a.get(t, 0) > 1000:
            print(f"  {t:28s} {a.get(t, 0):9,d} -> {b.get(t, 0):9,d}")


# ------------------------------------------------------------------ where a first run goes (--profile)


# what a first run spends its time on: (label, regex on "file:line(function)"); the largest cumulative time of a
# matching function is the category's (nested calls are not double counted within one category)
CATEGORIES = [
    ("imports (every module the page pulls in)", r"<frozen importlib._bootstrap>.*\(_find_and_load\)"),
    ("catalog load (core.catalog)", r"core/catalog.py.*\(_load\)"),
    (
        "layout search (core.serving.layout)",
        r"core/serving/layout.py.*\((recommend|recommend_with_rejections|rank_layouts)\)",
    ),
    ("charts: specs built (ui.render.chart)", r"ui/render.py.*\(chart\)"),
    (
        "charts: st.altair_chart / vega_lite_chart",
        r"streamlit/elements/vega_charts.py.*\((altair_chart|vega_lite_chart)\)",
    ),
    ("tables: st.dataframe (Arrow)", r"streamlit/elements/arrow.py.*\(dataframe\)"),
    ("the shared sidebar (ui.scenario.sidebar)", r"ui/scenario.py.*\(sidebar\)"),
    ("report rendering (vl_convert PNGs)", r"vl_convert|ui/report.*\(render"),
]


def profile(label: str, top: int = 30, warm: bool = True) -> None:
    """cProfile of a page's first script run in a fresh interpreter (as a fresh server's first request: streamlit
    imported and, with ``warm``, what serve.py loads at startup: ui.warmup), through AppTest, profiling the script
    thread; time per category, then the heaviest calls by cumulative time."""
    script = next(f for lab, _p, f in pages() if lab == label)
    code = f"""
import cProfile, pstats, re, time, streamlit
if {warm!r}:
    from ui.warmup import warm_up
    warm_up()
from streamlit.runtime.scriptrunner import script_runner
from streamlit.testing.v1 import AppTest
pr = cProfile.Profile()
run = script_runner.ScriptRunner._run_script
def profiled(self, *a, **k):
    pr.enable()
    try:
        return run(self, *a, **k)
    finally:
        pr.disable()
script_runner.ScriptRunner._run_script = profiled
at = AppTest.from_file({str(ROOT / script)!r}, default_timeout=300)
t0 = time.perf_counter(); at.run(); wall = time.perf_counter() - t0
assert not at.exception, [e.value for e in at.exception]
st = pstats.Stats(pr)
total = max(v[3] for k, v in st.stats.items() if k[2] == "_run_script")
print(f"{label}: first run {{wall:.2f}} s wall, script {{total:.2f}} s (under cProfile)")
for name, pattern in {CATEGORIES!r}:
    rx = re.compile(pattern)
    cum = max((v[3] for k, v in st.stats.items() if rx.search(f"{{k[0]}}:{{k[1]}}({{k[2]}})")), default=0.0)
    print(f"  {{cum:6.2f}} s  {{100 * cum / total:5.1f}}%  {{name}}")
st.sort_stats("cumulative").print_stats({top})
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.page_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pages", default="", help="comma-separated labels (Home, Fit, ...); default every page")
    ap.add_argument("--sessions", default="1,10,30")
    ap.add_argument(
        "--script", default="serve.py", help="what `streamlit run` serves (serve.py as `make run` does, or app.py)"
    )
    ap.add_argument("--loads-only", action="store_true")
    ap.add_argument("--memory-only", action="store_true")
    ap.add_argument("--trace", action="store_true", help="memory: run the server under tracemalloc")
    ap.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE", help="memory: server env")
    ap.add_argument("--mix", choices=("none", "scenarios", "pages"), default="none", help="memory: see session_url")
    ap.add_argument("--rounds", type=int, default=1, help="memory: open and expire the sessions this many times")
    ap.add_argument("--profile", metavar="PAGE", help="cProfile one page's first run and exit")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument(
        "--what-if",
        default="",
        help="comma-separated proposed fixes applied in the server: "
        + "; ".join(f"{k}: {v}" for k, v in WHAT_IF_CHOICES.items()),
    )
    ap.add_argument("--serve", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    WHAT_IF[:] = [w for w in args.what_if.split(",") if w]
    if set(WHAT_IF) - set(WHAT_IF_CHOICES):
        ap.error(f"--what-if: choose from {', '.join(WHAT_IF_CHOICES)}")
    if args.profile:
        return profile(args.profile, warm=args.script == "serve.py")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("page-load bench skipped: needs Playwright (pip install -e '.[test]')")
        return None
    if not Path(CHROMIUM).exists():
        print(f"page-load bench skipped: needs Debian's chromium at {CHROMIUM} (apt-get install chromium)")
        return None
    counts = [int(n) for n in args.sessions.split(",")]
    labels = {p.strip() for p in args.pages.split(",") if p.strip()} or None
    result: dict = {"cores": os.cpu_count(), "load_avg_before": os.getloadavg()}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            if not args.memory_only:
                result["loads"] = page_loads(browser, labels, args.repeat, args.script)
            if not args.loads_only:
                trace_dir = Path(tempfile.mkdtemp(prefix="bench-trace-")) if args.trace else None
                env = dict(kv.split("=", 1) for kv in args.server_env)
                result["memory"] = memory(browser, counts, args.script, trace_dir, env, args.mix, args.rounds) | {
                    "server_env": env,
                    "mix": args.mix,
                }
                if trace_dir:
                    trace_report(trace_dir, counts)
        finally:
            browser.close()
    result["load_avg_after"] = os.getloadavg()
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return None


def report(result: dict) -> None:
    print(f"\n{result['cores']} cores; load average before {result['load_avg_before'][0]:.1f}")
    if "loads" in result:
        print("first load of each page on a fresh server (s, median of the repeats, each on its own server)")
        print(
            f"{'page':24s} {'connected':>9s} {'drawn':>6s} {'painted':>7s} {'server CPU':>10s} {'RSS MB':>7s} "
            f"{'load':>5s}  runs (drawn)"
        )
        for r in result["loads"]:
            print(
                f"{r['page']:24s} {r['connected_s']:9.2f} {r['drawn_s']:6.2f} {r['painted_s']:7.2f} "
                f"{r['server_cpu_s']:10.2f} "
                f"{r['rss_mb']:7.0f} {r['load_1min']:5.1f}  {r['runs_drawn_s']}"
            )
        over = [r["page"] for r in result["loads"] if r["drawn_s"] > TARGET_S]
        print(f"over {TARGET_S:g} s (drawn): {', '.join(over) or 'none'}")
    if "memory" in result:
        m = result["memory"]
        print(
            f"server RSS (MB), sessions opened {m['mix']!r} (bench/page_load.py session_url); idle {m['idle_mb']:.0f}"
        )
        for k, r in enumerate(m["rounds"], 1):
            pts = ", ".join(f"{n}: {v:.0f}" for n, v in r["points_mb"])
            print(
                f"  round {k}: with N sessions open {pts}; slope {r['mb_per_session']:.2f} MB per session; all "
                f"closed {r['after_close_mb']:.0f}; after the TTL ({TTL_S} s) and eviction {r['after_expiry_mb']:.0f}"
            )


if __name__ == "__main__":
    main()
