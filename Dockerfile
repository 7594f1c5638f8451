# syntax=docker/dockerfile:1
# MoE Deployment Planner: slim image, non-root, headless, health-checked.
#   docker build -t moe-planner . && docker run --rm -p 8501:8501 moe-planner
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STREAMLIT_SERVER_HEADLESS=true STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
# fonts for server-side chart export (vl-convert renders with the system DejaVu)
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# exact versions (requirements.txt is the pinned lock of pyproject.toml's runtime dependencies)
COPY requirements.txt .
RUN pip install -r requirements.txt
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin app
# the code stays root-owned, so it is read-only for the app user
COPY --chown=root:root . .
RUN pip install --no-deps .
USER app
EXPOSE 8501
# slim has no curl: use Python. Include server.baseUrlPath in the URL if you set one.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys,urllib.request as u; sys.exit(0 if u.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read()==b'ok' else 1)"]
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
