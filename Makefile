# The two commands (see README.md):
#   make run    create .venv, install, start the app on http://localhost:8501
#   make test   create .venv, install with test extras, run every test (browser tests included)
# A team deployment (replicas, PostgreSQL, a proxy) is compose.yaml: README "Docker and team deployment".
PYTHON  ?= python3.11
VENV    ?= .venv
PY       = $(VENV)/bin/python
PORT    ?= 8501
# The address `make run` listens on: this machine only, where everyone can edit the saved scenarios.
# `make run ADDRESS=0.0.0.0` serves the network: with no sign-in (PLANNER_AUTH unset) the saved scenarios
# are then read-only for everyone (core/store/auth.py), because anyone who reaches the port could change them.
# To edit there, put sign-in in front (PLANNER_AUTH=header behind a proxy, or oidc: README), or accept
# that risk with PLANNER_AUTH=none. The Host allow-list (PLANNER_ALLOWED_HOSTS) only keeps browsers on
# other sites out (DNS rebinding); it is no sign-in: any client can send an allowed Host header.
ADDRESS ?= 127.0.0.1

.PHONY: run test install install-test system-deps bench clean

# -qq: pip still shows errors, not setuptools' notes on editable installs (a newcomer's first screen)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -qq -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -qq -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# serve.py is app.py behind the Host allow-list and frame protection (ui/server_guard.py)
run: install
	$(PY) -m streamlit run serve.py --server.address $(ADDRESS) --server.port $(PORT)

# Installs what the tests need from Debian when we are root and it is missing: chromium (browser
# tests), postgresql (the PostgreSQL scenario-store tests) and nginx (the proxy tests,
# tests/integration/test_proxy_*.py). Otherwise those tests skip with a notice naming the package (and
# fail under CI=true).
system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium fonts-dejavu-core"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx-light"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages for the tests:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "NOTICE: missing Debian packages:$$missing (not root): the tests that need them will be skipped"; \
	  fi; \
	fi

# The unit and page tests in two processes (pytest-xdist, one per core of the 2-core CI machine), then the
# integration tests (races between sessions, stores, the proxy in front of replicas) and the browser tests
# one at a time (each starts servers; side by side they would slow each other past their waits).
# `pytest` alone still runs everything in one process.
test: install-test system-deps
	$(PY) -m pytest -n 2 tests/unit tests/page
	$(PY) -m pytest tests/integration tests/e2e

bench: install-test
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache
