"""The served app: app.py (and pages/) behind ui.server_guard's Host allow-list and frame protection.

`make run`, the Docker image and compose.yaml start this file: `streamlit run serve.py` finds the
``st.App`` below and serves app.py exactly as `streamlit run app.py` would, with the guard's middleware in
front of every HTTP request and websocket handshake. `streamlit run app.py` still works (tests, AppTest)
but has no Host allow-list and no frame protection: do not expose it.

At startup it prints who may change the saved scenarios (core.store.auth.access_summary): with no sign-in
(PLANNER_AUTH unset) on an address other than loopback they are read-only for everyone.
"""

import os
import sys

import streamlit as st

from core.store.auth import access_summary, auth_config
from ui.auth import server_address
from ui.server_guard import guard_middleware
from ui.warmup import warm_up

try:
    middleware = guard_middleware()
except ValueError as err:  # a bad PLANNER_ALLOWED_HOSTS: say which entry and what is allowed, no traceback
    raise SystemExit(f"Not started: {err}") from None

# who may change the saved scenarios, in one line (core/store/auth.py: no sign-in beyond loopback = read-only)
try:
    _access = access_summary(auth_config(os.environ, bound_address=server_address()))
except ValueError as err:  # the pages fail closed with the same reason
    _access = f"Saved scenarios: no access for anyone: the sign-in settings are wrong: {err}."
print(_access, file=sys.stderr)

# the catalog, pandas / Altair and the chart schema, loaded once before the first visitor (ui/warmup.py)
_took = warm_up()
print("Warmed up: " + ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in _took.items()), file=sys.stderr)

app = st.App("app.py", middleware=middleware)
