# The two commands (see README.md):
#   make run    create .venv, install, start the app on http://localhost:8501
#   make test   create .venv, install with test extras, run every test (browser tests included)
PYTHON ?= python3.11
VENV   ?= .venv
PY      = $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test install install-test browser bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	$(PY) -m streamlit run app.py --server.port $(PORT)

# Installs Debian's chromium for the browser tests when we are root and it is missing;
# otherwise the browser tests skip with a notice (and fail under CI=true).
browser:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null; \
	  else \
	    echo "NOTICE: Debian package 'chromium' is missing and we are not root: browser tests will be skipped"; \
	  fi; \
	fi

test: install-test browser
	$(PY) -m pytest

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache
