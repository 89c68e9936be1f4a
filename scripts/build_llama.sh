#!/usr/bin/env bash
# Build and install llama-cpp-python for the embedded model with a portable instruction set.
# Usage: scripts/build_llama.sh PYTHON        build (once) and install into PYTHON's environment
#        scripts/build_llama.sh --print-flags print the CMake flags this machine gets, and exit
#
# pip compiles llama-cpp-python from source, and llama.cpp's default is GGML_NATIVE=ON: code for
# every feature the build machine *reports*. A virtual machine can report AMX or AVX-512 and still
# forbid them, and a wheel built on one CPU can be reused on another, so that build dies with
# "Illegal instruction" (exit 132). Here llama.cpp is built with GGML_NATIVE=OFF and an explicit
# feature set chosen from what every CPU of the family has (option names as in the ggml/CMakeLists
# of the llama.cpp vendored by llama-cpp-python 0.3.36):
#   x86_64 with AVX, AVX2, FMA, F16C and BMI2 (x86-64-v3: Intel Haswell 2013+, AMD Excavator+):
#                     those five; never AVX-512 or AMX
#   other x86_64:     SSE4.2 when the CPU has it, nothing above (AVX/AVX2/FMA/F16C/BMI2 off)
#   aarch64 and the rest: GGML_NATIVE=OFF and llama.cpp's generic flags
# LLAMA_CMAKE_ARGS overrides the choice (e.g. "-DGGML_NATIVE=OFF -DGGML_AVX512=ON" on a fleet
# known to run AVX-512); LLAMA_CPU_FLAGS replaces this CPU's feature list (/proc/cpuinfo names) to
# show what another machine would get with --print-flags. The wheel is kept in a cache folder named after the version, the flags,
# the Python and the architecture -- never pip's own wheel cache, which is keyed by the source
# archive alone and would hand back a native build made earlier.
#
# Next to the environment's bin/ it writes .llama-build (the cache tag and a digest of the installed
# native libraries: a later `pip install` over them makes this script reinstall) and
# .llama-build-flags (the CMake flags, read by tests/test_llama_build.py).
set -euo pipefail

usage() {
  echo "usage: $0 PYTHON | --print-flags" >&2
  exit 2
}
[ $# -eq 1 ] || usage

version="${LLAMA_CPP_VERSION:-0.3.36}"
arch="$(uname -m)"

# the CPU's feature names, lower case, one line (Linux: /proc/cpuinfo; macOS: sysctl)
cpu_features() {
  if [ -n "${LLAMA_CPU_FLAGS:-}" ]; then
    printf '%s\n' "$LLAMA_CPU_FLAGS"
  elif [ -r /proc/cpuinfo ]; then
    grep -m 1 '^flags' /proc/cpuinfo | cut -d: -f2-
  else
    sysctl -n machdep.cpu.features machdep.cpu.leaf7_features 2>/dev/null |
      tr '[:upper:]' '[:lower:]' | tr '\n' ' ' | sed 's/avx1\.0/avx/g; s/sse4\.2/sse4_2/g'
  fi
}

has_all() {  # has_all FEATURES NAME... : every NAME is a word of FEATURES
  local features=" $1 " name
  shift
  for name in "$@"; do
    case "$features" in *" $name "*) ;; *) return 1 ;; esac
  done
}

pick_flags() {
  if [ -n "${LLAMA_CMAKE_ARGS:-}" ]; then
    printf '%s\n' "$LLAMA_CMAKE_ARGS"
    return
  fi
  local features flags
  case "$arch" in
    x86_64 | amd64)
      features="$(cpu_features | tr -s '[:space:]' ' ')"
      if has_all "$features" avx avx2 fma f16c bmi2; then
        flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
      else
        if has_all "$features" sse4_2; then
          flags="-DGGML_NATIVE=OFF -DGGML_SSE42=ON"
        else
          flags="-DGGML_NATIVE=OFF -DGGML_SSE42=OFF"
        fi
        flags="$flags -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF"
      fi
      flags="$flags -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
      flags="$flags -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
      ;;
    *) flags="-DGGML_NATIVE=OFF" ;;
  esac
  printf '%s\n' "$flags"
}

flags="$(pick_flags)"
if [ "$1" = "--print-flags" ]; then
  printf '%s\n' "$flags"
  exit 0
fi
case "$1" in -*) usage ;; esac
py="$1"

# a digest of the installed llama_cpp/lib/ (found without importing it: a build for the wrong CPU
# may die on import), empty when llama-cpp-python is not installed
installed_digest() {
  "$py" - <<'PY'
import hashlib, importlib.util, pathlib
spec = importlib.util.find_spec("llama_cpp")
if spec is not None and spec.origin:
    lib = pathlib.Path(spec.origin).parent / "lib"
    files = sorted(p for p in lib.glob("*") if p.is_file() and not p.is_symlink())
    if files:
        digest = hashlib.sha256()
        for p in files:
            digest.update(p.name.encode() + b"\0" + p.read_bytes())
        print(digest.hexdigest()[:16])
PY
}

pyver="$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"
tag="$("$py" -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:16])' \
  "$version|$flags|$pyver|$arch")"
prefix="$("$py" -c 'import sys; print(sys.prefix)')"
marker="$prefix/.llama-build"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$(printf '%s\n%s' "$tag" "$(installed_digest)")" ]; then
  printf '%s\n' "$flags" >"$prefix/.llama-build-flags"
  exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mesa-dilemmas/llama-wheels/$tag"
wheels=("$cache"/llama_cpp_python-*.whl)
if [ ! -f "${wheels[0]}" ]; then
  echo "building llama-cpp-python $version for $arch ($flags); about 5-7 minutes on 2 cores, once"
  mkdir -p "$(dirname "$cache")"
  tmp="$(mktemp -d "$cache.tmp.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  CMAKE_ARGS="$flags" FORCE_CMAKE=1 "$py" -m pip wheel --quiet --no-deps --no-cache-dir \
    --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$version"
  printf '%s\n' "$flags" >"$tmp/CMAKE_ARGS"
  rm -rf "$cache" && mv "$tmp" "$cache"
  wheels=("$cache"/llama_cpp_python-*.whl)
fi
"$py" -m pip install --quiet --force-reinstall --no-deps "${wheels[0]}"
printf '%s\n' "$flags" >"$prefix/.llama-build-flags"
printf '%s\n%s\n' "$tag" "$(installed_digest)" >"$marker"
