"""Who may do what with the saved scenarios of a shared deployment: read or edit. Pure; no Streamlit.

Configured by environment variables (read once per session by ``ui.auth``), together with the address the
server listens on (Streamlit's ``server.address``, passed in by ``ui.auth`` and ``serve.py``):

``PLANNER_AUTH``
    unset (the default): no sign-in. On a loopback address (127.0.0.0/8, ``::1``, ``localhost``; `make run`)
    only this machine reaches the server and everyone edits. On any other address (``0.0.0.0``, a LAN
    address, the Docker image, an unset ``server.address`` = every interface) saved scenarios are
    read-only for everyone, with a reason that says how to change it.
    ``none``: no sign-in, and everyone who reaches the server edits, on any address (the operator's
    explicit choice). ``header``: a trusted sign-in proxy in front of the server (nginx with
    ``auth_basic``, or ``auth_request`` to oauth2-proxy: ``deploy/auth/``) names the user in one request
    header. ``oidc``: Streamlit's built-in login (``st.login``), configured in the ``[auth]`` section of
    ``.streamlit/secrets.toml``.
``PLANNER_AUTH_HEADER``
    With ``header``: the ONE header naming the user (default ``X-Forwarded-User``, which
    ``deploy/nginx.conf.template`` sets). A list is refused: a session gets its role from one name only.
    When a request also carries another known user header (:data:`USER_HEADERS`: ``X-Forwarded-Email``,
    ``X-Auth-Request-User``, ``Remote-User`` ...) naming someone else, the session gets no access at all:
    someone other than the sign-in proxy chose a header.
``PLANNER_EDITORS``
    Users with the edit role (save, rename, delete), separated by commas or spaces, compared without
    case; ``*`` for every signed-in user. Default: nobody.
``PLANNER_READERS``
    Users allowed to open and compare saved scenarios; unset (or ``*``) for every signed-in user.
    Editors can always read.

A header is only as trustworthy as the proxy that sets it: the app must be reachable only through that
proxy (bind it to 127.0.0.1 or a private network), and the proxy must set the header itself and drop every
user header a client sends (``deploy/nginx.conf.template`` does; tests/integration/test_proxy_forged_headers.py
sends forged ones through it). The role decides what the Compare page offers, and :class:`core.store.guard.GuardedStore`
refuses the same operations server-side, so a crafted request cannot do more than the buttons.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "DEFAULT_USER_HEADER",
    "ENV_VARS",
    "MODES",
    "ROLES",
    "USER_HEADERS",
    "AuthConfig",
    "Identity",
    "access_summary",
    "auth_config",
    "identify",
    "is_loopback",
]

MODES = ("none", "header", "oidc")
ROLES = ("read", "edit")
ENV_VARS = ("PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS")
DEFAULT_USER_HEADER = "X-Forwarded-User"
# Request headers that sign-in proxies use to name a user (oauth2-proxy's --pass-user-headers and
# --set-xauthrequest, Apache / Authelia / Authentik's Remote-User, Grafana-style X-WEBAUTH-USER, Cloudflare
# Access, Google IAP, Azure App Service ...). The shipped nginx template sets every one of them (all but
# X-Forwarded-User to nothing), so what a client sends in them never reaches the app.
USER_HEADERS = (
    "X-Forwarded-User",
    "X-Forwarded-Email",
    "X-Forwarded-Preferred-Username",
    "X-Auth-Request-User",
    "X-Auth-Request-Email",
    "X-Auth-Request-Preferred-Username",
    "Remote-User",
    "Remote-Email",
    "X-Remote-User",
    "X-Remote-Email",
    "X-User",
    "X-Email",
    "X-Authenticated-User",
    "X-WEBAUTH-USER",
    "X-Auth-User",
    "Cf-Access-Authenticated-User-Email",
    "X-Goog-Authenticated-User-Email",
    "X-MS-CLIENT-PRINCIPAL-NAME",
)
MAX_USER_CHARS = 320  # the longest e-mail address
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")
_USER_CLAIMS = ("email", "preferred_username", "sub")  # st.user claims that can name a user, in order
_TO_EDIT = (
    "to let people edit, put sign-in in front (PLANNER_AUTH=header behind the proxy in deploy/, or "
    "PLANNER_AUTH=oidc) with PLANNER_EDITORS, listen on 127.0.0.1 only, or set PLANNER_AUTH=none to let "
    "everyone who reaches this server edit"
)


@dataclass(frozen=True)
class AuthConfig:
    """The sign-in settings. ``editors`` / ``readers`` are case-folded; ``readers`` None means every signed-in
    user; ``"*"`` in either means every signed-in user. ``read_only_on``: with no sign-in chosen
    (PLANNER_AUTH unset) on a server that listens beyond loopback, the address it listens on; saved scenarios
    are then read-only for everyone."""

    mode: str = "none"
    header: str = DEFAULT_USER_HEADER
    editors: frozenset[str] = frozenset()
    readers: frozenset[str] | None = None
    read_only_on: str | None = None


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


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` (Streamlit's ``server.address``) is reachable from this machine
    only: 127.0.0.0/8, ``::1`` (bracketed or not), ``localhost``, or a Unix socket (``unix://...``). None or
    "" (Streamlit's default: every interface), ``0.0.0.0``, ``::``, a LAN address or another name: False."""
    if address is None:
        return False
    if not isinstance(address, str):
        raise ValueError(f"the server address must be text, not {type(address).__name__}")
    a = address.strip().lower()
    if a.startswith("unix://"):
        return True
    if a.startswith("[") and a.endswith("]"):
        a = a[1:-1]
    if a.rstrip(".") == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(a)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def _listens_on(address: str | None) -> str:
    """The bound address as the reasons name it."""
    a = (address or "").strip()
    if not a:
        return "every network interface (server.address unset)"
    if a in ("0.0.0.0", "::", "[::]"):
        return f"{a} (every network interface)"
    return a


def auth_config(env: Mapping[str, str], bound_address: str | None = None) -> AuthConfig:
    """The settings in ``env`` (``os.environ``) for a server listening on ``bound_address`` (Streamlit's
    ``server.address``; None or "" = every interface); ValueError naming the variable for a wrong value, or
    for user lists without a sign-in mode (they would protect nothing)."""
    if not isinstance(env, Mapping):
        raise ValueError(f"the sign-in settings must be a mapping of environment variables, not {type(env).__name__}")
    get = {k: env.get(k) for k in ENV_VARS}
    for k, v in get.items():
        if v is not None and not isinstance(v, str):
            raise ValueError(f"{k} must be text, not {type(v).__name__}")
    loopback = is_loopback(bound_address)
    chosen = (get["PLANNER_AUTH"] or "").strip().lower()
    mode = chosen or "none"
    if mode not in MODES:
        raise ValueError(f"PLANNER_AUTH must be one of {', '.join(MODES)} (got {get['PLANNER_AUTH']!r})")
    header = DEFAULT_USER_HEADER
    raw_header = (get["PLANNER_AUTH_HEADER"] or "").strip()
    if raw_header:
        if "," in raw_header or len(raw_header.split()) > 1:
            raise ValueError(
                "PLANNER_AUTH_HEADER names one header, the one the sign-in proxy sets (e.g. X-Forwarded-User), "
                f"not a list (got {raw_header!r}): the role must come from a single name"
            )
        if not _HEADER_NAME.match(raw_header):
            raise ValueError(f"PLANNER_AUTH_HEADER holds a header name (letters, digits, '-'), not {raw_header!r}")
        header = raw_header
    editors = _names(get["PLANNER_EDITORS"] or "")
    readers = _names(get["PLANNER_READERS"] or "") or None
    if mode == "none" and (editors or readers or raw_header):
        raise ValueError(
            "PLANNER_EDITORS, PLANNER_READERS or PLANNER_AUTH_HEADER is set but there is no sign-in "
            f"(PLANNER_AUTH={'none' if chosen else 'unset'}): set PLANNER_AUTH=header (behind a sign-in "
            "proxy) or PLANNER_AUTH=oidc (Streamlit's login)"
        )
    read_only_on = _listens_on(bound_address) if not chosen and not loopback else None
    return AuthConfig(mode=mode, header=header, editors=editors, readers=readers, read_only_on=read_only_on)


def access_summary(config: AuthConfig) -> str:
    """One line for the server's log at startup: who may read and edit the saved scenarios, and why."""
    if not isinstance(config, AuthConfig):
        raise ValueError(f"access_summary needs an AuthConfig, not {type(config).__name__}")
    if config.read_only_on is not None:
        return (
            f"Saved scenarios: read-only for everyone: this server listens on {config.read_only_on} with no "
            f"sign-in (PLANNER_AUTH unset); {_TO_EDIT}."
        )
    if config.mode == "none":
        return (
            "Saved scenarios: everyone who reaches this server can open, save, rename and delete them (no "
            "sign-in: PLANNER_AUTH is none, or unset on a loopback address)."
        )
    editors = "every signed-in user" if "*" in config.editors else f"{len(config.editors)} listed in PLANNER_EDITORS"
    readers = (
        "every signed-in user"
        if config.readers is None or "*" in config.readers
        else f"{len(config.readers)} listed in PLANNER_READERS (and the editors)"
    )
    how = (
        f"the user in the {config.header} header, set by the sign-in proxy in front (PLANNER_AUTH=header)"
        if config.mode == "header"
        else "Streamlit's login, [auth] in .streamlit/secrets.toml (PLANNER_AUTH=oidc)"
    )
    return f"Saved scenarios: sign-in by {how}; editors: {editors}; readers: {readers}."


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


def _header_pairs(headers: object) -> list[tuple[str, str]]:
    """(lower-case name, value) for each header: from a mapping, or from (name, value) pairs (a header sent
    twice is two pairs). Anything else counts as no headers (fail closed)."""
    if isinstance(headers, Mapping):
        items: Iterable = headers.items()
    elif isinstance(headers, list | tuple):
        items = headers
    else:
        return []
    out = []
    for item in items:
        if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
            out.append((item[0].strip().lower(), item[1] if isinstance(item[1], str) else ""))
    return out


def _from_headers(config: AuthConfig, headers: object) -> Identity | tuple[str, frozenset[str]]:
    """The user in the configured header, or an Identity without access saying why not."""
    pairs = _header_pairs(headers)
    wanted = config.header.lower()
    own = [v for k, v in pairs if k == wanted and v.strip()]
    users = {v.strip().casefold() for v in own}
    if len(users) > 1:
        return Identity(
            None,
            None,
            f"saved scenarios are closed to this request: it carried the {config.header} header more than "
            "once, naming different users. Only the sign-in proxy in front of this server may set it, once; "
            "it must replace what a client sends (deploy/nginx.conf.template)",
        )
    user = _user_value(own[0]) if own else None
    if user is None:
        what = "an unusable" if own else "no"
        return Identity(
            None,
            None,
            f"saved scenarios need a signed-in user: {what} {config.header} header came with this request "
            "(PLANNER_AUTH=header reads the user from that one header, which the sign-in proxy in front of this "
            "server must set)",
        )
    others = {h.lower(): h for h in USER_HEADERS if h.lower() != wanted}
    disagree = []
    for k, v in pairs:
        if k in others and v.strip() and v.strip().casefold() != user.casefold():
            name = others[k]
            if name not in disagree:
                disagree.append(name)
    if disagree:
        names = ", ".join(disagree[:-1]) + (" and " if len(disagree) > 1 else "") + disagree[-1]
        return Identity(
            None,
            None,
            f"saved scenarios are closed to this request: {config.header} names {user}, but the request carried "
            f"a second user header that disagrees ({names}). Only the sign-in proxy may set user headers, and it "
            f"must drop the others that clients send (deploy/nginx.conf.template); "
            f"the role comes from {config.header} alone (PLANNER_AUTH_HEADER)",
        )
    return user, frozenset({user.casefold()})


def identify(config: AuthConfig, headers: object = None, user: Mapping[str, object] | None = None) -> Identity:
    """This session's identity and role: ``headers`` (the request's, for ``header``: a mapping, or (name,
    value) pairs so that a header sent twice is seen twice) or ``user`` (Streamlit's ``st.user`` as a dict,
    for ``oidc``). Without a sign-in mode everyone edits, unless the server listens beyond loopback with
    PLANNER_AUTH unset: then everyone reads."""
    if not isinstance(config, AuthConfig):
        raise ValueError(f"identify needs an AuthConfig, not {type(config).__name__}")
    if config.mode == "none":
        if config.read_only_on is not None:
            return Identity(
                None,
                "read",
                f"saved scenarios are read-only: this server listens on {config.read_only_on} with no sign-in "
                f"(PLANNER_AUTH unset), so anyone who reaches it could change them; {_TO_EDIT}",
            )
        return Identity(
            None, "edit", "no sign-in is configured (PLANNER_AUTH): everyone who reaches this server can edit"
        )
    if config.mode == "header":
        found = _from_headers(config, headers)
        if isinstance(found, Identity):
            return found
        return _role(config, *found)
    info = user if isinstance(user, Mapping) else {}
    claims: list[str] = []
    if info.get("is_logged_in") is True:
        claims = [v for c in _USER_CLAIMS if (v := _user_value(info.get(c))) is not None]
    if not claims:
        return Identity(None, None, "saved scenarios need a signed-in user: sign in to open them")
    return _role(config, claims[0], frozenset(v.casefold() for v in claims))
