"""The deployment files, checked statically: `make run`'s binding, the Docker image, compose.yaml and the
nginx proxy it runs, and the Host allow-list's parsing.

There is no Docker daemon (nor compose) on the test machine, so compose.yaml is not run here: it is parsed
with PyYAML and each promise of the README's team deployment is checked in it (two replicas behind a
sticky proxy, PostgreSQL with a named volume, the shared cookie secret from the env file, healthchecks,
nothing secret committed). The two-replica behaviour itself is run for real, without Docker, in
tests/e2e/test_replicas.py.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INTERPOLATED = re.compile(r"^\$\{(?P<var>[A-Z_][A-Z0-9_]*)(?P<op>:\?|:-)?(?P<arg>[^}]*)\}$")
SECRET_KEY = re.compile(r"SECRET|PASSWORD|TOKEN|PGPASS", re.I)


def _make_run(*overrides: str) -> list[str]:
    """The command `make run` would start (dry run: nothing is executed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}
    out = subprocess.run(
        ["make", "-n", "-s", "run", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    line = next(x for x in out.splitlines() if " streamlit run " in x)
    return shlex.split(line)


def _option(argv: list[str], name: str) -> str:
    for i, a in enumerate(argv):
        if a == name:
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    raise AssertionError(f"{name} not in {argv}")


# ---- 1. binding


def test_make_run_binds_loopback_unless_told_and_runs_the_guarded_entry():
    argv = _make_run()
    assert argv[argv.index("run") + 1] == "serve.py"
    assert _option(argv, "--server.address") == "127.0.0.1"
    assert _option(argv, "--server.port") == "8501"
    exposed = _make_run("ADDRESS=0.0.0.0", "PORT=9000")
    assert (_option(exposed, "--server.address"), _option(exposed, "--server.port")) == ("0.0.0.0", "9000")


def test_config_defaults_to_loopback_and_keeps_xsrf():
    import tomllib

    server = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())["server"]
    assert server["address"] == "127.0.0.1"
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True


def _dockerfile() -> list[str]:
    """Dockerfile instructions, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_docker_image_listens_inside_the_container_and_keeps_the_store_in_a_volume():
    ins = _dockerfile()
    cmd = next(x for x in ins if x.startswith("CMD "))
    argv = yaml.safe_load(cmd[4:])  # exec form: a JSON list
    assert argv[:3] == ["streamlit", "run", "serve.py"]
    assert "--server.address=0.0.0.0" in argv  # the published port arrives on the container's interface
    env = " ".join(x for x in ins if x.startswith("ENV "))
    assert "PLANNER_DB=/data/scenarios.db" in env
    assert any(re.fullmatch(r'VOLUME \[?"?/data"?\]?', x) for x in ins)
    # the volume's mount point belongs to the non-root user, created before VOLUME (later changes are lost)
    i_chown = next(i for i, x in enumerate(ins) if "chown" in x and "/data" in x)
    i_volume = next(i for i, x in enumerate(ins) if x.startswith("VOLUME"))
    assert i_chown < i_volume and "app" in ins[i_chown].split("chown", 1)[1]
    # PostgreSQL support is in the image, pinned
    pins = (ROOT / "deploy/requirements-postgres.txt").read_text().split()
    assert pins and all("==" in p for p in pins) and any(p.startswith("psycopg") for p in pins)
    assert any("requirements-postgres.txt" in x for x in ins if x.startswith("RUN pip install"))
    # the env file with the secrets never goes into the image
    assert "deploy/*.env" in (ROOT / ".dockerignore").read_text().split()


def test_readme_documents_the_binding():
    readme = (ROOT / "README.md").read_text()
    assert "make run ADDRESS=0.0.0.0" in readme
    runs = [ln for ln in readme.splitlines() if ln.startswith("docker run")]
    assert runs and all(" -p 127.0.0.1:8501:8501 " in ln for ln in runs)
    for word in ("PLANNER_ALLOWED_HOSTS", "docker compose --env-file deploy/planner.env up", "X-Forwarded-User"):
        assert word in readme, word


# ---- 2. the Host allow-list


def test_allowed_hosts_defaults_extras_and_refusals():
    from ui.server_guard import allowed_hosts

    loopback = ["localhost", "127.0.0.1", "[::1]"]
    assert allowed_hosts("", "") == loopback
    assert allowed_hosts("", "0.0.0.0") == loopback  # a wildcard bind names no host
    assert allowed_hosts("", "10.0.0.5") == [*loopback, "10.0.0.5"]
    assert allowed_hosts(" Planner.Example.com:8080, *.corp.example ,", "::") == [
        *loopback,
        "planner.example.com",
        "*.corp.example",
    ]
    assert allowed_hosts("fd00::1", "") == [*loopback, "[fd00::1]"]
    assert allowed_hosts("*", "") == ["*"]
    for bad in ("http://planner.example", "pl*nner.example", "a/b", "planner.example:port"):
        with pytest.raises(ValueError, match="PLANNER_ALLOWED_HOSTS") as e:
            allowed_hosts(bad, "")
        assert repr(bad.strip()) in str(e.value) and "*.example.com" in str(e.value)


# ---- 3. compose.yaml and the proxy


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _app_services(compose: dict) -> dict[str, dict]:
    return {n: s for n, s in compose["services"].items() if s.get("image", "").startswith("moe-planner")}


def _interpolated(value) -> re.Match:
    m = INTERPOLATED.match(str(value))
    assert m, f"{value!r} should come from the env file (${{VAR:?message}})"
    return m


def test_compose_runs_two_replicas_on_postgres_behind_the_proxy_only(compose):
    apps = _app_services(compose)
    assert len(apps) >= 2, sorted(compose["services"])
    for name, s in apps.items():
        env = s["environment"]
        assert "ports" not in s, f"{name} must be reachable only through the proxy"
        # the same store for all: PostgreSQL, the password not in the URL (libpq reads PGPASSWORD)
        assert env["PLANNER_DB"] == "postgresql://planner@db:5432/planner"
        assert _interpolated(env["PGPASSWORD"])["op"] == ":?"
        # the same cookie secret for all replicas, from the env file, required
        m = _interpolated(env["STREAMLIT_SERVER_COOKIE_SECRET"])
        assert m["op"] == ":?" and m["var"] == "PLANNER_COOKIE_SECRET"
        assert _interpolated(env["PLANNER_ALLOWED_HOSTS"])["var"] == "PLANNER_HOSTNAME"
        assert s["depends_on"]["db"]["condition"] == "service_healthy"
        assert "/_stcore/health" in " ".join(s["healthcheck"]["test"])
    assert len({str(s["environment"]) for s in apps.values()}) == 1  # identical replicas

    db = compose["services"]["db"]
    assert db["image"].startswith("postgres:")
    assert db["environment"]["POSTGRES_USER"] == "planner" and db["environment"]["POSTGRES_DB"] == "planner"
    assert (
        _interpolated(db["environment"]["POSTGRES_PASSWORD"])["var"]
        == _interpolated(next(iter(apps.values()))["environment"]["PGPASSWORD"])["var"]
    )
    volume = next(v for v in db["volumes"] if v.endswith(":/var/lib/postgresql/data"))
    assert volume.split(":")[0] in compose["volumes"]  # a named volume, not a bind mount
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])

    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    assert set(apps) <= {n for n, d in proxy["depends_on"].items() if d["condition"] == "service_healthy"}
    assert any(v.startswith("./deploy/nginx.conf.template:/etc/nginx/templates/") for v in proxy["volumes"])
    (published,) = proxy["ports"]
    address = _interpolated(re.match(r"\$\{[^}]*\}", published)[0])  # ${PLANNER_PUBLISH_ADDRESS:-127.0.0.1}
    assert (address["op"], address["arg"]) == (":-", "127.0.0.1")
    assert proxy["healthcheck"]["test"]


def test_no_secret_is_committed(compose):
    for name, s in compose["services"].items():
        for key, value in (s.get("environment") or {}).items():
            if SECRET_KEY.search(key):
                assert _interpolated(value)["op"] == ":?", f"{name}.{key}"
    example = (ROOT / "deploy/planner.env.example").read_text()
    for line in example.splitlines():
        key, _, value = line.partition("=")
        if line and not line.startswith("#") and SECRET_KEY.search(key):
            assert value == "", f"{key} must be empty in the example (compose refuses to start without it)"
    # the real env file is ignored by git (and by docker build, see above)
    r = subprocess.run(["git", "check-ignore", "-q", "deploy/planner.env"], cwd=ROOT)
    assert r.returncode == 0, "deploy/planner.env must be git-ignored"


def _nginx_blocks(text: str) -> list:
    """nginx config -> a list of (directive words, children or None); enough for these checks."""
    text = re.sub(r"\$\{(\w+)\}", r"$<\1>", re.sub(r"#[^\n]*", "", text))  # ${VAR}: envsubst's, not a block
    tokens = [re.sub(r"\$<(\w+)>", r"${\1}", t) for t in re.findall(r"\"[^\"]*\"|'[^']*'|[{};]|[^\s{};]+", text)]
    stack: list[list] = [[]]
    words: list[str] = []
    for t in tokens:
        if t == "{":
            block: list = []
            stack[-1].append((words, block))
            stack.append(block)
            words = []
        elif t == "}":
            stack.pop()
        elif t == ";":
            stack[-1].append((words, None))
            words = []
        else:
            words.append(t[1:-1] if t[0] in "\"'" else t)
    assert len(stack) == 1 and not words, "unbalanced braces"
    return stack[0]


def _find(blocks: list, *head: str) -> list:
    return [(w, c) for w, c in blocks if w[: len(head)] == list(head)]


def test_proxy_is_sticky_upgrades_websockets_and_protects_frames_and_hosts(compose):
    conf = _nginx_blocks((ROOT / "deploy/nginx.conf.template").read_text())
    # sticky: every request hashes on the affinity cookie (one is set when absent)
    ((_, upstream),) = _find(conf, "upstream", "planner")
    assert _find(upstream, "hash", "$planner_affinity", "consistent")
    servers = {w[1] for w, _ in _find(upstream, "server")}
    assert servers == {f"{n}:8501" for n in _app_services(compose)}
    ((_, affinity),) = _find(conf, "map", "$cookie_planner_affinity", "$planner_affinity")
    assert ["", "$request_id"] in [w for w, _ in affinity]
    # unknown Host names are refused by a default server; the app's name is served
    by_name = {}
    for _, body in _find(conf, "server"):
        listen = next(x for x, _ in _find(body, "listen"))
        by_name["default" if "default_server" in listen else next(x for x, _ in _find(body, "server_name"))[1]] = body
    default = by_name.pop("default")
    ((_, refuse),) = _find(default, "location", "/")
    assert _find(refuse, "return")[0][0] == ["return", "421"]  # Misdirected Request
    (app_server,) = by_name.values()
    assert next(x for x, _ in _find(app_server, "server_name"))[1] == "${PLANNER_HOSTNAME}"
    # frame protection, also on error responses
    headers = {w[1]: w[2:] for w, _ in _find(app_server, "add_header")}
    assert headers["Content-Security-Policy"] == ["frame-ancestors 'self'", "always"]
    assert headers["X-Frame-Options"] == ["SAMEORIGIN", "always"]
    assert headers["Set-Cookie"] == ["$planner_affinity_cookie", "always"]  # the affinity cookie, when absent
    assert {w[1] for w, _ in _find(app_server, "proxy_hide_header")} >= {"Content-Security-Policy", "X-Frame-Options"}
    # websocket upgrade to the sticky upstream, the client's Host (with its port) passed on
    ((_, loc),) = _find(app_server, "location", "/")
    sets = {w[1]: w[2] for w, _ in _find(loc, "proxy_set_header")}
    assert _find(loc, "proxy_pass", "http://planner") and _find(loc, "proxy_http_version", "1.1")
    assert sets["Upgrade"] == "$http_upgrade" and sets["Connection"] == "$connection_upgrade"
    assert sets["Host"] == "$http_host"
    # identity only from the proxy's own sign-in (SEC-1, issue 37): the user header comes from $planner_user,
    # which is empty unless an included snippet sets it; every other user header the app or oauth2-proxy
    # know, and Authorization, are set to nothing, so what a client sends there never reaches a replica
    from core.store.auth import DEFAULT_USER_HEADER, USER_HEADERS

    assert {h: sets.get(h) for h in USER_HEADERS} == {
        h: ("$planner_user" if h == DEFAULT_USER_HEADER else "") for h in USER_HEADERS
    }
    assert sets["Authorization"] == ""
    order = [w[:2] for w, _ in loc if w[0] in ("set", "include")]
    assert order == [["set", "$planner_user"], ["include", "/etc/nginx/planner-auth/*.conf"]]
    assert next(w for w, _ in _find(loc, "set", "$planner_user")) == ["set", "$planner_user", ""]
    # nginx parses $remote_user from the client's own Authorization header, checked or not: never used here
    assert "$remote_user" not in _directives_text(conf)
    ((_, upgrade),) = _find(conf, "map", "$http_upgrade", "$connection_upgrade")
    assert {tuple(w) for w, _ in upgrade} >= {("default", "upgrade"), ("", "close")}


def _directives_text(blocks: list) -> str:
    """Every directive word in a parsed config (comments are gone), for a search."""
    return " ".join(" ".join(w) + (" " + _directives_text(c) if c else "") for w, c in blocks)


def test_sign_in_snippets_are_examples_that_set_the_user_only_after_checking(compose):
    """deploy/auth/: the snippets the template includes. Shipped as *.example (none active); the real ones and
    the password file stay out of git. tests/integration/test_proxy_forged_headers.py runs both in nginx."""
    auth = ROOT / "deploy/auth"
    assert sorted(p.name for p in auth.glob("*.conf")) == []  # nothing active as shipped
    basic = _nginx_blocks((auth / "basic.conf.example").read_text())
    assert _find(basic, "auth_basic") and _find(basic, "auth_basic_user_file", "/etc/nginx/planner-auth/htpasswd")
    assert [w for w, _ in _find(basic, "set")] == [["set", "$planner_user", "$remote_user"]]  # checked by auth_basic
    sso = _nginx_blocks((auth / "oauth2-proxy.conf.example").read_text())
    assert _find(sso, "auth_request", "/oauth2/auth")
    assert [w for w, _ in _find(sso, "auth_request_set", "$planner_user")] == [
        ["auth_request_set", "$planner_user", "$upstream_http_x_auth_request_email"]
    ]
    assert not _find(sso, "set") and "$remote_user" not in _directives_text(sso)
    assert not _find(sso, "add_header")  # one would drop the server's frame-protection headers in location /
    for _, body in _find(sso, "location"):
        assert _find(body, "auth_request", "off")  # oauth2-proxy's own pages are not behind itself
    for name in ("basic.conf", "oauth2-proxy.conf", "htpasswd"):
        r = subprocess.run(["git", "check-ignore", "-q", f"deploy/auth/{name}"], cwd=ROOT)
        assert r.returncode == 0, f"deploy/auth/{name} must be git-ignored"
    # compose mounts the directory where the template includes it, read-only
    assert "./deploy/auth:/etc/nginx/planner-auth:ro" in compose["services"]["proxy"]["volumes"]


def test_streamlit_secrets_reach_every_replica(compose):
    """PLANNER_AUTH=oidc needs [auth] in .streamlit/secrets.toml: compose mounts the file the env file names
    where Streamlit reads it in the image; the default is the shipped example, with no [auth], so compose
    starts without one."""
    import tomllib

    workdir = next(x.split()[1] for x in _dockerfile() if x.startswith("WORKDIR "))
    for name, s in _app_services(compose).items():
        assert {"source": "streamlit_secrets", "target": f"{workdir}/.streamlit/secrets.toml"} in s["secrets"], name
    source = _interpolated(compose["secrets"]["streamlit_secrets"]["file"])
    assert (source["var"], source["op"]) == ("PLANNER_STREAMLIT_SECRETS", ":-")
    example = ROOT / source["arg"]
    assert example == ROOT / "deploy/secrets.toml.example"
    assert "auth" not in tomllib.loads(example.read_text())  # as shipped: no [auth] section
    # uncommented, the example is the section Streamlit's login wants
    tail = example.read_text().split("\n# [auth]\n", 1)[1]
    body = "\n".join(ln[2:] for ln in tail.splitlines() if ln.startswith("# ") and not ln.startswith("# # "))
    section = tomllib.loads("[auth]\n" + body)["auth"]
    assert set(section) == {"redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url"}
    assert section["redirect_uri"].endswith("/oauth2callback")
    r = subprocess.run(["git", "check-ignore", "-q", "deploy/secrets.toml"], cwd=ROOT)
    assert r.returncode == 0, "deploy/secrets.toml must be git-ignored"
    assert {"deploy/secrets.toml", "deploy/auth/htpasswd"} <= set((ROOT / ".dockerignore").read_text().split())
    env_example = (ROOT / "deploy/planner.env.example").read_text()
    assert re.search(r"(?m)^PLANNER_STREAMLIT_SECRETS=$", env_example)


def test_authlib_is_a_pinned_dependency():
    """st.login needs Authlib>=1.3.2 (SEC-3): a lower bound in pyproject.toml, an exact pin in the image's lock."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "Authlib>=1.3.2" in deps
    pins = dict(ln.split("==") for ln in (ROOT / "requirements.txt").read_text().split() if "==" in ln)
    version = tuple(int(x) for x in pins["Authlib"].split(".")[:3])
    assert version >= (1, 3, 2)
    for needed in ("cryptography", "joserfc"):  # Authlib's own dependencies, pinned too
        assert needed in pins, needed


def test_no_sign_in_beyond_loopback_is_documented_as_read_only():
    """SEC-2: the Makefile, Dockerfile, env example and README say what an exposed server without sign-in
    does (saved scenarios read-only) and how to change it (PLANNER_AUTH=none or a sign-in mode)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "other Host headers are refused" not in makefile  # the allow-list is no protection of the data
    comment = makefile.split("ADDRESS ?=")[0]
    assert "read-only" in comment and "PLANNER_AUTH=none" in comment
    target = re.search(r"(?ms)^system-deps:\n(.*?)\n\n", makefile)[1]
    assert "nginx" in target  # the proxy tests' nginx is installed like chromium and postgresql
    docker = (ROOT / "Dockerfile").read_text()
    assert "read-only" in docker and "-e PLANNER_AUTH=none" in docker
    env_example = (ROOT / "deploy/planner.env.example").read_text()
    assert "READ-ONLY" in env_example and re.search(r"(?m)^#\s+none\s", env_example)
    readme = (ROOT / "README.md").read_text()
    for word in ("PLANNER_AUTH=none", "read-only", "deploy/auth/basic.conf.example", "deploy/secrets.toml.example"):
        assert word in readme, word
