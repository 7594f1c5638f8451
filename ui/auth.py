"""Streamlit glue for :mod:`core.auth`: who this session is (a trusted proxy's header from ``st.context.headers``,
or Streamlit's OIDC login through ``st.user``), and the sign-in, sign-out and access notes a page shows."""

from __future__ import annotations

import os
from collections.abc import Mapping

import streamlit as st

from core.auth import GuardedStore, Identity, auth_config, identify
from core.store_types import ScenarioStore
from ui.format import md_escape

__all__ = ["access_note", "guarded", "identity", "request_headers", "sentence", "sign_in_controls"]


def request_headers() -> Mapping[str, str]:
    """The headers of the request that opened this session (the websocket upgrade, which the proxy forwards
    with its user headers)."""
    return {k: v for k, v in st.context.headers.items()}


def _user_info() -> dict:
    return dict(st.user.to_dict())


def identity() -> Identity:
    """This session's identity and role under the PLANNER_AUTH settings; wrong settings give no access
    (fail closed), with the reason."""
    try:
        config = auth_config(os.environ)
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


def sign_in_controls(who: Identity) -> None:
    """With Streamlit's login (PLANNER_AUTH=oidc): a Sign in button when nobody is, a Sign out button when
    someone is. Nothing otherwise."""
    if os.environ.get("PLANNER_AUTH", "").strip().lower() != "oidc":
        return
    if who.user is None:
        st.button("Sign in", key="sign_in", on_click=st.login, type="primary")
    else:
        st.button("Sign out", key="sign_out", on_click=st.logout)
