#!/usr/bin/env bash
# Install the Debian packages wstrace needs to build, test and benchmark, when missing.
# Idempotent: does nothing (and needs no network) when everything is there.
set -euo pipefail

packages=(cmake make gcc g++ pkg-config libsqlite3-dev sqlite3 libjansson-dev libcriterion-dev valgrind time
          zlib1g-dev chromium-headless-shell
          clang-14 libclang-rt-14-dev) # clang and libFuzzer: scripts/fuzz.sh
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    echo "bootstrap: installing ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -e /usr/local/cuda/include/cuda_runtime_api.h ] && [ -z "${CUDA_HOME:-}" ]; then
    echo "bootstrap: the CUDA toolkit headers were not found in /usr/local/cuda (set CUDA_HOME)" >&2
    exit 1
fi
