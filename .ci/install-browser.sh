#!/bin/sh
# What the graph viewer browser test and the TensorBoard test need (idempotent; never prompts).
# Usage: .ci/install-browser.sh [PYTHON]   (PYTHON defaults to python3: use the project's .venv/bin/python)
# Chromium + chromedriver come from apt, only when running as root or with password-less sudo;
# otherwise nothing is installed and the browser tests skip, saying why.
set -eu
PY="${1:-python3}"
if ! command -v chromium >/dev/null 2>&1 || [ ! -x /usr/bin/chromedriver ]; then
    why="for the graph viewer browser tests (tests/test_graph_viewer_browser.py)"
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-browser: no apt-get: install Chromium and chromedriver by hand $why; those tests skip until then"
    elif [ "$(id -u)" -eq 0 ]; then
        echo "install-browser: installing chromium and chromium-driver with apt-get $why"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        echo "install-browser: installing chromium and chromium-driver with sudo apt-get $why"
        sudo -n apt-get update -qq
        sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver
    else
        echo "install-browser: not root and no password-less sudo: Chromium is not installed, the browser tests skip"
        echo "install-browser: to run them: sudo apt-get install chromium chromium-driver"
    fi
fi
echo "install-browser: installing selenium, tensorboard and tb-graph-ascend into $PY's environment"
"$PY" -m pip install -q -r "$(dirname "$0")/../tests/requirements-graph.txt"
