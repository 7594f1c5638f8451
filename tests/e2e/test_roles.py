"""Two browser sessions with different roles on one server behind a (simulated) sign-in proxy (issue 21).

The server runs with PLANNER_AUTH=header; each browser context sends the header the proxy's sign-in snippet
sets (``X-Forwarded-User``, deploy/nginx.conf.template) on every request, the websocket upgrade included,
which is where Streamlit reads ``st.context.headers``. The reader can open a saved scenario but cannot save,
rename or delete; the editor can; a reader who adds an editor's name in a second user header gets nothing
(issue 37). serve.py on 0.0.0.0 with no sign-in settings keeps saved scenarios read-only (SEC-2). What reaches
a replica through the real proxy is tests/integration/test_proxy_forged_headers.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from core.deployment.specs import Scenario
from core.store import SQLiteStore
from tests.e2e.conftest import ARTIFACTS, ROOT, Server, _free_port, wait_rendered

pytestmark = pytest.mark.e2e

EDITOR, READER = "alice@example.com", "rob@example.com"


def _button(main, key: str):
    """The st.button with that key (Streamlit marks a keyed widget's container with the class st-key-<key>; a
    button with a tooltip is drawn twice, once hidden)."""
    return main.locator(f".st-key-{key} button").filter(visible=True)


def _shown(address: str) -> re.Pattern:
    """An e-mail address as the page shows it: user text is escaped, so a word joiner (U+2060, invisible)
    follows the @ and stops the address becoming a mailto: link."""
    return re.compile(re.escape(address).replace("@", "@\u2060?"))


@pytest.fixture(scope="module")
def proxied():
    s = Server(extra_env={"PLANNER_AUTH": "header", "PLANNER_EDITORS": EDITOR, "PLANNER_AUTH_HEADER": ""})
    yield s
    s.stop()


def test_a_reader_cannot_change_or_delete_and_an_editor_can(proxied, new_page):
    from playwright.sync_api import expect

    store = SQLiteStore(ARTIFACTS / f"scenarios-{proxied.port}.db")  # the server's PLANNER_DB
    store.save("baseline", Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm", gpus_per_node=4))

    # the server says at startup who may change what (serve.py, core.store.auth.access_summary)
    assert (
        "Saved scenarios: sign-in by the user in the X-Forwarded-User header, set by the sign-in proxy in front"
        in proxied.log.read_text()
    )
    reader = new_page(extra_http_headers={"X-Forwarded-User": READER})
    editor = new_page(extra_http_headers={"X-Forwarded-User": EDITOR})
    for page in (reader, editor):
        page.goto(f"{proxied.url}/Compare?model=mixtral-8x7b&gpu=h100-sxm&nodes=1&gpn=2&w=bf16")  # quick to compare
        wait_rendered(page)
    main = {p: p.get_by_test_id("stMain") for p in (reader, editor)}

    # the reader: told why, every changing control disabled, opening still works
    expect(main[reader]).to_contain_text(re.compile("Signed in as " + _shown(READER).pattern + ", with read access"))
    for key in ("save_button", "rename_button", "delete_button"):
        expect(_button(main[reader], key)).to_be_disabled()
    expect(main[reader].get_by_label("Name", exact=True)).to_be_disabled()
    expect(_button(main[reader], "open_button")).to_be_enabled()
    _button(main[reader], "open_button").click()
    reader.wait_for_url(re.compile(r"gpn=4"))  # the saved scenario is now the reader's
    assert [s.name for s in store.list()] == ["baseline"]

    # the editor, at the same time: renames, then deletes
    expect(main[editor]).to_contain_text(re.compile("Signed in as " + _shown(EDITOR).pattern + ", with edit access"))
    main[editor].get_by_label("Rename to").fill("baseline v2")
    main[editor].get_by_label("Rename to").press("Enter")
    wait_rendered(editor)
    _button(main[editor], "rename_button").click()
    expect(editor.get_by_test_id("stAlertContentSuccess")).to_contain_text("Renamed “baseline” to “baseline v2”")
    assert [s.name for s in store.list()] == ["baseline v2"]
    _button(main[editor], "delete_button").click()
    expect(editor.get_by_test_id("stAlertContentSuccess")).to_contain_text("Deleted “baseline v2”")
    assert store.list() == []

    assert reader.errors == [] and editor.errors == []
    assert reader.get_by_test_id("stException").count() == 0 and editor.get_by_test_id("stException").count() == 0


def test_a_second_user_header_that_disagrees_gets_nothing(proxied, new_page):
    from playwright.sync_api import expect

    forger = new_page(extra_http_headers={"X-Forwarded-User": READER, "X-Auth-Request-Email": EDITOR})
    forger.goto(f"{proxied.url}/Compare?model=mixtral-8x7b&gpu=h100-sxm&nodes=1&gpn=2&w=bf16")
    wait_rendered(forger)
    main = forger.get_by_test_id("stMain")
    expect(main.get_by_test_id("stAlertContentError")).to_contain_text(
        "Saved scenarios are closed to this request: X-Forwarded-User names "
    )
    expect(main.get_by_test_id("stAlertContentError")).to_contain_text(
        "carried a second user header that disagrees (X-Auth-Request-Email)"
    )
    for key in ("save_button", "rename_button", "delete_button", "open_button"):
        assert _button(main, key).count() == 0, key
    assert forger.errors == [] and forger.get_by_test_id("stException").count() == 0


@pytest.fixture(scope="module")
def on_every_interface():
    """serve.py as `make run ADDRESS=0.0.0.0` starts it, with no sign-in settings (SEC-2 of probe 3)."""
    port = _free_port()
    log = ARTIFACTS / f"server-{port}.log"
    db = ARTIFACTS / f"scenarios-{port}.db"
    ARTIFACTS.mkdir(exist_ok=True)
    db.unlink(missing_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PLANNER_AUTH") and k not in ("PLANNER_EDITORS", "PLANNER_READERS")
    }
    env.update(PLANNER_DB=str(db), PLANNER_VALIDATE_CHARTS="0")
    argv = [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.headless", "true"]
    argv += ["--server.address", "0.0.0.0", "--server.port", str(port), "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            healthy = urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
            if healthy and "Warmed up" in log.read_text():
                break
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)  # polling the server's health endpoint and log, not waiting for a result
    yield url, log, db
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_no_sign_in_on_every_interface_is_read_only(on_every_interface, new_page):
    from playwright.sync_api import expect

    url, log, db = on_every_interface
    assert (
        "Saved scenarios: read-only for everyone: this server listens on 0.0.0.0 (every network interface) with "
        "no sign-in (PLANNER_AUTH unset)" in log.read_text()
    )
    SQLiteStore(db).save("team-draft", Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm"))
    page = new_page()
    page.goto(f"{url}/Compare?model=mixtral-8x7b&gpu=h100-sxm&nodes=1&gpn=2&w=bf16")
    wait_rendered(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Saved scenarios are read-only: this server listens on 0.0.0.0")
    expect(main).to_contain_text("PLANNER_AUTH=none")
    for key in ("save_button", "rename_button", "delete_button"):
        expect(_button(main, key)).to_be_disabled()
    expect(_button(main, "open_button")).to_be_enabled()  # reading still works
    assert [s.name for s in SQLiteStore(db).list()] == ["team-draft"]
    assert page.errors == [] and page.get_by_test_id("stException").count() == 0
