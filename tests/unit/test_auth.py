"""core.auth: roles for saved scenarios in a shared deployment (issue 21)."""

from __future__ import annotations

import pytest

from core.auth import (
    DEFAULT_USER_HEADERS,
    AuthConfig,
    GuardedStore,
    Identity,
    NotAllowedError,
    auth_config,
    identify,
)
from core.specs import Scenario
from core.store import ScenarioStore, SQLiteStore

HEADER = {"PLANNER_AUTH": "header", "PLANNER_EDITORS": "alice@example.com, Bob"}


def test_no_settings_is_a_single_editor():
    config = auth_config({})
    assert config == AuthConfig(mode="none", headers=DEFAULT_USER_HEADERS, editors=frozenset(), readers=None)
    who = identify(config)
    assert who.role == "edit" and who.user is None and who.can_edit and who.can_read
    assert who.reason == "no sign-in is configured (PLANNER_AUTH): everyone who reaches this server can edit"
    assert auth_config({"PLANNER_AUTH": " NONE "}).mode == "none"


def test_settings_are_parsed():
    config = auth_config({**HEADER, "PLANNER_READERS": "carol\tdave", "PLANNER_AUTH_HEADER": "X-Remote-User, X-Email"})
    assert config.mode == "header"
    assert config.headers == ("X-Remote-User", "X-Email")
    assert config.editors == {"alice@example.com", "bob"}  # case-folded
    assert config.readers == {"carol", "dave"}
    assert auth_config({"PLANNER_AUTH": "oidc"}).readers is None  # unset: every signed-in user reads


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLANNER_AUTH": "ldap"}, "PLANNER_AUTH must be one of none, header, oidc (got 'ldap')"),
        ({"PLANNER_AUTH": "header", "PLANNER_AUTH_HEADER": "X User"}, "PLANNER_AUTH_HEADER holds header names"),
        ({"PLANNER_EDITORS": "alice"}, "PLANNER_AUTH is not: set PLANNER_AUTH=header"),
        ({"PLANNER_AUTH": 3}, "PLANNER_AUTH must be text"),
    ],
)
def test_wrong_settings_name_the_variable(env, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        auth_config(env)


def test_header_roles():
    config = auth_config(HEADER)
    editor = identify(config, headers={"x-forwarded-email": "Alice@Example.com"})  # header names without case
    assert (editor.user, editor.role) == ("Alice@Example.com", "edit")
    assert editor.reason == "signed in as Alice@Example.com, with edit access"
    reader = identify(config, headers={"X-Forwarded-Email": "rob@example.com"})
    assert (reader.role, reader.can_read, reader.can_edit) == ("read", True, False)
    assert reader.reason.endswith(
        "with read access: saving, renaming and deleting need the edit role (PLANNER_EDITORS)"
    )
    # oauth2-proxy sends both: the e-mail is shown, the user name matches the list
    both = identify(config, headers={"X-Forwarded-Email": "bob@example.com", "X-Forwarded-User": "bob"})
    assert (both.user, both.role) == ("bob@example.com", "edit")


@pytest.mark.parametrize(
    "headers", [{}, {"X-Forwarded-User": "  "}, {"X-Forwarded-User": "a\nb"}, {"X-Forwarded-User": "x" * 321}]
)
def test_no_usable_user_header_is_no_access(headers):
    who = identify(auth_config(HEADER), headers=headers)
    assert who.role is None and not who.can_read and who.user is None
    assert who.reason.startswith(
        "saved scenarios need a signed-in user: no X-Forwarded-Email, X-Forwarded-User, X-Auth-Request-Email or "
        "X-Auth-Request-User header came with this request"
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
    assert identify(everyone, headers={"X-Auth-Request-User": "anyone"}).role == "edit"
    custom = auth_config({"PLANNER_AUTH": "header", "PLANNER_AUTH_HEADER": "X-Remote-User"})
    assert identify(custom, headers={"X-Forwarded-User": "alice"}).role is None  # only the configured header counts
    assert identify(custom, headers={"X-Remote-User": "alice"}).role == "read"


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
