"""core.store.auth: roles for saved scenarios in a shared deployment (issues 21 and 37): identity from exactly one
header, a request whose user headers disagree gets nothing, and no sign-in beyond loopback is read-only."""

from __future__ import annotations

import pytest

from core.deployment.specs import Scenario
from core.store import ScenarioStore, SQLiteStore
from core.store.auth import (
    DEFAULT_USER_HEADER,
    USER_HEADERS,
    AuthConfig,
    Identity,
    access_summary,
    auth_config,
    identify,
    is_loopback,
)
from core.store.guard import GuardedStore, NotAllowedError

HEADER = {"PLANNER_AUTH": "header", "PLANNER_EDITORS": "alice@example.com, Bob"}
LOCAL = "127.0.0.1"


def test_no_settings_on_loopback_is_a_single_editor():
    config = auth_config({}, bound_address=LOCAL)
    assert config == AuthConfig(mode="none", header="X-Forwarded-User", editors=frozenset(), readers=None)
    who = identify(config)
    assert who.role == "edit" and who.user is None and who.can_edit and who.can_read
    assert who.reason == "no sign-in is configured (PLANNER_AUTH): everyone who reaches this server can edit"
    assert auth_config({"PLANNER_AUTH": " NONE "}, bound_address=LOCAL).mode == "none"


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost", "::ffff:127.0.0.1", "unix:///s"]
)
def test_loopback_addresses(address):
    assert is_loopback(address)
    assert identify(auth_config({}, bound_address=address)).role == "edit"


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        (None, "every network interface (server.address unset)"),
        ("", "every network interface (server.address unset)"),
        ("0.0.0.0", "0.0.0.0 (every network interface)"),
        ("::", ":: (every network interface)"),
        ("192.168.1.20", "192.168.1.20"),
        ("fd00::5", "fd00::5"),
        ("planner.lan", "planner.lan"),
        ("128.0.0.1", "128.0.0.1"),
    ],
)
def test_no_sign_in_beyond_loopback_is_read_only(address, shown):
    assert not is_loopback(address)
    config = auth_config({}, bound_address=address)
    who = identify(config)
    assert (who.user, who.role, who.can_read, who.can_edit) == (None, "read", True, False)
    # why, and the ways out
    assert who.reason.startswith(
        f"saved scenarios are read-only: this server listens on {shown} with no sign-in (PLANNER_AUTH unset)"
    )
    for way in ("PLANNER_AUTH=header", "PLANNER_AUTH=oidc", "PLANNER_EDITORS", "127.0.0.1", "PLANNER_AUTH=none"):
        assert way in who.reason, way
    line = access_summary(config)
    assert line.startswith(f"Saved scenarios: read-only for everyone: this server listens on {shown} with no sign-in")
    assert "PLANNER_AUTH=none" in line
    # the operator's explicit choice: open editing on any address
    opened = auth_config({"PLANNER_AUTH": "none"}, bound_address=address)
    assert identify(opened).role == "edit" and opened.read_only_on is None
    assert access_summary(opened).startswith("Saved scenarios: everyone who reaches this server can open, save")
    # sign-in modes do not care where the server listens
    assert identify(auth_config(HEADER, bound_address=address), headers={"X-Forwarded-User": "bob"}).role == "edit"


def test_access_summary_for_sign_in_modes():
    line = access_summary(auth_config({**HEADER, "PLANNER_READERS": "carol"}, bound_address="0.0.0.0"))
    assert line == (
        "Saved scenarios: sign-in by the user in the X-Forwarded-User header, set by the sign-in proxy in front "
        "(PLANNER_AUTH=header); editors: 2 listed in PLANNER_EDITORS; readers: 1 listed in PLANNER_READERS (and "
        "the editors)."
    )
    line = access_summary(auth_config({"PLANNER_AUTH": "oidc", "PLANNER_EDITORS": "*"}))
    assert "Streamlit's login, [auth] in .streamlit/secrets.toml" in line and "editors: every signed-in user" in line


def test_settings_are_parsed():
    config = auth_config({**HEADER, "PLANNER_READERS": "carol\tdave", "PLANNER_AUTH_HEADER": " X-Remote-User "})
    assert config.mode == "header"
    assert config.header == "X-Remote-User"
    assert config.editors == {"alice@example.com", "bob"}  # case-folded
    assert config.readers == {"carol", "dave"}
    assert auth_config({"PLANNER_AUTH": "oidc"}).readers is None  # unset: every signed-in user reads
    assert auth_config({"PLANNER_AUTH": "header"}).header == DEFAULT_USER_HEADER == "X-Forwarded-User"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLANNER_AUTH": "ldap"}, "PLANNER_AUTH must be one of none, header, oidc (got 'ldap')"),
        ({"PLANNER_AUTH": "header", "PLANNER_AUTH_HEADER": "X/User"}, "PLANNER_AUTH_HEADER holds a header name"),
        ({"PLANNER_EDITORS": "alice"}, "there is no sign-in (PLANNER_AUTH=unset): set PLANNER_AUTH=header"),
        ({"PLANNER_AUTH": "none", "PLANNER_READERS": "bob"}, "there is no sign-in (PLANNER_AUTH=none)"),
        ({"PLANNER_AUTH": 3}, "PLANNER_AUTH must be text"),
    ],
)
def test_wrong_settings_name_the_variable(env, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        auth_config(env, bound_address=LOCAL)


@pytest.mark.parametrize(
    "value", ["X-Forwarded-Email, X-Forwarded-User", "X-Forwarded-User,", "X-Forwarded-User X-Forwarded-Email"]
)
def test_one_header_only(value):
    with pytest.raises(ValueError) as e:
        auth_config({"PLANNER_AUTH": "header", "PLANNER_AUTH_HEADER": value})
    assert str(e.value).startswith("PLANNER_AUTH_HEADER names one header, the one the sign-in proxy sets")
    assert f"not a list (got {value.strip()!r})" in str(e.value)


def test_header_roles():
    config = auth_config(HEADER)
    editor = identify(config, headers={"x-forwarded-user": "Alice@Example.com"})  # header names without case
    assert (editor.user, editor.role) == ("Alice@Example.com", "edit")
    assert editor.reason == "signed in as Alice@Example.com, with edit access"
    reader = identify(config, headers={"X-Forwarded-User": "rob@example.com"})
    assert (reader.role, reader.can_read, reader.can_edit) == ("read", True, False)
    assert reader.reason.endswith(
        "with read access: saving, renaming and deleting need the edit role (PLANNER_EDITORS)"
    )
    # a header that agrees (same user, other case) is fine
    both = identify(config, headers={"X-Forwarded-User": "bob", "X-Auth-Request-User": "BOB"})
    assert (both.user, both.role) == ("bob", "edit")
    # (name, value) pairs, as ui.auth passes them, work the same
    assert identify(config, headers=[("X-Forwarded-User", "bob"), ("Host", "x")]).role == "edit"


@pytest.mark.parametrize("other", [h for h in USER_HEADERS if h != "X-Forwarded-User"])
def test_a_second_user_header_that_disagrees_gets_no_access(other):
    config = auth_config(HEADER)  # alice@example.com edits
    # rob, a reader, adds an editor's name in another header: the session gets nothing
    for headers in (
        {"X-Forwarded-User": "rob@example.com", other: "alice@example.com"},
        [("x-forwarded-user", "rob@example.com"), (other.upper(), "alice@example.com")],
    ):
        who = identify(config, headers=headers)
        assert (who.user, who.role, who.can_read) == (None, None, False)
        assert who.reason == (
            "saved scenarios are closed to this request: X-Forwarded-User names rob@example.com, but the "
            f"request carried a second user header that disagrees ({other}). Only the sign-in proxy may set user "
            "headers, and it must drop the others that clients send (deploy/nginx.conf.template); the role comes "
            "from X-Forwarded-User alone (PLANNER_AUTH_HEADER)"
        )
        assert "alice" not in who.reason  # the other header's value is never echoed
    # the other way round too: the app never guesses which of two names is right
    who = identify(config, headers={"X-Forwarded-User": "alice@example.com", other: "rob@example.com"})
    assert who.role is None and "rob" not in who.reason


def test_every_disagreeing_header_is_named_in_request_order():
    who = identify(
        auth_config(HEADER),
        headers={"X-Forwarded-User": "rob", "Remote-User": "alice@example.com", "X-Forwarded-Email": "bob"},
    )
    assert who.role is None and "disagrees (Remote-User and X-Forwarded-Email)" in who.reason


def test_the_configured_header_twice_with_two_users_gets_no_access():
    config = auth_config(HEADER)
    who = identify(config, headers=[("X-Forwarded-User", "rob"), ("x-forwarded-user", "alice@example.com")])
    assert who.role is None and who.reason.startswith(
        "saved scenarios are closed to this request: it carried the X-Forwarded-User header more than once, "
        "naming different users"
    )
    assert identify(config, headers=[("X-Forwarded-User", "bob"), ("X-Forwarded-User", "Bob")]).role == "edit"


def test_only_the_configured_header_names_the_user():
    custom = auth_config({"PLANNER_AUTH": "header", "PLANNER_AUTH_HEADER": "X-Remote-User"})
    alone = identify(custom, headers={"X-Forwarded-User": "alice"})  # the default header does not count
    assert alone.role is None and alone.reason.startswith(
        "saved scenarios need a signed-in user: no X-Remote-User header came with this request"
    )
    assert identify(custom, headers={"X-Remote-User": "alice"}).role == "read"
    # a header nobody knows as a user header is ignored, whatever it says
    assert identify(custom, headers={"X-Remote-User": "alice", "X-Corp-Name": "bob"}).user == "alice"


@pytest.mark.parametrize(
    ("headers", "what"),
    [
        ({}, "no"),
        ({"X-Forwarded-User": "  "}, "no"),
        ({"X-Forwarded-Email": "alice@example.com"}, "no"),  # another header alone names nobody
        ({"X-Forwarded-User": "a\nb"}, "an unusable"),
        ({"X-Forwarded-User": "x" * 321}, "an unusable"),
    ],
)
def test_no_usable_user_header_is_no_access(headers, what):
    who = identify(auth_config(HEADER), headers=headers)
    assert who.role is None and not who.can_read and who.user is None
    assert who.reason == (
        f"saved scenarios need a signed-in user: {what} X-Forwarded-User header came with this request "
        "(PLANNER_AUTH=header reads the user from that one header, which the sign-in proxy in front of this "
        "server must set)"
    )


def test_reader_and_editor_lists():
    config = auth_config({**HEADER, "PLANNER_READERS": "carol"})
    assert identify(config, headers={"X-Forwarded-User": "carol"}).role == "read"
    assert identify(config, headers={"X-Forwarded-User": "bob"}).role == "edit"  # editors always read
    stranger = identify(config, headers={"X-Forwarded-User": "mallory"})
    assert (
        stranger.role is None
        and stranger.reason == "signed in as mallory, who is not in PLANNER_READERS or PLANNER_EDITORS"
    )
    everyone = auth_config({"PLANNER_AUTH": "header", "PLANNER_EDITORS": "*"})
    assert identify(everyone, headers={"X-Forwarded-User": "anyone"}).role == "edit"


def test_oidc_roles():
    config = auth_config({"PLANNER_AUTH": "oidc", "PLANNER_EDITORS": "alice@example.com"})
    assert identify(config, user={"is_logged_in": True, "email": "alice@example.com"}).role == "edit"
    assert identify(config, user={"is_logged_in": True, "sub": "1234"}).role == "read"
    for user in ({"is_logged_in": False, "email": "alice@example.com"}, {"email": "alice@example.com"}, {}):
        who = identify(config, user=user)  # st.user without a login
        assert who.role is None and who.reason == "saved scenarios need a signed-in user: sign in to open them"


PLAIN = Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm")


def test_a_reader_is_refused_every_write_server_side(tmp_path):
    inner = SQLiteStore(tmp_path / "s.db")
    ref = inner.save("kept", PLAIN).ref
    reader = GuardedStore(inner, Identity("rob", "read", "signed in as rob, with read access"))
    assert isinstance(reader, ScenarioStore)
    assert [s.name for s in reader.list()] == ["kept"] and reader.get_ref(ref).name == "kept"
    assert reader.get("kept").scenario == PLAIN and [s.name for s in reader.scan().saved] == ["kept"]
    writes = {
        "saving": lambda: reader.save("new", PLAIN),
        "renaming": lambda: reader.rename_ref(ref, "x"),
        "deleting": lambda: reader.delete_ref(ref),
    }
    for action, op in writes.items():
        with pytest.raises(NotAllowedError, match=f"rob has read access only: {action} needs the edit role"):
            op()
    with pytest.raises(NotAllowedError):
        reader.rename("kept", "x")
    with pytest.raises(NotAllowedError):
        reader.delete("kept")
    assert [(s.name, s.version) for s in inner.list()] == [("kept", 1)]  # nothing reached the store

    nobody = GuardedStore(inner, Identity(None, None, "no header"))
    with pytest.raises(
        NotAllowedError, match="this session has no access to saved scenarios: listing needs the read role"
    ):
        nobody.scan()

    editor = GuardedStore(inner, Identity("alice", "edit", "signed in as alice, with edit access"))
    assert editor.rename_ref(ref, "renamed").version == 2
    editor.save("new", PLAIN)
    editor.delete("new")
    assert [s.name for s in inner.list()] == ["renamed"]


# ---- ui.auth in a Streamlit script (AppTest): the bound address, and the Sign in button's errors (SEC-3)


def _access_script():
    import streamlit as st

    from ui.auth import identity, sentence, sign_in_controls

    who = identity()
    (st.caption if who.can_read else st.error)(sentence(who.reason))
    st.text(f"role={who.role}")
    sign_in_controls(who)


def _app(monkeypatch, env: dict[str, str], address: str | None):
    """AppTest of a script that shows this session's access, with ``env`` and Streamlit's server.address."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    for var in ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    config.set_option("server.address", address)  # put back by the restore_address fixture
    return AppTest.from_function(_access_script, default_timeout=30)


@pytest.fixture
def restore_address():
    from streamlit import config

    before = config.get_option("server.address")
    yield
    config.set_option("server.address", before)


@pytest.mark.parametrize(("address", "role"), [("127.0.0.1", "edit"), ("0.0.0.0", "read"), (None, "read")])
def test_the_page_reads_the_bound_address(monkeypatch, restore_address, address, role):
    at = _app(monkeypatch, {}, address)
    at.run()
    assert not at.exception
    assert at.text[0].value == f"role={role}"
    if role == "read":
        assert at.caption[0].value.startswith("Saved scenarios are read-only: this server listens on ")
    opened = _app(monkeypatch, {"PLANNER_AUTH": "none"}, address)
    opened.run()
    assert opened.text[0].value == "role=edit"


@pytest.fixture
def secrets_file(tmp_path, monkeypatch):
    """Streamlit's secrets read from one file of this test's (written by the test, or absent), not from
    ~/.streamlit or the checkout's .streamlit/."""
    import streamlit.auth_util
    from streamlit import config
    from streamlit.runtime.secrets import Secrets

    path = tmp_path / "secrets.toml"
    before = config.get_option("secrets.files")
    config.set_option("secrets.files", [str(path)])
    monkeypatch.setattr(streamlit.auth_util, "secrets_singleton", Secrets())
    yield path
    config.set_option("secrets.files", before)


def _click_sign_in(monkeypatch):
    at = _app(monkeypatch, {"PLANNER_AUTH": "oidc"}, "127.0.0.1")
    at.run()
    assert [b.label for b in at.button] == ["Sign in"] and len(at.error) == 1  # the "sign in" reason
    at.button(key="sign_in").click().run()
    assert not at.exception, [e.value for e in at.exception]  # never the redacted error box
    return at


def test_sign_in_without_auth_secrets_says_what_is_missing(monkeypatch, restore_address, secrets_file):
    at = _click_sign_in(monkeypatch)
    problems = [e.value for e in at.error[1:]]
    assert len(problems) == 1
    shown = problems[0].replace("\\", "")
    assert shown.startswith("Sign-in is not set up on this server: the [auth] secrets for Streamlit's login")
    for key in ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url"):
        assert key in shown, key
    assert ".streamlit/secrets.toml" in shown and "deploy/secrets.toml.example" in shown
    at.run()  # said once, not on every rerun
    assert len(at.error) == 1


def test_sign_in_names_the_missing_key(monkeypatch, restore_address, secrets_file):
    secrets_file.write_text('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\nclient_id = "x"\n')
    at = _click_sign_in(monkeypatch)
    shown = at.error[1].value.replace("\\", "")
    assert 'missing the "cookie_secret" key' in shown and "Sign-in is not set up on this server" in shown


def test_sign_in_without_authlib_says_so(monkeypatch, restore_address, secrets_file):
    import streamlit.user_info

    monkeypatch.setattr(streamlit.user_info, "is_authlib_installed", lambda: False)
    at = _click_sign_in(monkeypatch)
    shown = at.error[1].value.replace("\\", "")
    assert shown.startswith("Sign-in is not available: this server lacks the Python package Authlib (1.3.2 or later)")


def test_sign_in_with_the_example_secrets_filled_in_starts_the_login(monkeypatch, restore_address, secrets_file):
    """The shipped example's [auth] keys, uncommented and filled in, are what st.login accepts: no message."""
    import re
    from pathlib import Path

    example = (Path(__file__).resolve().parents[2] / "deploy/secrets.toml.example").read_text()
    tail = example.split("\n# [auth]\n", 1)[1]
    body = "\n".join(ln[2:] for ln in tail.splitlines() if ln.startswith("# ") and not ln.startswith("# # "))
    body = re.sub(r'= ""', '= "filled-in-for-the-test-0123456789abcdef"', body)
    secrets_file.write_text("[auth]\n" + body + "\n")
    at = _click_sign_in(monkeypatch)
    assert len(at.error) == 1  # only the "sign in" reason: the login started
