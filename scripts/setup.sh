#!/usr/bin/env bash
# One-command set-up: system packages (when missing), .venv, the project and its pins.
# Idempotent: re-running with an unchanged pyproject.toml does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

# System libraries: open3d needs libusb/libGL/libgomp; its headless renderer needs Mesa's
# software Vulkan + EGL (used only by the benchmark peer); chromium drives the results-page test
# (tests/eval/test_results_page.py, headless over CDP).
APT_PKGS="libusb-1.0-0 libgl1 libgomp1 libvulkan1 mesa-vulkan-drivers libegl1 libegl-mesa0 libgl1-mesa-dri chromium"
missing=""
if command -v dpkg-query >/dev/null 2>&1; then
  for p in $APT_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
fi
if [ -n "$missing" ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "setup: installing system packages:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "setup: warning: missing system packages (open3d will not import; the browser test skips without chromium):$missing" >&2
  fi
fi

stamp="$VENV/.urbex-installed"
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch + torchvision pins (STACK_NOTES): the CPU wheel of torch 2.13 and PyPI's torchvision do
# not load together; 2.14.1 + 0.29.1 do. Users with their own CUDA build may skip this line.
"$VENV/bin/pip" install -q "torch==2.14.1" "torchvision==0.29.1"
"$VENV/bin/pip" install -q -e ".[ml,render,geo,dev]"
# not the k8s extra: the newest dagster-k8s (0.29.27) pins dagster 1.13.27 and would move dagster
# and its companions off their release; tests/pipelines/test_deploy.py skips its checks without it
# dagster's asset-selection parser needs antlr4 4.13; dvc's optional hydra/omegaconf pins 4.9
# (used only by `dvc exp run --set-param`). We keep dagster working.
"$VENV/bin/pip" install -q "antlr4-python3-runtime==4.13.2" 2>&1 | grep -v "dependency conflicts\|requires antlr4\|^ERROR: pip's dependency resolver" || true
echo "$want" > "$stamp"
echo "setup: done ($VENV)"
