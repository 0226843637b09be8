# The Build Kafka web app. It serves the committed curves in data/, so the image carries
# neither the PySpark pipeline nor Java.
#
# Base: the official python:3.11-slim image (Python 3.11.16 on Debian trixie), pinned by its
# multi-arch index digest so a rebuild gets the same base. This digest could not be resolved
# from the machine that wrote it (no access to Docker Hub); it is the python:3.11-slim digest
# recorded in several public repositories' Dockerfiles and digest records (one records it as the
# index of python:3.11-slim-trixie, Python 3.11.16, pushed 2026-08-16, official-images commit
# fe89472b). To move to a newer base: `docker buildx imagetools inspect python:3.11-slim`.
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/build-kafka

# Dependencies first, from the lock (scripts/lock.sh writes it): every file checked against its
# sha256, wheels only, nothing resolved at build time. This layer is rebuilt only when the lock
# changes, not on every code change. Runtime dependencies only: no dev or pipeline extra.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes --no-deps --only-binary=:all: -r requirements.lock

# The code is not pip-installed: `python -m app.serve` runs from this directory, where it finds
# templates/, static/ and data/ beside the packages, exactly as in a checkout.
COPY app/ app/
COPY engine/ engine/
COPY scenes/ scenes/
COPY templates/ templates/
COPY static/ static/
COPY data/ data/
# the docs the app serves at /docs (docs/*.md, and the README at /docs/readme)
COPY docs/ docs/
COPY README.md ./

# Numeric ids so that Kubernetes' runAsNonRoot can verify the user without reading /etc/passwd.
RUN groupadd --system --gid 10001 buildkafka \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin buildkafka
# workshops' SQLite file (mount a volume here to keep them across containers, or set DATABASE_URL)
RUN mkdir /data && chown 10001:10001 /data
USER 10001:10001

# app/serve.py reads these (and BUILD_KAFKA_WEB_WORKERS, BUILD_KAFKA_ENGINE_WORKERS, the timeouts
# and the connection cap; see the README).
ENV BUILD_KAFKA_HOST=0.0.0.0 \
    BUILD_KAFKA_PORT=8000 \
    BUILD_KAFKA_DATA_DIR=/data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["python", "-m", "app.serve"]
