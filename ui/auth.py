"""Streamlit glue for :mod:`core.store.auth`: who this session is (a trusted proxy's header from ``st.context.headers``,
or Streamlit's OIDC login through ``st.user``, under the address this server listens on), and the sign-in,
sign-out and access notes a page shows."""

from __future__ import annotations

import os

import streamlit as st

from core.store.auth import Identity, auth_config, identify
from core.store.guard import GuardedStore
from core.store.types import ScenarioStore
from ui.format import md_escape

__all__ = [
    "SIGN_IN_PROBLEM",
    "access_note",
    "guarded",
    "identity",
    "request_headers",
    "sentence",
    "server_address",
    "sign_in_controls",
]

SIGN_IN_PROBLEM = "_sign_in_problem"  # session state: why the last Sign in click could not start a login
_AUTH_KEYS = "redirect_uri, cookie_secret, client_id, client_secret and server_metadata_url"


def request_headers() -> list[tuple[str, str]]:
    """The headers of the request that opened this session (the websocket upgrade, which the proxy forwards
    with its user headers), as (name, value) pairs: a header sent twice comes twice."""
    headers = st.context.headers
    return [(k, v) for k in headers for v in headers.get_all(k)]


def server_address() -> str | None:
    """The address this server listens on (Streamlit's ``server.address``; None or "" = every interface)."""
    from streamlit import config

    return config.get_option("server.address")


def _user_info() -> dict:
    return dict(st.user.to_dict())


def identity() -> Identity:
    """This session's identity and role under the PLANNER_AUTH settings; wrong settings give no access
    (fail closed), with the reason."""
    try:
        config = auth_config(os.environ, bound_address=server_address())
    except ValueError as e:
        return Identity(None, None, f"the sign-in settings are wrong: {e}")
    if config.mode == "header":
        return identify(config, headers=request_headers())
    if config.mode == "oidc":
        return identify(config, user=_user_info())
    return identify(config)


def guarded(store: ScenarioStore, who: Identity) -> GuardedStore:
    """``store`` as this session may use it (writes refused server-side without the edit role)."""
    return GuardedStore(store, who)


def sentence(text: str) -> str:
    """``text`` escaped as Markdown, with a capital first letter and a full stop."""
    text = str(text).strip()
    text = text[:1].upper() + text[1:]
    return md_escape(text if text.endswith(".") else text + ".")


def access_note(who: Identity) -> str:
    """One line for a caption: who is signed in and what the role allows (Markdown, escaped)."""
    return sentence(who.reason)


def _login_problem(err: Exception) -> str:
    """What is missing for Streamlit's login, from the error ``st.login`` raised (its text names a missing
    secret key, never a secret's value; anything else is named by its type only)."""
    from streamlit.errors import StreamlitAuthError, StreamlitMissingAuthlibError

    if isinstance(err, StreamlitMissingAuthlibError | ImportError):
        return (
            "Sign-in is not available: this server lacks the Python package Authlib (1.3.2 or later) that "
            "Streamlit's login needs. The operator installs it (pip install -r requirements.txt, or the Docker "
            "image) and restarts the server."
        )
    about = " ".join(str(err).split()) if isinstance(err, StreamlitAuthError) else type(err).__name__
    return (
        "Sign-in is not set up on this server: the [auth] secrets for Streamlit's login are missing or wrong "
        f"({about}). The operator puts an [auth] section with {_AUTH_KEYS} in .streamlit/secrets.toml "
        "(deploy/secrets.toml.example) and restarts the server."
    )


def _sign_in() -> None:
    """The Sign in button's callback: start Streamlit's login, or keep the reason it cannot start."""
    st.session_state.pop(SIGN_IN_PROBLEM, None)
    try:
        st.login()
    except Exception as err:  # missing Authlib or [auth] secrets, a bad redirect_uri: say what, not a traceback
        st.session_state[SIGN_IN_PROBLEM] = _login_problem(err)


def sign_in_controls(who: Identity) -> None:
    """With Streamlit's login (PLANNER_AUTH=oidc): a Sign in button when nobody is, a Sign out button when
    someone is, and what is missing when a Sign in click could not start the login. Nothing otherwise."""
    if os.environ.get("PLANNER_AUTH", "").strip().lower() != "oidc":
        return
    if who.user is None:
        st.button("Sign in", key="sign_in", on_click=_sign_in, type="primary")
        problem = st.session_state.pop(SIGN_IN_PROBLEM, None)
        if problem:
            st.error(md_escape(problem))
    else:
        st.button("Sign out", key="sign_out", on_click=st.logout)
