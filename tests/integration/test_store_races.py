"""Two sessions of the Compare & saved page racing on one store, SQLite and PostgreSQL (issue 37).

Each session is a real ``AppTest`` run of ``pages/9_Compare.py`` with its own session state, both on the
store that ``PLANNER_DB`` names, as two browser tabs (or two replicas) are. What the probe found
(reliability-probe-3 DL-1, UX-3) and what must hold now:

- Save + Overwrite never discards a teammate's save: a save over a version someone else has saved since
  is refused with "changed since you opened it", and both versions are shown with the ways on;
- a scenario deleted elsewhere leaves nothing selected (so a retry click cannot reach another row), and
  one renamed elsewhere is announced, with the next click on the old version refused.

Every expected value is written out here, not read back from the page's own code.
"""

from __future__ import annotations

import re

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from core.deployment.specs import Scenario, Workload
from core.store import open_store
from tests.page._util import qp, run_page

QUICK = {"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpn": "2", "w": "bf16"}  # a current scenario quick to compare
SMALL = Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm", gpus_per_node=2)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(request, tmp_path, monkeypatch):
    """PLANNER_DB for both sessions: a SQLite file, or a fresh database on the throwaway PostgreSQL server."""
    import streamlit as st

    if request.param == "sqlite":
        url = str(tmp_path / "scenarios.db")
    else:
        from tests.unit.test_store_postgres import _database

        url = _database(request.getfixturevalue("pg_url"), "races")
    monkeypatch.setenv("PLANNER_DB", url)
    for var in ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS"):
        monkeypatch.delenv(var, raising=False)
    # a server bound to the loopback address: with no sign-in configured, everyone on it may edit
    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    st.cache_data.clear()
    st.cache_resource.clear()  # the page's store is a cached resource: open the one PLANNER_DB names
    yield url
    config.set_option("server.address", before)
    st.cache_resource.clear()


def _plain(markdown: str) -> str:
    """What a user reads: the Markdown escapes (backslashes, word joiners) of user text taken out."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def _session() -> AppTest:
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert "read access" not in " ".join(c.value for c in at.caption), "the sessions need the edit role"
    return at


def _pick(at: AppTest, name: str) -> None:
    ids = {s.name: s.id for s in open_store().scan().saved}
    at.selectbox(key="manage_pick").set_value(ids[name]).run()
    assert not at.exception, [e.value for e in at.exception]


def _click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _save_over(at: AppTest, name: str, batch: int) -> AppTest:
    """Set Concurrent sequences, type the name, tick Overwrite, click Save."""
    at.sidebar.number_input(key="_w_batch").set_value(batch).run()
    assert qp(at)["batch"] == str(batch)
    at.text_input(key="save_name").input(name)
    at.checkbox(key="save_overwrite").check()
    return _click(at, "save_button")


def _stored(name: str) -> tuple[int, int]:
    got = open_store().get(name)
    return got.version, got.scenario.workload.batch


def test_save_over_a_version_someone_saved_since_is_refused_and_nothing_is_lost(shared_store):
    store = open_store()
    store.save("plan", SMALL.model_copy(update={"workload": Workload(batch=8)}))
    a, b = _session(), _session()
    for at in (a, b):  # both open plan: version 1, batch 8
        _pick(at, "plan")
        _click(at, "open_button")
        assert at.success[0].value == "Opened “plan” (version 1)."
        assert qp(at)["batch"] == "8"

    _save_over(a, "plan", 100)  # A saves first
    assert not a.error and a.success[0].value == "Saved “plan”."
    assert _stored("plan") == (2, 100)

    _save_over(b, "plan", 200)  # B saves over the version it opened: refused
    assert not b.success
    assert _plain(b.error[0].value) == (
        "Not saved: 'plan' changed since you opened it (saved again by someone else, now version 2): nothing was "
        "saved; open it again to see their change, or save yours under another name."
    )
    assert _stored("plan") == (2, 100)  # A's change stands

    # B sees both: theirs as saved (version 2, batch 100) beside its own (200), and the ways on
    diff = next(d.value for d in b.dataframe if "field" in d.value.columns)
    assert diff.set_index("field").loc["concurrent sequences (batch)"].to_dict() == {"saved": "100", "yours": "200"}
    assert list(diff["field"]) == ["concurrent sequences (batch)"]  # nothing else differs
    labels = {btn.key: btn.label for btn in b.button}
    assert labels["conflict_replace"] == "Replace theirs (version 2) with yours"
    assert {"conflict_open", "conflict_save_new", "conflict_cancel"} <= set(labels)

    _save_over(a, "plan", 150)  # A saves again while B compares: version 3
    assert a.success[0].value == "Saved “plan”."
    _click(b, "conflict_replace")  # B's replace is bound to version 2, the one it was shown: refused
    assert _plain(b.error[0].value).startswith("Not saved: 'plan' changed since you opened it (saved again by ")
    assert _stored("plan") == (3, 150)
    assert next(btn for btn in b.button if btn.key == "conflict_replace").label == (
        "Replace theirs (version 3) with yours"  # the panel now shows version 3
    )

    b.text_input(key="conflict_new_name").input("plan (B)")
    _click(b, "conflict_save_new")  # B keeps its own as a new scenario
    assert b.success[0].value == "Saved “plan (B)”."
    assert _stored("plan (B)") == (1, 200) and _stored("plan") == (3, 150)
    assert not any(btn.key == "conflict_replace" for btn in b.button)  # resolved

    # a session that never opened plan cannot save over it either: it is shown both first
    c = _session()
    _save_over(c, "plan", 300)
    assert _plain(c.error[0].value) == (
        "Not saved: “plan” is saved already and this session has not opened it: compare below, then open theirs, "
        "save yours under another name, or replace theirs."
    )
    assert _stored("plan") == (3, 150)
    _click(c, "conflict_replace")  # an explicit choice, made after seeing version 3
    assert c.success[0].value == "Saved “plan” over version 3 (now version 4)."
    assert _stored("plan") == (4, 300)

    _click(a, "open_button")  # A's Open is bound to the version it last saw (3): it is told, not handed v4
    assert _plain(a.error[0].value).startswith("Not opened: 'plan' changed since you opened it")
    _click(a, "open_button")  # the page has reloaded: now it opens version 4
    assert a.success[0].value == "Opened “plan” (version 4)." and qp(a)["batch"] == "300"
    assert sorted(s.name for s in store.list()) == ["plan", "plan (B)"]


def test_a_selection_deleted_elsewhere_leaves_nothing_selected(shared_store):
    store = open_store()
    for n in ("alpha", "beta", "gamma"):
        store.save(n, SMALL)
    a, b = _session(), _session()
    _pick(a, "beta")
    _pick(b, "beta")
    _click(b, "delete_button")  # B deletes what A has selected
    assert b.success[0].value == "Deleted “beta”."
    assert b.selectbox(key="manage_pick").value is None  # B's own selection is cleared too

    a.text_input(key="rename_to").input("beta2").run()  # A's next run (Enter in "Rename to")
    assert _plain(a.warning[0].value) == (
        "“beta”, which you had selected, is no longer saved: someone else deleted it. Nothing is selected now: "
        "pick a saved scenario to open, rename or delete it."
    )
    assert a.selectbox(key="manage_pick").value is None
    for key in ("open_button", "rename_button", "delete_button"):
        assert a.button(key=key).disabled, key
    assert sorted(s.name for s in store.list()) == ["alpha", "gamma"]  # nothing else was touched


def test_a_selection_renamed_elsewhere_is_announced_and_a_click_on_the_old_name_refused(shared_store):
    store = open_store()
    for n in ("delta", "epsilon"):
        store.save(n, SMALL)
    a, b = _session(), _session()
    _pick(a, "delta")
    _pick(b, "delta")
    b.text_input(key="rename_to").input("delta2")
    _click(b, "rename_button")
    assert b.success[0].value == "Renamed “delta” to “delta2”."

    a.text_input(key="rename_to").input("delta3").run()  # A presses Enter: the page reruns
    assert _plain(a.info[0].value).startswith("“delta” was renamed to “delta2” by someone else since this page")
    _click(a, "rename_button")  # a click on what A saw before: refused, the teammate's rename stands
    assert _plain(a.error[0].value) == (
        "Not renamed: 'delta' changed since you opened it (now 'delta2'): reload it and try again."
    )
    assert sorted(s.name for s in store.list()) == ["delta2", "epsilon"]
    assert not a.info  # said once
    _click(a, "rename_button")  # now A knows: the rename applies to delta2
    assert a.success[0].value == "Renamed “delta2” to “delta3”."
    assert sorted(s.name for s in store.list()) == ["delta3", "epsilon"]
