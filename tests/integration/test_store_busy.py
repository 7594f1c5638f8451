"""The Compare & saved page while another client holds PostgreSQL's table lock (issue 37, reliability-probe-3
UX-1): what ``VACUUM FULL``, ``ALTER TABLE`` or a DBA's open transaction holds. The page used to wait as long
as the lock (58.6 s in the probe); now it says "busy ... try again in a moment" after about the busy timeout
(2 s), and works again once the lock is gone."""

from __future__ import annotations

import re
import time

import pytest
from streamlit import config

from core.deployment.specs import Scenario
from core.store import open_store
from tests.page._util import run_page
from tests.pg_lock import table_locked

QUICK = {"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpn": "2", "w": "bf16"}


@pytest.fixture
def pg_store(pg_url, monkeypatch):
    import streamlit as st

    from tests.unit.test_store_postgres import _database

    url = _database(pg_url, "pagebusy")
    monkeypatch.setenv("PLANNER_DB", url)
    for var in ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS"):
        monkeypatch.delenv(var, raising=False)
    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    st.cache_data.clear()
    st.cache_resource.clear()  # as a server process starting now: the page opens its store afresh
    yield url
    config.set_option("server.address", before)
    st.cache_resource.clear()


def _plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def test_the_page_behind_a_table_lock_says_busy_within_seconds_then_works(pg_store):
    open_store().save("kept", Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm"))
    with table_locked(pg_store):
        t0 = time.monotonic()
        at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
        took = time.monotonic() - t0
        assert _plain(at.error[0].value) == (
            "Saved scenarios cannot be shown right now: the scenario store is busy (another writer has held it "
            "for more than 2 s); try again in a moment."
        )
        assert took < 15, took  # about the busy timeout plus the page itself, not the lock's 60 s
        assert [b.label for b in at.button] == ["Try again"] and not at.dataframe
    at.button(key="retry_store").click().run()  # the lock is gone: the retry lists the scenarios
    assert not at.exception and not at.error
    assert list(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"]) == ["kept"]
