#!/usr/bin/env bash
# Installs what flashnorm-opt needs (only what is missing), then configures
# and builds it in ./build. Safe to run again: a no-op when all is there.
set -euo pipefail
cd "$(dirname "$0")"

packages=(cmake ninja-build g++ python3 xz-utils llvm-22-dev libmlir-22-dev
          mlir-22-tools llvm-22-tools libomp-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
ninja -C build
