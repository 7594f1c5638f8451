"""Who may do what with the saved scenarios of a shared deployment: read or edit. Pure; no Streamlit.

Configured by environment variables (read once per session by ``ui.auth``):

``PLANNER_AUTH``
    ``none`` (the default: a single user on a laptop; everyone who reaches the server can edit),
    ``header`` (a trusted sign-in proxy in front of the server, e.g. oauth2-proxy, sets the user in a
    request header) or ``oidc`` (Streamlit's built-in login, ``st.login``, configured in
    ``.streamlit/secrets.toml``).
``PLANNER_AUTH_HEADER``
    With ``header``: the header(s) naming the user, comma-separated. Default: ``X-Forwarded-Email``,
    ``X-Forwarded-User`` (oauth2-proxy with ``--pass-user-headers``), ``X-Auth-Request-Email``,
    ``X-Auth-Request-User`` (oauth2-proxy with ``--set-xauthrequest`` behind nginx ``auth_request``).
    Every value present counts as a name of the user; the first is shown.
``PLANNER_EDITORS``
    Users with the edit role (save, rename, delete), separated by commas or spaces, compared without
    case; ``*`` for every signed-in user. Default: nobody.
``PLANNER_READERS``
    Users allowed to open and compare saved scenarios; unset (or ``*``) for every signed-in user.
    Editors can always read.

A header is only as trustworthy as the proxy that sets it: the app must be reachable only through that
proxy (bind it to 127.0.0.1 or a private network), and the proxy must drop the same header from clients.
The role decides what the Compare page offers, and :class:`GuardedStore` refuses the same operations
server-side, so a crafted request cannot do more than the buttons.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from dataclasses import dataclass

from core.store_types import SavedScenario, ScenarioRef, ScenarioStore, StoreListing

__all__ = [
    "DEFAULT_USER_HEADERS",
    "ENV_VARS",
    "MODES",
    "ROLES",
    "AuthConfig",
    "GuardedStore",
    "Identity",
    "NotAllowedError",
    "auth_config",
    "identify",
]

MODES = ("none", "header", "oidc")
ROLES = ("read", "edit")
ENV_VARS = ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS")
DEFAULT_USER_HEADERS = ("X-Forwarded-Email", "X-Forwarded-User", "X-Auth-Request-Email", "X-Auth-Request-User")
MAX_USER_CHARS = 320  # the longest e-mail address
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")
_USER_CLAIMS = ("email", "preferred_username", "sub")  # st.user claims that can name a user, in order


class NotAllowedError(ValueError):
    """The session's role does not allow that operation."""


@dataclass(frozen=True)
class AuthConfig:
    """The sign-in settings. ``editors`` / ``readers`` are case-folded; ``readers`` None means every signed-in
    user; ``"*"`` in either means every signed-in user."""

    mode: str = "none"
    headers: tuple[str, ...] = DEFAULT_USER_HEADERS
    editors: frozenset[str] = frozenset()
    readers: frozenset[str] | None = None


@dataclass(frozen=True)
class Identity:
    """Who this session is (None: nobody signed in), its role ("edit", "read" or None: no access to saved
    scenarios) and why, as a sentence fragment the page shows."""

    user: str | None
    role: str | None
    reason: str

    @property
    def can_read(self) -> bool:
        return self.role in ROLES

    @property
    def can_edit(self) -> bool:
        return self.role == "edit"


def _names(text: str) -> frozenset[str]:
    return frozenset(x.casefold() for x in re.split(r"[\s,]+", text) if x)


def auth_config(env: Mapping[str, str]) -> AuthConfig:
    """The settings in ``env`` (``os.environ``); ValueError naming the variable for a wrong value, or for
    user lists without a sign-in mode (they would protect nothing)."""
    if not isinstance(env, Mapping):
        raise ValueError(f"the sign-in settings must be a mapping of environment variables, not {type(env).__name__}")
    get = {k: env.get(k) for k in ENV_VARS}
    for k, v in get.items():
        if v is not None and not isinstance(v, str):
            raise ValueError(f"{k} must be text, not {type(v).__name__}")
    mode = (get["PLANNER_AUTH"] or "").strip().lower() or "none"
    if mode not in MODES:
        raise ValueError(f"PLANNER_AUTH must be one of {', '.join(MODES)} (got {get['PLANNER_AUTH']!r})")
    headers = DEFAULT_USER_HEADERS
    if (get["PLANNER_AUTH_HEADER"] or "").strip():
        headers = tuple(h.strip() for h in get["PLANNER_AUTH_HEADER"].split(",") if h.strip())
        bad = [h for h in headers if not _HEADER_NAME.match(h)]
        if bad:
            raise ValueError(f"PLANNER_AUTH_HEADER holds header names (letters, digits, '-'), not {bad[0]!r}")
    editors = _names(get["PLANNER_EDITORS"] or "")
    readers = _names(get["PLANNER_READERS"] or "") or None
    if mode == "none" and (editors or readers or (get["PLANNER_AUTH_HEADER"] or "").strip()):
        raise ValueError(
            "PLANNER_EDITORS, PLANNER_READERS or PLANNER_AUTH_HEADER is set but PLANNER_AUTH is not: set "
            "PLANNER_AUTH=header (behind a sign-in proxy) or PLANNER_AUTH=oidc (Streamlit's login)"
        )
    return AuthConfig(mode=mode, headers=headers, editors=editors, readers=readers)


def _role(config: AuthConfig, user: str, names: frozenset[str]) -> Identity:
    if "*" in config.editors or names & config.editors:
        return Identity(user, "edit", f"signed in as {user}, with edit access")
    if config.readers is None or "*" in config.readers or names & config.readers:
        return Identity(
            user,
            "read",
            f"signed in as {user}, with read access: saving, renaming and deleting need the edit role "
            "(PLANNER_EDITORS)",
        )
    return Identity(user, None, f"signed in as {user}, who is not in PLANNER_READERS or PLANNER_EDITORS")


def _user_value(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > MAX_USER_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return None
    return value


def identify(
    config: AuthConfig, headers: Mapping[str, str] | None = None, user: Mapping[str, object] | None = None
) -> Identity:
    """This session's identity and role: ``headers`` (the request's, for ``header``) or ``user`` (Streamlit's
    ``st.user`` as a dict, for ``oidc``). Without a sign-in mode everyone edits."""
    if not isinstance(config, AuthConfig):
        raise ValueError(f"identify needs an AuthConfig, not {type(config).__name__}")
    if config.mode == "none":
        return Identity(
            None, "edit", "no sign-in is configured (PLANNER_AUTH): everyone who reaches this server can edit"
        )
    found: list[str] = []
    if config.mode == "header":
        lower = {str(k).lower(): v for k, v in (headers or {}).items()} if isinstance(headers, Mapping) else {}
        found = [v for h in config.headers if (v := _user_value(lower.get(h.lower()))) is not None]
        if not found:
            listed = ", ".join(config.headers[:-1]) + (" or " if len(config.headers) > 1 else "") + config.headers[-1]
            return Identity(
                None,
                None,
                f"saved scenarios need a signed-in user: no {listed} header came with this request (PLANNER_AUTH="
                "header expects the sign-in proxy in front of this server to set it)",
            )
    else:
        info = user if isinstance(user, Mapping) else {}
        if info.get("is_logged_in") is True:
            found = [v for c in _USER_CLAIMS if (v := _user_value(info.get(c))) is not None]
        if not found:
            return Identity(None, None, "saved scenarios need a signed-in user: sign in to open them")
    return _role(config, found[0], frozenset(v.casefold() for v in found))


class GuardedStore:
    """A :class:`~core.store_types.ScenarioStore` seen through a session's role: reads need "read" or "edit",
    writes need "edit"; anything else raises :class:`NotAllowedError` and reaches no store."""

    def __init__(self, store: ScenarioStore, identity: Identity) -> None:
        self.store, self.identity = store, identity

    def __repr__(self) -> str:
        return f"GuardedStore({self.store!r}, role={self.identity.role!r})"

    def _need(self, edit: bool, action: str) -> None:
        ok = self.identity.can_edit if edit else self.identity.can_read
        if not ok:
            who = self.identity.user or "this session"
            has = f"{self.identity.role} access only" if self.identity.role else "no access to saved scenarios"
            raise NotAllowedError(f"{who} has {has}: {action} needs the {'edit' if edit else 'read'} role")

    def get(self, name: str) -> SavedScenario:
        self._need(False, "opening")
        return self.store.get(name)

    def list(self) -> builtins.list[SavedScenario]:
        self._need(False, "listing")
        return self.store.list()

    def scan(self) -> StoreListing:
        self._need(False, "listing")
        return self.store.scan()

    def get_ref(self, ref: ScenarioRef) -> SavedScenario:
        self._need(False, "opening")
        return self.store.get_ref(ref)

    def save(
        self, name: str, scenario, *, model_config_json: str | None = None, overwrite: bool = False
    ) -> SavedScenario:
        self._need(True, "saving")
        return self.store.save(name, scenario, model_config_json=model_config_json, overwrite=overwrite)

    def rename(self, old: str, new: str) -> None:
        self._need(True, "renaming")
        self.store.rename(old, new)

    def delete(self, name: str) -> None:
        self._need(True, "deleting")
        self.store.delete(name)

    def rename_ref(self, ref: ScenarioRef, new: str) -> ScenarioRef:
        self._need(True, "renaming")
        return self.store.rename_ref(ref, new)

    def delete_ref(self, ref: ScenarioRef) -> None:
        self._need(True, "deleting")
        self.store.delete_ref(ref)
