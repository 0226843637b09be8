# shellcheck shell=bash
# Sourced by serve.sh and test.sh (not run on its own): make sure the repo's .venv exists.
#
# The project pins Python 3.11 (pyproject's requires-python), so we look for that exact minor
# version rather than trusting whatever `python3` happens to be. Set PYTHON to choose one.

find_python311() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# ensure_venv LABEL: create .venv in the current directory unless it already has a pip.
ensure_venv() {
  local label=$1 python
  if [ -x .venv/bin/pip ]; then
    return 0
  fi
  if ! python=$(find_python311); then
    echo "$label: Python 3.11 not found (tried \$PYTHON, python3.11, python3)" >&2
    exit 1
  fi
  echo "$label: creating .venv with $python"
  if ! "$python" -m venv .venv; then
    # Debian ships venv's pip bootstrap in a separate package.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "$label: installing python3-venv"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      rm -rf .venv
      "$python" -m venv .venv
    else
      echo "$label: '$python -m venv' failed; install python3-venv (Debian) and retry" >&2
      exit 1
    fi
  fi
}
