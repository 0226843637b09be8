# The Build Kafka web app. It serves the committed curves in data/, so the image carries
# neither the PySpark pipeline nor Java.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/build-kafka

# Installed in place (-e) so the code keeps finding templates/, static/ and data/ beside it,
# exactly as in a checkout. Runtime dependencies only: no dev or pipeline extra.
COPY pyproject.toml ./
COPY app/ app/
COPY engine/ engine/
COPY scenes/ scenes/
RUN pip install --no-cache-dir -e .

COPY templates/ templates/
COPY static/ static/
COPY data/ data/

# Numeric ids so that Kubernetes' runAsNonRoot can verify the user without reading /etc/passwd.
RUN groupadd --system --gid 10001 buildkafka \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin buildkafka
USER 10001:10001

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=4)"]
CMD ["uvicorn", "app.main:app", "--host", "0.0.0.0", "--port", "8000"]
