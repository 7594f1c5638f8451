"""The served app: app.py (and pages/) behind ui.server_guard's Host allow-list and frame protection.

`make run`, the Docker image and compose.yaml start this file: `streamlit run serve.py` finds the
``st.App`` below and serves app.py exactly as `streamlit run app.py` would, with the guard's middleware in
front of every HTTP request and websocket handshake. `streamlit run app.py` still works (tests, AppTest)
but has no Host allow-list and no frame protection: do not expose it.
"""

import sys

import streamlit as st

from ui.server_guard import guard_middleware
from ui.warmup import warm_up

try:
    middleware = guard_middleware()
except ValueError as err:  # a bad PLANNER_ALLOWED_HOSTS: say which entry and what is allowed, no traceback
    raise SystemExit(f"Not started: {err}") from None

# the catalog, pandas / Altair and the chart schema, loaded once before the first visitor (ui/warmup.py)
_took = warm_up()
print("Warmed up: " + ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in _took.items()), file=sys.stderr)

app = st.App("app.py", middleware=middleware)
