# syntax=docker/dockerfile:1
# MoE Deployment Planner: slim image, non-root, headless, health-checked.
#   docker build -t moe-planner .
#   docker run --rm -p 127.0.0.1:8501:8501 -v planner-data:/data moe-planner    # http://localhost:8501
# Binding: inside its container the server listens on 0.0.0.0 (a published port arrives on the container's
# own interface, not on its loopback); `-p 127.0.0.1:8501:8501` publishes it on the host's loopback only.
# Publish it further only with authentication in front: compose.yaml (two replicas, PostgreSQL, nginx).
# Saved scenarios in a single container are read-only: the server listens on 0.0.0.0 with no sign-in
# (core/store/auth.py). `docker run -e PLANNER_AUTH=none ...` lets everyone who reaches the port edit them; use it
# with `-p 127.0.0.1:...` only, or put sign-in in front (PLANNER_AUTH=header behind a proxy, or oidc).
# Saved scenarios: SQLite in the /data volume, or PostgreSQL with PLANNER_DB=postgresql://... (the driver is in).
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STREAMLIT_SERVER_HEADLESS=true STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    PLANNER_DB=/data/scenarios.db
# fonts for server-side chart export (vl-convert renders with the system DejaVu)
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# exact versions (requirements.txt is the pinned lock of pyproject.toml's runtime dependencies; the
# PostgreSQL driver for a team's store is pinned in deploy/requirements-postgres.txt)
COPY requirements.txt deploy/requirements-postgres.txt ./
RUN pip install -r requirements.txt -r requirements-postgres.txt
# the store's volume belongs to the app user; created before VOLUME (changes after it would be lost)
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin app && mkdir /data && chown app:app /data
# the code stays root-owned, so it is read-only for the app user (.dockerignore keeps deploy/*.env out)
COPY --chown=root:root . .
RUN pip install --no-deps .
USER app
VOLUME ["/data"]
EXPOSE 8501
# slim has no curl: use Python. Include server.baseUrlPath in the URL if you set one. 127.0.0.1 is always
# an allowed Host (ui/server_guard.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys,urllib.request as u; sys.exit(0 if u.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read()==b'ok' else 1)"]
# serve.py: app.py behind the Host allow-list (PLANNER_ALLOWED_HOSTS) and frame protection
CMD ["streamlit", "run", "serve.py", "--server.address=0.0.0.0", "--server.port=8501"]
