#!/usr/bin/env bash
# Install everything the suite needs, lint, and run every test (engine, routes, pipeline on
# local Spark, browser). This is the one command CI runs (through .ci/run).
#
# Usage: bash scripts/test.sh [extra pytest arguments, e.g. tests/engine -x]
#
# Safe to run again and again: each stage skips work that is already done. System packages
# (Chromium for the browser tests, Java 17+ for Spark, shellcheck for the script lint, PostgreSQL
# for the workshop-storage tests) come from Debian's apt and need root; CI runs as root.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/venv.sh
source scripts/venv.sh

MIN_JAVA_MAJOR=17
CHROMIUM_PATH=/usr/bin/chromium
in_ci=false
case "${CI:-}" in "" | 0 | false | FALSE | False) ;; *) in_ci=true ;; esac

stage() { echo "test: [${SECONDS}s] $*"; }

# Prints the major version of the first `java` on PATH (8 for "1.8.0_x", 17 for "17.0.15"),
# or nothing when there is none.
java_major() {
  command -v java >/dev/null 2>&1 || return 0
  local version
  version=$(java -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  case $version in 1.*) version=${version#1.} ;; esac
  echo "${version%%[.+-]*}"
}

# True when some PostgreSQL server is installed (tests/support/pgcluster.py uses the newest).
postgres_ok() {
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

java_ok() {
  local major
  major=$(java_major)
  [ -n "$major" ] && [ "$major" -ge "$MIN_JAVA_MAJOR" ]
}

# --- System packages: one apt run for whatever is missing -----------------------------------
missing=()
[ -x "$CHROMIUM_PATH" ] || missing+=(chromium)
java_ok || missing+=(default-jre-headless)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
postgres_ok || missing+=(postgresql)

if [ ${#missing[@]} -eq 0 ]; then
  stage "system packages present (chromium, java $(java_major), shellcheck, postgresql)"
elif [ "$(id -u)" -eq 0 ]; then
  stage "installing Debian packages: ${missing[*]}"
  apt_log=$(mktemp)
  if ! {
    apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=120 "${missing[@]}"
  } >"$apt_log" 2>&1 </dev/null; then
    tail -n 30 "$apt_log" >&2
    echo "test: apt-get failed (full log: $apt_log)" >&2
    exit 1
  fi
  rm -f "$apt_log"
else
  echo "test: not root, so cannot install: ${missing[*]}" >&2
  if $in_ci; then
    exit 1
  fi
  echo "test: continuing; tests that need them will be skipped or fail" >&2
fi

if ! java_ok; then
  echo "test: Spark needs Java $MIN_JAVA_MAJOR+ on PATH, found '$(java_major)'" >&2
  exit 1
fi

# --- Python environment ------------------------------------------------------------------
ensure_venv test
stage "installing the package with the dev and pipeline extras into .venv"
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev,pipeline]'

export PATH="$PWD/.venv/bin:$PATH"
# Spark's Python workers otherwise run the first python3 on PATH outside this venv.
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"

# --- Lint, then the whole suite -------------------------------------------------------------
# A lint failure still lets the tests run, so one CI run reports both; the script fails at the end.
stage "ruff check ."
lint_status=0
ruff check --output-format concise . || lint_status=$?

stage "pytest"
pytest_status=0
python -m pytest "$@" || pytest_status=$?

if [ "$pytest_status" -eq 5 ]; then
  echo "test: FAILED: pytest collected no tests (exit 5); a run that tests nothing is not a pass" >&2
  exit 1
fi
if [ "$lint_status" -ne 0 ]; then
  echo "test: FAILED: ruff found problems (see above); pytest exited $pytest_status" >&2
  exit 1
fi
stage "done, pytest exited $pytest_status"
exit "$pytest_status"
