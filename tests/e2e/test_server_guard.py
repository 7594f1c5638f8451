"""The served app refuses forged Host headers (DNS rebinding) and forbids framing by other sites.

Plain HTTP and a raw websocket handshake against a real server started the way `make run` and Docker
start it (``serve.py``: Streamlit's ``st.App`` with ``ui.server_guard``'s middleware). No browser.

DNS rebinding: a page on ``evil.example`` re-resolves its own name to the victim's address, so the
victim's browser sends ``Host: evil.example`` and ``Origin: http://evil.example`` to the planner; the
origin equals the host, so Streamlit's same-origin websocket check alone accepts it.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket

import pytest

from tests.e2e.conftest import Server

ENTRY = "serve.py"  # what `make run` and the Dockerfile start (tests/unit/test_deploy_files.py checks that)


@pytest.fixture(scope="module")
def guarded():
    # PLANNER_ALLOWED_HOSTS may be set in the caller's shell: the defaults are under test here
    s = Server(script=ENTRY, extra_env={"PLANNER_ALLOWED_HOSTS": ""})
    yield s
    s.stop()


def _get(server: Server, path: str, host: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("GET", path, skip_host=True)
    conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


def _ws_status(server: Server, host: str, origin: str) -> int:
    """Status code of a websocket upgrade of Streamlit's stream (101 = accepted)."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        "GET /_stcore/stream HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        f"Origin: {origin}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: streamlit\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(request.encode())
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(1024)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ", 2)[1])


def test_forged_host_is_refused_on_http(guarded):
    port = guarded.port
    for path in ("/", "/Fit?model=kimi-k2", "/_stcore/health"):
        assert _get(guarded, path, f"evil.example:{port}").status == 400, path
    # a name that merely starts like an allowed one is not allowed
    assert _get(guarded, "/", f"localhost.evil.example:{port}").status == 400


def test_loopback_hosts_are_served_with_frame_protection_and_xsrf(guarded):
    port = guarded.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        resp = _get(guarded, "/", host)
        assert resp.status == 200, host
        assert resp.getheader("Content-Security-Policy") == "frame-ancestors 'self'"
        assert resp.getheader("X-Frame-Options") == "SAMEORIGIN"
    # the health endpoint (what the healthchecks call) answers, and sets Streamlit's XSRF cookie: XSRF
    # protection stays on
    health = _get(guarded, "/_stcore/health", f"127.0.0.1:{port}")
    assert health.status == 200 and health.getheader("X-Frame-Options") == "SAMEORIGIN"
    assert "_streamlit_xsrf=" in (health.getheader("Set-Cookie") or "")


def test_forged_host_websocket_is_refused(guarded):
    port = guarded.port
    # control: the same handshake from the app's own origin is accepted (101 Switching Protocols)
    assert _ws_status(guarded, f"localhost:{port}", f"http://localhost:{port}") == 101
    # DNS rebinding: Host = Origin = the attacker's name
    assert _ws_status(guarded, f"evil.example:{port}", f"http://evil.example:{port}") == 400
