"""The embedded model's native build holds no instruction a machine may report and still forbid.

llama-cpp-python compiled with llama.cpp's default GGML_NATIVE=ON takes every feature the build
machine reports; on a virtual machine that reports AMX but forbids it, the AMX tile instructions
in ``libggml-cpu.so`` killed the test suite and a sweep with SIGILL (issue 28).
``scripts/build_llama.sh`` builds it portably and records its CMake flags in
``<venv>/.llama-build-flags``; these tests disassemble the installed libraries and check the
script's choice of flags.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_llama.sh"
FLAGS_FILE = Path(sys.prefix) / ".llama-build-flags"
X86_64 = platform.machine().lower() in ("x86_64", "amd64")

#: the AMX tile instructions (AMX-TILE, -INT8, -BF16, -FP16)
AMX = (
    "tileloadd",
    "tileloaddt1",
    "tilestored",
    "tdpbssd",
    "tdpbsud",
    "tdpbusd",
    "tdpbuud",
    "tdpbf16ps",
    "tdpfp16ps",
    "ldtilecfg",
    "sttilecfg",
    "tilerelease",
    "tilezero",
)
#: an AMX mnemonic, an AMX tile register, or an AVX-512 register, in objdump's AT&T syntax
FORBIDDEN = re.compile(rb"\b(?:" + b"|".join(m.encode() for m in AMX) + rb")\b|%tmm\d|%zmm\d+")
#: substrings one of which every FORBIDDEN match holds: a fast search before the slow regex
NEEDLES = (b"%zmm", b"%tmm", b"tile", b"tdp")
CHUNK = 1 << 20


@dataclass
class Scan:
    """What one library's disassembly holds: AMX hits and zmm uses, with a first example each."""

    amx: Counter = field(default_factory=Counter)
    zmm: int = 0
    examples: dict[str, str] = field(default_factory=dict)


def native_libraries() -> list[Path]:
    """The ggml and llama shared libraries of the installed ``llama_cpp`` (found, not imported:
    importing loads them), one per distinct content (wheels store the .so symlinks as copies).
    libmtmd (multimodal) is left out: like libllama it is built without the CPU flags."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        pytest.skip("llama-cpp-python is not installed (pip install 'mesa-dilemmas[local]')")
    package = Path(spec.origin).parent
    candidates = [
        p
        for folder in (package / "lib", package)
        for p in sorted(folder.glob("lib*"))
        if p.name.startswith(("libggml", "libllama"))
        and p.is_file()
        and (".so" in p.name or p.suffix == ".dylib")
    ]
    seen: dict[str, Path] = {}
    for lib in candidates:
        digest = hashlib.sha256(lib.read_bytes()).hexdigest()
        if digest not in seen or len(lib.name) < len(seen[digest].name):
            seen[digest] = lib
    libs = sorted(seen.values())
    if not any(lib.name.startswith("libggml-cpu") for lib in libs):
        pytest.fail(f"no libggml-cpu shared library in {package}: {[p.name for p in libs]}")
    return libs


def scan(lib: Path) -> Scan:
    """``objdump -d`` of ``lib``, searched as it streams (about 0.2 s for libggml-cpu)."""
    found = Scan()
    proc = subprocess.Popen(
        ["objdump", "-d", "--no-show-raw-insn", str(lib)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    tail = b""
    while True:
        chunk = proc.stdout.read(CHUNK)
        if not chunk:
            text = tail
        else:
            text, _, rest = (tail + chunk).rpartition(b"\n")
            tail = rest
        hits = FORBIDDEN.finditer(text) if any(n in text for n in NEEDLES) else ()
        for match in hits:
            word = match.group().decode()
            kind = "zmm" if word.startswith("%zmm") else "amx"
            if kind == "zmm":
                found.zmm += 1
            else:
                found.amx[word] += 1
            if kind not in found.examples:
                start = text.rfind(b"\n", 0, match.start()) + 1
                end = text.find(b"\n", match.end())
                found.examples[kind] = text[start : end if end >= 0 else None].decode().strip()
        if not chunk:
            break
    stderr = proc.stderr.read() if proc.stderr else b""
    if proc.wait() != 0:
        pytest.fail(f"objdump -d {lib} failed: {stderr.decode(errors='replace').strip()}")
    return found


@pytest.fixture(scope="module")
def scans() -> dict[str, Scan]:
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed (Debian: apt-get install binutils)")
    return {lib.name: scan(lib) for lib in native_libraries()}


def recorded_flags() -> dict[str, str] | None:
    """The CMake flags scripts/build_llama.sh recorded for this environment's build, if it did."""
    if not FLAGS_FILE.is_file():
        return None
    return dict(re.findall(r"-D(\w+)=(\S+)", FLAGS_FILE.read_text()))


def is_on(value: str | None) -> bool:
    return (value or "").upper() in ("ON", "1", "TRUE", "YES", "Y")


@pytest.mark.skipif(not X86_64, reason="AMX is an x86-64 extension")
def test_no_amx_instructions_in_the_native_libraries(scans: dict[str, Scan]) -> None:
    flags = recorded_flags()
    if flags is not None and (
        is_on(flags.get("GGML_NATIVE")) or any(is_on(v) for k, v in flags.items() if "AMX" in k)
    ):
        pytest.skip(f"this build asked for AMX or a native build on purpose: {FLAGS_FILE}")
    bad = {name: s for name, s in scans.items() if s.amx}
    assert not bad, (
        "; ".join(
            f"{name}: {sum(s.amx.values())} AMX instructions ({dict(s.amx)}), e.g. "
            f"{s.examples['amx']!r}"
            for name, s in bad.items()
        )
        + " -- rebuild portably: bash scripts/build_llama.sh "
        + sys.executable
    )


@pytest.mark.skipif(not X86_64, reason="AVX-512 is an x86-64 extension")
def test_no_avx512_registers_when_built_without_avx512(scans: dict[str, Scan]) -> None:
    flags = recorded_flags()
    if flags is None:
        pytest.skip(f"no {FLAGS_FILE}: llama-cpp-python was not built by scripts/build_llama.sh")
    if is_on(flags.get("GGML_NATIVE")) or any(
        is_on(v) for k, v in flags.items() if k.startswith("GGML_AVX512")
    ):
        pytest.skip(f"this build asked for AVX-512 or a native build: {FLAGS_FILE}")
    bad = {name: s for name, s in scans.items() if s.zmm}
    assert not bad, "; ".join(
        f"{name}: {s.zmm} uses of zmm registers although AVX-512 is off, e.g. {s.examples['zmm']!r}"
        for name, s in bad.items()
    )


def test_the_scan_finds_amx_and_zmm() -> None:
    """The pattern sees what objdump prints for them (binutils 2.40, AT&T syntax)."""
    sample = (
        b"  4010:\ttileloadd (%rsi,%rdx,1),%tmm0\n"
        b"  4016:\tldtilecfg (%rax)\n"
        b"  401b:\tvmovups %zmm0,(%rdi)\n"
        b"  4021:\tvpaddd %ymm1,%ymm2,%ymm3\n"
        b"  4025:\tcall 4100 <tilezero_helper@plt>\n"
    )
    words = [m.group().decode() for m in FORBIDDEN.finditer(sample)]
    assert words == ["tileloadd", "%tmm0", "ldtilecfg", "%zmm0"]


# --- the script -------------------------------------------------------------------------


def print_flags(**env: str) -> str:
    environ = {
        k: v for k, v in os.environ.items() if k not in ("LLAMA_CMAKE_ARGS", "LLAMA_CPU_FLAGS")
    }
    out = subprocess.run(
        ["bash", str(SCRIPT), "--print-flags"],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.strip()


def assert_portable(flags: str) -> None:
    assert "-DGGML_NATIVE=OFF" in flags.split()
    assert "GGML_NATIVE=ON" not in flags
    assert not re.search(r"-DGGML_AMX_\w+=ON", flags), flags
    if X86_64:
        assert not re.search(r"-DGGML_AVX512\w*=ON", flags), flags
        for off in ("GGML_AVX512", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
            assert f"-D{off}=OFF" in flags.split(), flags


def test_build_script_is_valid_bash() -> None:
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_build_script_picks_portable_flags_here() -> None:
    assert_portable(print_flags())


@pytest.mark.skipif(not X86_64, reason="the x86-64 feature levels")
def test_build_script_flags_for_other_cpus() -> None:
    """A CPU that reports AVX-512 and AMX gets x86-64-v3 all the same; one without AVX2 gets
    neither AVX2 nor BMI2 (Sandy and Ivy Bridge have AVX but no BMI2)."""
    server = "sse4_2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512_fp16 amx_tile amx_int8 amx_bf16"
    flags = print_flags(LLAMA_CPU_FLAGS=server)
    assert_portable(flags)
    for on in ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"):
        assert f"-D{on}=ON" in flags.split()
    old = print_flags(LLAMA_CPU_FLAGS="sse sse2 ssse3 sse4_1 sse4_2 avx popcnt")
    assert_portable(old)
    assert "-DGGML_SSE42=ON" in old.split()
    for off in ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"):
        assert f"-D{off}=OFF" in old.split()


def test_build_script_takes_an_override_verbatim() -> None:
    assert print_flags(LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=ON") == (
        "-DGGML_NATIVE=OFF -DGGML_AVX512=ON"
    )


def test_recorded_flags_are_portable() -> None:
    """What build_llama.sh recorded for this environment (when it built it) is portable too,
    unless an override asked otherwise."""
    if not FLAGS_FILE.is_file():
        pytest.skip(f"no {FLAGS_FILE}: llama-cpp-python was not built by scripts/build_llama.sh")
    flags = FLAGS_FILE.read_text().strip()
    if flags != print_flags():
        pytest.skip(f"built with other flags (LLAMA_CMAKE_ARGS or another CPU): {flags}")
    assert_portable(flags)
