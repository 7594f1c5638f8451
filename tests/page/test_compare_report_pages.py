"""AppTest runs of the Compare & saved page and the Report page."""

import re
import sqlite3

import pytest

from core.deployment.specs import Scenario
from core.store import open_store
from tests.page._util import qp, run_page

SMALL = Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm")  # quick to compare
QUICK = {"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpn": "2", "w": "bf16"}  # a current scenario quick to compare


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_DB", str(tmp_path / "scenarios.db"))
    for var in ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "scenarios.db"


def _pick(at, name: str) -> None:
    """Choose a saved scenario in the manage box (its options are ids, shown by name)."""
    ids = {s.name: s.id for s in open_store().scan().saved}
    at.selectbox(key="manage_pick").set_value(ids[name]).run()


def _listed(at) -> set[str]:
    return set(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"])


def _plain(markdown: str) -> str:
    """What a user reads: the Markdown escapes (backslashes, word joiners) of user text taken out."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def _texts(at) -> str:
    """Every message, caption and Markdown text on the page, as read."""
    kinds = ("error", "warning", "info", "success", "caption", "markdown")
    return "\n".join(_plain(e.value) for kind in kinds for e in at.get(kind))


def test_save_rename_open_compare_delete():
    at = run_page("pages/9_Compare.py", timeout=120)
    assert "Nothing saved yet" in at.info[0].value
    at.text_input(key="save_name").input("baseline").run()
    at.button(key="save_button").click().run()
    assert at.success[0].value == "Saved “baseline”."
    at.text_input(key="save_name").input("baseline").run()
    at.button(key="save_button").click().run()
    assert "a scenario named 'baseline' exists" in at.error[0].value
    at.text_input(key="save_name").input("BASELINE").run()  # a look-alike name is refused, naming the saved one
    at.button(key="save_button").click().run()
    assert "'BASELINE' is too close to the saved scenario 'baseline'" in _plain(at.error[0].value)
    at.sidebar.selectbox(key="_w_gpu").set_value("b200").run()
    at.text_input(key="save_name").input("on b200").run()
    at.button(key="save_button").click().run()
    saved = next(d.value for d in at.dataframe if "name" in d.value.columns)
    assert set(saved["name"]) == {"baseline", "on b200"}
    # compare: the current scenario beside the chosen saved ones
    at.multiselect(key="compare_pick").set_value(["baseline"]).run()
    table = at.dataframe[-1].value
    assert list(table.columns) == ["current scenario", "baseline"]
    assert table.loc["GPUs", "baseline"].endswith("H200 SXM 141GB") and "B200" in table.loc["GPUs", "current scenario"]
    # open the saved one: the scenario (and the URL) switch back to H200
    _pick(at, "baseline")
    at.button(key="open_button").click().run()
    assert qp(at)["gpu"] == "h200"
    _pick(at, "on b200")
    at.text_input(key="rename_to").input("b200 x8").run()
    at.button(key="rename_button").click().run()
    names = set(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"])
    assert names == {"baseline", "b200 x8"}
    _pick(at, "b200 x8")
    at.button(key="delete_button").click().run()
    assert set(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"]) == {"baseline"}


def test_a_stale_delete_or_rename_from_another_session_says_so_and_changes_nothing():
    store = open_store()
    for n in ("alice", "bob", "carol"):
        store.save(n, SMALL)
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    _pick(at, "bob")  # session A selects bob ...
    open_store().delete("bob")  # ... session B deletes it ...
    at.button(key="delete_button").click().run()  # ... and A clicks Delete
    assert not at.exception
    assert _plain(at.error[0].value) == "Not deleted: 'bob' was deleted by someone else since you read it."
    assert sorted(s.name for s in store.list()) == ["alice", "carol"]  # (it used to delete carol)
    assert _listed(at) == {"alice", "carol"}

    _pick(at, "carol")
    at.text_input(key="rename_to").input("robert")  # typed, not yet sent
    open_store().rename("carol", "caroline")  # B renames carol meanwhile
    at.button(key="rename_button").click().run()
    assert _plain(at.error[0].value) == (
        "Not renamed: 'carol' changed since you opened it (now 'caroline'): reload it and try again."
    )
    assert sorted(s.name for s in store.list()) == ["alice", "caroline"]
    at.button(key="rename_button").click().run()  # the page has reloaded: caroline is what A now sees
    assert sorted(s.name for s in store.list()) == ["alice", "robert"]

    _pick(at, "alice")
    open_store().delete("alice")  # B deletes what A has selected; A's next run says so
    at.text_input(key="rename_to").input("x").run()
    assert _plain(at.warning[0].value) == (
        "“alice”, which you had selected, is no longer saved: someone else deleted it. "
        "Nothing is selected now: pick a saved scenario to open, rename or delete it."
    )
    assert _listed(at) == {"robert"}
    assert at.selectbox(key="manage_pick").value is None  # not robert: a retry click cannot reach him
    assert all(at.button(key=k).disabled for k in ("open_button", "rename_button", "delete_button"))
    at.text_input(key="rename_to").input("y").run()  # and it stays so until one is picked
    assert at.selectbox(key="manage_pick").value is None and at.button(key="delete_button").disabled
    assert not at.warning
    _pick(at, "robert")
    assert not at.button(key="delete_button").disabled


def test_a_second_click_on_delete_cannot_reach_the_next_scenario():
    store = open_store()
    for n in ("older", "newer"):
        store.save(n, SMALL)
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert at.selectbox(key="manage_pick").value == store.get("newer").id  # a fresh page shows the newest
    at.button(key="delete_button").click().run()
    assert at.success[0].value == "Deleted “newer”."
    assert at.selectbox(key="manage_pick").value is None and at.button(key="delete_button").disabled
    assert [s.name for s in store.list()] == ["older"]


def test_a_save_over_a_version_saved_elsewhere_shows_both_and_open_theirs_takes_theirs():
    store = open_store()
    store.save("plan", SMALL)  # 8 GPUs per node
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    _pick(at, "plan")
    at.button(key="open_button").click().run()
    assert qp(at)["gpn"] == "8"
    store.save("plan", SMALL.model_copy(update={"gpus_per_node": 4}), overwrite=True)  # a script saves over it
    at.text_input(key="save_name").input("plan")
    at.checkbox(key="save_overwrite").check()
    at.button(key="save_button").click().run()
    assert _plain(at.error[0].value).startswith(
        "Not saved: 'plan' changed since you opened it (saved again by someone else, now version 2)"
    )
    diff = next(d.value for d in at.dataframe if "field" in d.value.columns)
    assert diff.to_dict("records") == [{"field": "GPUs per node", "saved": "4", "yours": "8"}]
    at.button(key="conflict_open").click().run()  # take theirs
    assert at.success[0].value == "Opened “plan” (version 2)." and qp(at)["gpn"] == "4"
    assert not any(b.key == "conflict_open" for b in at.button)  # the comparison is closed
    at.button(key="save_button").click().run()  # saving over it now goes through version 2
    assert at.success[0].value == "Saved “plan”."
    assert store.get("plan").version == 3 and store.get("plan").scenario.gpus_per_node == 4

    at.button(key="save_button").click().run()  # the session's own save is no news to it: again, version 4
    assert at.success[0].value == "Saved “plan”." and store.get("plan").version == 4 and not at.info


def test_a_bad_row_is_listed_as_bad_deletable_and_the_rest_still_work(_store):
    store = open_store()
    store.save("good", SMALL)
    store.save("broken", SMALL)
    store.save("stale config", SMALL, model_config_json='{"model_type": "no-such-family"}')
    with sqlite3.connect(_store) as conn:
        conn.execute("UPDATE scenarios SET scenario_json = '{not json' WHERE name = 'broken'")
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert _listed(at) == {"good"}  # the page works, with the good one
    warning = _plain(at.warning[0].value)
    assert warning.startswith("2 saved scenarios cannot be used")
    assert "“broken”: saved scenario 'broken' is corrupt: its JSON does not parse" in warning
    assert "“stale config”: its imported model config no longer imports: config.json: architecture " in warning
    _pick(at, "good")
    at.button(key="open_button").click().run()
    assert qp(at)["gpn"] == "8"  # the saved one is now current (the URL had 2)
    next(b for b in at.button if b.label == "Delete “broken”").click().run()
    assert at.success[0].value == "Deleted “broken”."
    assert store.scan().bad == [] and sorted(s.name for s in store.scan().saved) == ["good", "stale config"]
    next(b for b in at.button if b.label == "Delete “stale config”").click().run()
    assert [s.name for s in store.scan().saved] == ["good"] and not at.warning


def test_an_old_row_with_a_name_now_refused_still_lists_renames_and_deletes(_store):
    store = open_store()
    store.save("beta", SMALL)
    with sqlite3.connect(_store) as conn:  # saved before the rule on invisible characters
        for old in ("beta\u3164", "\u2800\u2800"):
            conn.execute(
                "INSERT INTO scenarios (name, scenario_json, id) VALUES (?, ?, ?)",
                (old, SMALL.model_dump_json(), old.encode().hex()),
            )
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert _listed(at) == {"beta", "beta\u3164", "\u2800\u2800"}
    at.text_input(key="save_name").input("beta\u2800").run()  # a new one is refused, naming the character
    at.button(key="save_button").click().run()
    assert "(U+2800 BRAILLE PATTERN BLANK)" in _plain(at.error[0].value)
    _pick(at, "beta\u3164")
    at.text_input(key="rename_to").input("beta old")
    at.button(key="rename_button").click().run()
    assert at.success[0].value == "Renamed “beta\u3164” to “beta old”."
    _pick(at, "\u2800\u2800")
    at.button(key="delete_button").click().run()
    assert _listed(at) == {"beta", "beta old"} == {s.name for s in store.list()}


def test_a_busy_store_is_a_message_and_saving_again_works(_store):
    open_store().save("kept", SMALL)
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    holder = sqlite3.connect(_store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the store
    try:
        at.text_input(key="save_name").input("new")
        at.button(key="save_button").click().run()
        assert not at.exception
        assert _plain(at.error[0].value).startswith("Not saved: the scenario store is busy")
        assert _plain(at.error[0].value).endswith("try again in a moment.")
        assert _listed(at) == {"kept"}  # the list still shows
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    at.button(key="save_button").click().run()  # the retry
    assert at.success[0].value == "Saved “new”."


def test_a_postgres_password_is_never_shown(monkeypatch):
    monkeypatch.setenv("PLANNER_DB", "postgresql://planner:s3cr%t@pa55@127.0.0.1:1/planner")  # unencoded % and @
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    text = _texts(at)
    assert "The scenario store is not available: cannot reach the PostgreSQL scenario store at " in text
    assert "postgresql://planner:***@127.0.0.1:1/planner" in text
    assert "s3cr" not in text and "pa55" not in text


@pytest.fixture
def headers(monkeypatch):
    """The request headers the page sees (AppTest sends none; the browser test sends real ones)."""
    import ui.auth

    sent: dict[str, str] = {}
    monkeypatch.setattr(ui.auth, "request_headers", lambda: sent)
    monkeypatch.setenv("PLANNER_AUTH", "header")
    monkeypatch.setenv("PLANNER_EDITORS", "alice@example.com")
    return sent


def test_a_reader_opens_and_compares_but_cannot_change(headers):
    open_store().save("baseline", SMALL)
    headers["X-Forwarded-User"] = "rob@example.com"
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    for key in ("save_button", "rename_button", "delete_button"):
        assert at.button(key=key).disabled, key
    assert (
        "Signed in as rob@example.com, with read access: saving, renaming and deleting need the edit role "
        "(PLANNER_EDITORS)." in _texts(at)
    )
    _pick(at, "baseline")
    at.button(key="open_button").click().run()  # opening works: 8 GPUs per node, as saved (the URL had 2)
    assert qp(at)["gpn"] == "8"
    at.multiselect(key="compare_pick").set_value(["baseline"]).run()  # comparing works
    assert list(at.dataframe[-1].value.columns) == ["current scenario", "baseline"]
    assert [s.name for s in open_store().list()] == ["baseline"]


def test_an_editor_can_change_and_a_stranger_sees_nothing(headers):
    open_store().save("baseline", SMALL)
    headers["X-Forwarded-User"] = "Alice@Example.com"  # e-mail addresses compare without case
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert not any(at.button(key=k).disabled for k in ("save_button", "rename_button", "delete_button"))
    assert "Signed in as Alice@Example.com, with edit access." in _texts(at)
    _pick(at, "baseline")
    at.button(key="delete_button").click().run()
    assert open_store().list() == []

    headers.clear()  # a request that did not come through the sign-in proxy
    at = run_page("pages/9_Compare.py", timeout=120, **QUICK)
    assert _plain(at.error[0].value).startswith("Saved scenarios need a signed-in user: no X-Forwarded-User")
    assert not at.dataframe and not at.button


def test_streamlit_login_roles(monkeypatch):
    """PLANNER_AUTH=oidc: st.user decides (AppTest seeds it); nobody signed in gets a Sign in button only."""
    from streamlit.testing.v1 import AppTest

    from tests.page._util import ROOT

    monkeypatch.setenv("PLANNER_AUTH", "oidc")
    monkeypatch.setenv("PLANNER_EDITORS", "alice@example.com")
    at = AppTest.from_file(str(ROOT / "pages/9_Compare.py"), default_timeout=120)
    at.query_params.update(QUICK)
    at.user = {"is_logged_in": False}
    at.run()
    assert _plain(at.error[0].value) == "Saved scenarios need a signed-in user: sign in to open them."
    assert [b.label for b in at.button] == ["Sign in"] and not at.dataframe
    at.user = {"is_logged_in": True, "email": "alice@example.com", "name": "Alice"}
    at.run()
    assert "Signed in as alice@example.com, with edit access." in _texts(at)
    assert not at.button(key="save_button").disabled and at.button(key="sign_out").label == "Sign out"


def test_report_page_offers_both_documents():
    at = run_page("pages/10_Report.py", timeout=120, model="mixtral-8x7b", gpu="h100-sxm", gpn="2", w="bf16")
    buttons = at.get("download_button")
    assert len(buttons) == 2
    text = " ".join(m.value for m in at.markdown)
    assert "# Mixtral-8x7B on 2 × NVIDIA H100 SXM5 80GB" in text and "**Verdict:** fits" in text
