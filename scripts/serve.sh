#!/usr/bin/env bash
# Install the web app's runtime dependencies and serve it on http://127.0.0.1:${PORT:-8000}.
#
# Usage: bash scripts/serve.sh
# Needs only Python 3.11: the app reads the committed curves in data/, so no Spark or Java.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/venv.sh
source scripts/venv.sh

port=${PORT:-8000}

ensure_venv serve
echo "serve: installing runtime dependencies into .venv"
.venv/bin/pip install -q --disable-pip-version-check -e .

echo "serve: starting Build Kafka on http://127.0.0.1:$port (Ctrl-C stops it)"
exec .venv/bin/uvicorn app.main:app --host 127.0.0.1 --port "$port"
