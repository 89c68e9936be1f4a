#!/usr/bin/env bash
# Build and install llama-cpp-python for the embedded model with a portable instruction set.
# Usage: scripts/build_llama.sh PYTHON
#
# pip compiles llama-cpp-python from source, and llama.cpp's default is GGML_NATIVE=ON: code for
# every feature the build machine *reports*. A virtual machine can report AMX or AVX-512 and still
# forbid them, and a wheel built on one CPU can be reused on another, so that build dies with
# "Illegal instruction" (exit 132). Here llama.cpp is built with GGML_NATIVE=OFF and an explicit
# feature set chosen from what every CPU of the family has:
#   x86_64 with AVX2: AVX, AVX2, FMA, F16C, BMI2 (x86-64-v3: Intel Haswell 2013+, AMD Excavator+);
#                     never AVX-512 or AMX
#   x86_64 without AVX2: SSE only (GGML_AVX/AVX2/FMA/F16C off)
#   aarch64 and the rest: GGML_NATIVE=OFF and llama.cpp's generic flags
# LLAMA_CMAKE_ARGS overrides the choice (e.g. "-DGGML_NATIVE=OFF -DGGML_AVX512=ON" on a fleet
# known to run AVX-512). The wheel is kept in a cache folder named after the version, the flags,
# the Python and the architecture -- never pip's own wheel cache, which is keyed by the source
# archive alone and would hand back a native build made earlier.
set -euo pipefail
py="$1"
version="${LLAMA_CPP_VERSION:-0.3.36}"
arch="$(uname -m)"
if [ -n "${LLAMA_CMAKE_ARGS:-}" ]; then
  flags="$LLAMA_CMAKE_ARGS"
else
  case "$arch" in
    x86_64 | amd64)
      if grep -qw avx2 /proc/cpuinfo 2>/dev/null || sysctl -n machdep.cpu.leaf7_features 2>/dev/null | grep -qw AVX2; then
        flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
      else
        flags="-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"
      fi
      flags="$flags -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
      flags="$flags -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
      ;;
    *) flags="-DGGML_NATIVE=OFF" ;;
  esac
fi
pyver="$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"
tag="$(printf '%s|%s|%s|%s' "$version" "$flags" "$pyver" "$arch" | sha256sum | cut -c1-16)"
marker="$(dirname "$(dirname "$py")")/.llama-build"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$tag" ] && "$py" -c 'import llama_cpp' 2>/dev/null; then
  exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mesa-dilemmas/llama-wheels/$tag"
wheel="$(ls "$cache"/llama_cpp_python-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
  echo "building llama-cpp-python $version for $arch ($flags); about 5-7 minutes on 2 cores, once"
  mkdir -p "$cache.tmp"
  CMAKE_ARGS="$flags" FORCE_CMAKE=1 "$py" -m pip wheel --quiet --no-deps --no-cache-dir \
    --no-binary llama-cpp-python -w "$cache.tmp" "llama-cpp-python==$version"
  rm -rf "$cache" && mv "$cache.tmp" "$cache"
  printf '%s\n' "$flags" >"$cache/CMAKE_ARGS"
  wheel="$(ls "$cache"/llama_cpp_python-*.whl | head -n 1)"
fi
"$py" -m pip install --quiet --force-reinstall --no-deps "$wheel"
printf '%s\n' "$tag" >"$marker"
