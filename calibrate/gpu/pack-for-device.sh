#!/usr/bin/env bash
# Packs what calibrate/gpu/device-check.sh runs into DIR (default .device, which git ignores): the
# lagom, lagom-calibrate and lagom-validate binaries of BUILD (default build) and the shared
# libraries they need that a CUDA machine's image may lack (protobuf, Boost.Program_options, fmt,
# zlib). The CUDA libraries (cudart, cuBLASLt, NCCL) stay behind: the GPU machine has its own.
#   calibrate/gpu/pack-for-device.sh [DIR] [BUILD]
set -euo pipefail
dir=${1:-.device}
build=${2:-build}
for b in lagom lagom-calibrate lagom-validate; do
  [ -x "$build/bin/$b" ] || { echo "no $build/bin/$b: build first (make build)" >&2; exit 1; }
done
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
cp "$build/bin/lagom" "$build/bin/lagom-calibrate" "$build/bin/lagom-validate" "$dir/bin/"
cp "$build/lib/libnccl-tuner-lagom.so" "$dir/lib/" 2>/dev/null || true
for b in "$dir"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libprotobuf*|libboost_*|libfmt*|libz.so*) cp -n "$lib" "$dir/lib/" ;;
    esac
  done
done
# Debug info stays here: what travels to a GPU machine is limited (64 MiB).
strip --strip-debug "$dir"/bin/* "$dir"/lib/*
cp -r tests/gpu "$dir/"
du -sh "$dir"
