"""The shipped nginx proxy, attacked with forged identity headers (issue 37, SEC-1 of reliability probe 3).

Debian's nginx runs ``deploy/nginx.conf.template`` as compose would (only the host name, the listen address
and the upstream addresses substituted, and the snippet directory pointed at a temporary copy of
``deploy/auth/``) in front of TWO replicas. The replicas are small header-echo servers, so each test sees
exactly the headers that reach the app. The client plays the attacker: it sends ``Authorization: Basic
alice@corp.example:x`` (nginx parses ``$remote_user`` from it whether or not it checked it) and every user
header in ``core.store.auth.USER_HEADERS`` naming alice, in two spellings. What arrives is then fed to
``core.store.auth.identify`` with ``PLANNER_EDITORS=alice@corp.example``.

- As shipped (no sign-in snippet): no user header and no ``Authorization`` reach either replica, and the
  app gives that request no access.
- With ``deploy/auth/basic.conf.example`` enabled: bob with his password arrives as ``X-Forwarded-User: bob``
  only (a reader, whatever he forges); a wrong or missing password is refused with 401 before any replica.
- With ``deploy/auth/oauth2-proxy.conf.example`` enabled (a stand-in answers like oauth2-proxy's
  ``/oauth2/auth``): bob's session arrives as his e-mail only; no session gets the sign-in page.
- A control run with the old line ``proxy_set_header X-Forwarded-User $remote_user;`` shows the same attack
  succeeding, so these checks can fail.

Without nginx the module skips with a notice naming the Debian package (``make test`` installs it as root);
under CI=true a missing nginx is a failure.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from core.store.auth import USER_HEADERS, auth_config, identify

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy/nginx.conf.template"
AUTH_EXAMPLES = ROOT / "deploy/auth"
HOSTNAME = "planner.test"
ATTACKER_NAME = "alice@corp.example"
EDITORS_ENV = {"PLANNER_AUTH": "header", "PLANNER_EDITORS": ATTACKER_NAME}
BOB, BOB_PASSWORD = "bob", "bob-correct-horse"
BOB_EMAIL, BOB_SESSION = "bob@corp.example", "bob-session-cookie"
DEADLINE_S = 20


def _nginx() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None
    )
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("nginx (Debian package 'nginx-light' or 'nginx') is missing under CI=true")
        pytest.skip("nginx missing: install Debian's 'nginx-light' (make system-deps) to run the proxy tests")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# ---- the replicas and the oauth2-proxy stand-in: stdlib HTTP servers in threads


class _Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, name: str, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.name = name
        self.seen: list[list[tuple[str, str]]] = []  # each request's headers, as received
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def count(self) -> int:
        with self.lock:
            return len(self.seen)


class _Echo(BaseHTTPRequestHandler):
    """A replica: answers with its name and the headers it received, as JSON."""

    def do_GET(self) -> None:
        pairs = list(self.headers.items())
        with self.server.lock:
            self.server.seen.append(pairs)
        body = json.dumps({"replica": self.server.name, "headers": pairs}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class _OAuth2StandIn(BaseHTTPRequestHandler):
    """Answers like oauth2-proxy with --set-xauthrequest: /oauth2/auth is 202 with the user's e-mail for bob's
    session cookie and 401 otherwise; /oauth2/sign_in is the sign-in page."""

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.seen.append(list(self.headers.items()))
        if self.path.startswith("/oauth2/auth"):
            ok = f"_oauth2_proxy={BOB_SESSION}" in (self.headers.get("Cookie") or "")
            self.send_response(202 if ok else 401)
            if ok:
                self.send_header("X-Auth-Request-Email", BOB_EMAIL)
                self.send_header("X-Auth-Request-User", BOB)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"oauth2-proxy sign-in page"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def replicas():
    reps = [_Recorder("app1", _Echo), _Recorder("app2", _Echo)]
    yield reps
    for r in reps:
        r.shutdown()
        r.server_close()


@pytest.fixture(scope="module")
def oauth2_stand_in():
    s = _Recorder("oauth2-proxy", _OAuth2StandIn)
    yield s
    s.shutdown()
    s.server_close()


# ---- nginx with the shipped template


def _substitute(text: str, old: str, new: str, count: int | None = None) -> str:
    n = text.count(old)
    assert n and (count is None or n == count), f"{old!r} found {n} times in the shipped file (expected {count})"
    return text.replace(old, new)


def render_template(template: str, *, port: int, upstreams: list[str], auth_dir: Path) -> str:
    """The template as the proxy runs it, with only what differs on this machine replaced: the host name
    (envsubst's one variable), the listen port, the two replicas' addresses and the snippet directory."""
    text = _substitute(template, "${PLANNER_HOSTNAME}", HOSTNAME)  # envsubst replaces every one
    text = _substitute(text, "listen 8080", f"listen 127.0.0.1:{port}", 2)
    text = _substitute(text, "server app1:8501", f"server {upstreams[0]}", 1)
    text = _substitute(text, "server app2:8501", f"server {upstreams[1]}", 1)
    text = _substitute(text, "include /etc/nginx/planner-auth/*.conf;", f"include {auth_dir}/*.conf;", 1)
    return text


class Nginx:
    """Debian's nginx in the foreground with its own prefix, pid, logs and temp paths in a temporary
    directory, serving ``site`` (the rendered template)."""

    def __init__(self, site: str, snippets: dict[str, str] | None = None) -> None:
        nginx = _nginx()
        self.dir = Path(tempfile.mkdtemp(prefix="planner-nginx-"))
        os.chmod(self.dir, 0o755)  # nginx's workers (nobody, when the test runs as root) read the snippets
        self.auth_dir = self.dir / "planner-auth"
        self.auth_dir.mkdir(mode=0o755)
        self.port = _free_port()
        self.site = site
        for name, text in (snippets or {}).items():
            (self.auth_dir / name).write_text(text.replace("/etc/nginx/planner-auth/", f"{self.auth_dir}/"))
            os.chmod(self.auth_dir / name, 0o644)
        d = self.dir
        (d / "nginx.conf").write_text(
            f"""worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    include {d}/site.conf;
}}
"""
        )
        self.cmd = [nginx, "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "error.log")]
        self.proc: subprocess.Popen | None = None

    def start(self, upstreams: list[str]) -> Nginx:
        (self.dir / "site.conf").write_text(
            render_template(self.site, port=self.port, upstreams=upstreams, auth_dir=self.auth_dir)
        )
        check = subprocess.run([*self.cmd, "-t"], capture_output=True, text=True)
        assert check.returncode == 0, f"nginx refused the rendered template:\n{check.stderr}"
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                status, _, body = self.get("/proxy-health", [])
                if status == 200 and body == b"ok\n":
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = (self.dir / "error.log").read_text() if (self.dir / "error.log").exists() else ""
                raise RuntimeError(f"nginx did not answer on port {self.port}:\n{log[-3000:]}")
            time.sleep(0.05)  # polling the proxy's health endpoint, not waiting for a result

    def get(
        self, path: str, headers: list[tuple[str, str]], host: str = HOSTNAME
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """One request with exactly these headers (a name may repeat)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host)
            for k, v in headers:
                conn.putheader(k, v)
            conn.endheaders()
            r = conn.getresponse()
            return r.status, r.headers, r.read()
        finally:
            conn.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def proxy(replicas):
    """A factory: nginx running ``site`` (default: the shipped template) with these snippets enabled."""
    started: list[Nginx] = []

    def make(site: str | None = None, snippets: dict[str, str] | None = None) -> Nginx:
        n = Nginx(TEMPLATE.read_text() if site is None else site, snippets)
        started.append(n)
        return n.start([r.address for r in replicas])

    yield make
    for n in started:
        n.stop()


# ---- what the attacker sends, and what reaches the app


def forged(name: str = ATTACKER_NAME) -> list[tuple[str, str]]:
    """Every known user header naming ``name``, again in lower case, an underscore spelling, and an
    ``Authorization: Basic`` header for ``name`` with a made-up password."""
    out = [(h, name) for h in USER_HEADERS]
    out += [(h.lower(), name) for h in USER_HEADERS]
    out += [("X_Forwarded_User", name), ("Authorization", _basic(name, "x"))]
    return out


def _user_headers(received: list[tuple[str, str]]) -> dict[str, list[str]]:
    """The user headers (and Authorization) that arrived with a value, by lower-case name."""
    watched = {h.lower() for h in USER_HEADERS} | {"authorization", "x_forwarded_user"}
    out: dict[str, list[str]] = {}
    for k, v in received:
        if k.lower() in watched and v.strip():
            out.setdefault(k.lower(), []).append(v)
    return out


def _via(proxy: Nginx, headers: list[tuple[str, str]], cookie: str) -> tuple[str, list[tuple[str, str]]]:
    """The replica that answered and the headers it received, for a browser holding this affinity cookie
    (sent in one Cookie header with any cookie in ``headers``, as a browser sends them)."""
    cookies = [v for k, v in headers if k.lower() == "cookie"] + [f"planner_affinity={cookie}"]
    others = [(k, v) for k, v in headers if k.lower() != "cookie"]
    status, _, body = proxy.get("/", [*others, ("Cookie", "; ".join(cookies))])
    assert status == 200, (status, body[:300])
    answer = json.loads(body)
    return answer["replica"], [tuple(p) for p in answer["headers"]]


def _one_cookie_per_replica(proxy: Nginx, headers: list[tuple[str, str]]) -> dict[str, str]:
    """An affinity cookie that lands on each replica (the hash decides; tried until both are found)."""
    found: dict[str, str] = {}
    for i in range(200):
        cookie = f"browser-{i:03d}"
        replica, _ = _via(proxy, headers, cookie)
        found.setdefault(replica, cookie)
        if len(found) == 2:
            return found
    raise AssertionError(f"200 affinity cookies all reached {sorted(found)}: the upstream is not hashed on it")


def test_sticky_and_both_replicas_reached(proxy, replicas):
    p = proxy()
    # a browser without the cookie is given one
    status, headers, _ = p.get("/", [])
    assert status == 200
    assert headers["Set-Cookie"].startswith("planner_affinity=") and "HttpOnly" in headers["Set-Cookie"]
    cookies = _one_cookie_per_replica(p, [])
    assert sorted(cookies) == ["app1", "app2"]
    for replica, cookie in cookies.items():
        assert {_via(p, [], cookie)[0] for _ in range(5)} == {replica}  # the same browser, the same replica


WEBSOCKET = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13")]


def test_as_shipped_no_forged_identity_reaches_either_replica(proxy, replicas):
    p = proxy()
    attack = forged()
    for replica, cookie in _one_cookie_per_replica(p, attack).items():
        # a page request, and the websocket handshake (where Streamlit reads st.context.headers)
        got, received = _via(p, attack, cookie)
        got_ws, received_ws = _via(p, [*attack, *WEBSOCKET], cookie)
        assert got == got_ws == replica
        assert ("Upgrade", "websocket") in received_ws  # the handshake was passed on as one
        assert _user_headers(received) == _user_headers(received_ws) == {}, f"{replica} received forged headers"
        assert not any(ATTACKER_NAME in v for _, v in received_ws), received_ws
        assert not any(ATTACKER_NAME in v for _, v in received), received
        who = identify(auth_config(EDITORS_ENV, bound_address="0.0.0.0"), headers=received)
        assert (who.user, who.role) == (None, None)
        assert who.reason.startswith("saved scenarios need a signed-in user: no X-Forwarded-User header")


def test_control_a_bare_remote_user_hands_the_identity_to_the_client(proxy, replicas):
    """The old template line, put back: the same attack now picks the user. Proves the checks above bite."""
    template = TEMPLATE.read_text()
    old = _substitute(
        template,
        "proxy_set_header X-Forwarded-User $planner_user;",
        "proxy_set_header X-Forwarded-User $remote_user;",
        1,
    )
    p = proxy(site=old)
    _, received = _via(p, forged(), "browser-control")
    assert _user_headers(received) == {"x-forwarded-user": [ATTACKER_NAME]}
    who = identify(auth_config(EDITORS_ENV, bound_address="0.0.0.0"), headers=received)
    assert (who.user, who.role) == (ATTACKER_NAME, "edit")  # what SEC-1 found: a client made itself editor


def _htpasswd() -> str:
    """bob with a {SHA} entry (base64 of the SHA-1 digest), carol with a {PLAIN} one."""
    sha = base64.b64encode(hashlib.sha1(BOB_PASSWORD.encode()).digest()).decode()
    return f"{BOB}:{{SHA}}{sha}\ncarol:{{PLAIN}}carol-pw\n"


def _basic_snippets() -> dict[str, str]:
    return {"basic.conf": (AUTH_EXAMPLES / "basic.conf.example").read_text(), "htpasswd": _htpasswd()}


def test_basic_sign_in_passes_the_checked_user_only(proxy, replicas):
    p = proxy(snippets=_basic_snippets())
    attack = [(k, v) for k, v in forged() if k.lower() != "authorization"]
    bob = [*attack, ("Authorization", _basic(BOB, BOB_PASSWORD))]
    for replica, cookie in _one_cookie_per_replica(p, bob).items():
        got, received = _via(p, bob, cookie)
        assert got == replica
        assert _user_headers(received) == {"x-forwarded-user": [BOB]}, replica
        who = identify(auth_config(EDITORS_ENV, bound_address="0.0.0.0"), headers=received)
        assert (who.user, who.role) == (BOB, "read")

    before = [r.count() for r in replicas]
    refused = {
        "wrong password": [*attack, ("Authorization", _basic(BOB, "guess"))],
        "no password": attack,
        "the attacker's name": forged(),  # alice is not in the password file
    }
    for case, headers in refused.items():
        status, resp, _ = p.get("/", headers)
        assert status == 401, case
        assert resp["WWW-Authenticate"].startswith("Basic"), case
        assert resp["X-Frame-Options"] == "SAMEORIGIN", case  # the server's headers survive the snippet
    assert [r.count() for r in replicas] == before  # no refused request reached a replica


def _oauth2_snippets(stand_in) -> dict[str, str]:
    text = (AUTH_EXAMPLES / "oauth2-proxy.conf.example").read_text()
    return {"oauth2-proxy.conf": _substitute(text, "http://oauth2-proxy:4180", f"http://{stand_in.address}")}


def test_oauth2_proxy_sign_in_passes_the_session_user_only(proxy, replicas, oauth2_stand_in):
    p = proxy(snippets=_oauth2_snippets(oauth2_stand_in))
    bob = [*forged(), ("Cookie", f"_oauth2_proxy={BOB_SESSION}")]
    for replica, cookie in _one_cookie_per_replica(p, bob).items():
        got, received = _via(p, bob, cookie)
        assert got == replica
        assert _user_headers(received) == {"x-forwarded-user": [BOB_EMAIL]}, replica
        who = identify(auth_config(EDITORS_ENV, bound_address="0.0.0.0"), headers=received)
        assert (who.user, who.role) == (BOB_EMAIL, "read")
    _, resp, _ = p.get("/", bob)
    assert resp["X-Frame-Options"] == "SAMEORIGIN"  # the server's headers survive the snippet

    before = [r.count() for r in replicas]
    status, resp, body = p.get("/", forged())  # no session: the sign-in page, from oauth2-proxy
    assert (status, body) == (403, b"oauth2-proxy sign-in page")
    assert [r.count() for r in replicas] == before
