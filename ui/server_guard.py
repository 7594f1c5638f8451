"""Server-side guard for a shared deployment: a Host allow-list and frame protection.

What Streamlit 1.67 offers and why this module exists:
- ``server.allowedHosts`` checks the Host header of the websocket only (and the agent API); every HTTP
  route (the page, ``/_stcore/health``, ``/media/``, uploads) is served to any Host, so a DNS-rebinding
  page still reads them. ``server.enableCORS`` / ``corsAllowedOrigins`` do not help either: a rebound
  page has Origin = Host = the attacker's name, which Streamlit's same-origin check accepts.
- No option sets response headers, so nothing forbids framing (clickjacking).
- Streamlit's documented hook is ``st.App(script, middleware=[...])``: ``serve.py`` builds one with
  :func:`guard_middleware`, and `make run`, the Docker image and compose.yaml start ``serve.py``. The
  middleware runs before any Streamlit route, for HTTP requests and websocket handshakes alike, from
  the server's first request on (app.py runs only after a session has connected: too late to guard).

The allow-list: the loopback names (a browser sends them only when it really talks to this machine, so
they stay allowed for healthchecks), the address the server is bound to when it is a specific one, and
the names in ``PLANNER_ALLOWED_HOSTS`` (comma-separated: ``planner.example.com``, ``*.example.com``, an
IP address; ``*`` turns the check off). Ports are ignored. Any other Host gets ``400 Invalid host
header``, on a websocket handshake too (the handshake is denied with that response).

The allow-list keeps browsers on other sites out; it is no sign-in: any client that is not a browser can
send an allowed Host (``Host: localhost``). Who may change the saved scenarios is core/store/auth.py's business:
with no sign-in on an address other than loopback they are read-only for everyone.
"""

from __future__ import annotations

import ipaddress
import os
import re

from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ENV_VAR = "PLANNER_ALLOWED_HOSTS"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
FRAME_HEADERS = {"Content-Security-Policy": "frame-ancestors 'self'", "X-Frame-Options": "SAMEORIGIN"}
_WILDCARD_BINDS = {"", "0.0.0.0", "::", "[::]"}
_NAME = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
_ALLOWED = "names like planner.example.com, *.example.com, IP addresses, or * for any host"

__all__ = ["ENV_VAR", "FRAME_HEADERS", "LOOPBACK_HOSTS", "FrameProtection", "allowed_hosts", "guard_middleware"]


def _host_pattern(entry: str) -> str:
    """One allow-list entry as the Host header spells it: lower case, no port, IPv6 in brackets."""
    e = entry.strip().lower()
    bare = e[1:-1] if e.startswith("[") and e.endswith("]") else e
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        pass
    else:
        return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
    if e.startswith("[") and "]:" in e:  # [v6]:port
        return _host_pattern(e[1 : e.index("]:")])
    name, _, port = e.partition(":")
    if e == "*" or (_NAME.fullmatch(name) and (not port or port.isdigit())):
        return name if e != "*" else "*"
    raise ValueError(f"{ENV_VAR}: {entry.strip()!r} is not a host name; allowed: {_ALLOWED}")


def allowed_hosts(extra: str | None, bound_address: str | None) -> list[str]:
    """The Host names served: the loopback names, ``bound_address`` unless it is a wildcard bind
    (0.0.0.0, ::), and the comma-separated ``extra`` (``PLANNER_ALLOWED_HOSTS``); ``["*"]`` when
    ``extra`` holds ``*``. Raises ValueError naming the variable for an entry that is not a host name."""
    hosts = list(LOOPBACK_HOSTS)
    entries = [e for e in (extra or "").split(",") if e.strip()]
    bound = (bound_address or "").strip()
    if bound not in _WILDCARD_BINDS and not bound.startswith("unix://"):
        entries.insert(0, bound)
    for e in entries:
        pattern = _host_pattern(e)
        if pattern == "*":
            return ["*"]
        if pattern not in hosts:
            hosts.append(pattern)
    return hosts


class FrameProtection:
    """ASGI middleware: adds :data:`FRAME_HEADERS` to every HTTP response (only this site may frame it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in FRAME_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def guard_middleware(hosts: list[str] | None = None) -> list[Middleware]:
    """The middleware for ``st.App(..., middleware=guard_middleware())``: the Host allow-list (``hosts``, or
    :func:`allowed_hosts` from ``PLANNER_ALLOWED_HOSTS`` and Streamlit's ``server.address``) outermost, so
    a refused request never reaches Streamlit, then the frame headers."""
    if hosts is None:
        from streamlit import config

        hosts = allowed_hosts(os.environ.get(ENV_VAR, ""), config.get_option("server.address"))
    return [
        Middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False),
        Middleware(FrameProtection),
    ]
