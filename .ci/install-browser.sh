#!/bin/sh
# Install what the graph viewer browser test and the TensorBoard test need (idempotent).
# Usage: .ci/install-browser.sh [PYTHON]   (PYTHON defaults to python3)
set -eu
PY="${1:-python3}"
if ! command -v chromium >/dev/null 2>&1 || [ ! -x /usr/bin/chromedriver ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium chromium-driver
    else
        echo "install-browser: apt-get not found; install Chromium and chromedriver by hand" >&2
    fi
fi
"$PY" -m pip install -q -r "$(dirname "$0")/../tests/requirements-graph.txt"
