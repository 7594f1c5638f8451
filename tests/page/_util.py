"""Helpers shared by the AppTest page tests."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def run_page(page: str, timeout: int = 60, **query) -> AppTest:
    """Run one page (path relative to the repository) with URL query parameters; no exception allowed."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def qp(at: AppTest) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}
