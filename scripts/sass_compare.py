#!/usr/bin/env python3
"""Compare the machine code of two generations of the kernels: compile every
``*_kernel.cu`` of two directories written by ``scripts/regenerate.py --out DIR`` and
compare their SASS instruction by instruction.

    python scripts/sass_compare.py OLD_DIR NEW_DIR [--jobs 2] [--arch sm_90]

Each kernel file is compiled alone, as the benchmarks build it
(``nvcc -O3 --use_fast_math -arch=ARCH -cubin -I DIR``). Two cubins of the same bytes hold
the same SASS; otherwise both are disassembled with ``cuobjdump -sass``, lines that hold
only an address or name the file are dropped and the ``/*0123*/`` address comments
removed, so that two kernels compare equal exactly when they have the same functions with
the same instructions (without cuobjdump, differing cubins count as different). Use it
where a change to the generated text must not change the code (line breaks, macros that
expand to the same tokens). Prints one line per kernel file and a summary; exits 1 if any
differs or fails.

    python scripts/sass_compare.py OLD_DIR NEW_DIR --preprocessed [--rename FROM=TO ...]

--preprocessed compares the preprocessed text instead (``nvcc -E -arch=ARCH -I DIR``,
no compilation, seconds for all 42): line markers and blank lines dropped, and each
``--rename`` (a Python regular expression and its replacement) applied to the OLD text's
lines that come from the generated files (``x_kernel.cu``, ``x_kernel.hu``), not from
the CUDA headers. Macro parameter names vanish in preprocessing, so a change that only
renames them, and renames locals as the ``--rename`` options say, leaves the same text:
the same program for nvcc.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

#: ``/*0000*/`` instruction addresses, and lines that hold nothing else.
ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")
ONLY_ADDRESS = re.compile(r"^\s*(/\*[0-9a-f]+\*/\s*)*$")


def kernel_files(root: str) -> dict[str, str]:
    """``program-dir/x_kernel.cu`` -> path, for every program directory under ``root``."""
    found = {}
    for entry in sorted(os.listdir(root)):
        folder = os.path.join(root, entry)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith("_kernel.cu"):
                found[f"{entry}/{name}"] = os.path.join(folder, name)
    return found


def normalise(sass: str, source: str) -> list[str]:
    """The SASS listing without addresses and without the lines naming the file."""
    out = []
    stem = os.path.basename(source)
    for line in sass.splitlines():
        if stem in line or "Fatbin" in line or "code for" in line:
            continue
        line = ADDRESS.sub("", line).rstrip()
        if ONLY_ADDRESS.match(line):
            continue
        out.append(line)
    return out


def cubin_of(path: str, out: str, arch: str, nvcc: str) -> bytes:
    subprocess.run([nvcc, "-O3", "--use_fast_math", f"-arch={arch}", "-cubin",
                    "-I", os.path.dirname(path), "-o", out, path],
                   check=True, capture_output=True, text=True)
    with open(out, "rb") as f:
        return f.read()


def sass_of(cubin: str, source: str, cuobjdump: str) -> list[str]:
    listing = subprocess.run([cuobjdump, "-sass", cubin], check=True,
                             capture_output=True, text=True).stdout
    return normalise(listing, source)


def compare(key: str, old: str, new: str, arch: str, nvcc: str, cuobjdump: str | None
            ) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        a_path, b_path = os.path.join(tmp, "old.cubin"), os.path.join(tmp, "new.cubin")
        try:
            a_bytes = cubin_of(old, a_path, arch, nvcc)
            b_bytes = cubin_of(new, b_path, arch, nvcc)
            if a_bytes == b_bytes:
                return key, f"identical (cubin of {len(a_bytes)} bytes identical)"
            if cuobjdump is None:
                return key, "DIFFERS: the cubins differ (no cuobjdump to compare their SASS)"
            a, b = sass_of(a_path, old, cuobjdump), sass_of(b_path, new, cuobjdump)
        except subprocess.CalledProcessError as e:
            return key, f"FAILED: {e.cmd[0]}: {e.stderr.strip()[:400]}"
    if a == b:
        return key, f"identical (SASS, {sum(1 for line in a if line.strip())} lines)"
    first = next(k for k, (x, y) in enumerate(zip(a + [""], b + [""])) if x != y)
    return key, f"DIFFERS at SASS line {first}: {a[first:first + 1]} vs {b[first:first + 1]}"


#: ``# 12 "path/x_kernel.hu" 2``: a line marker, naming the file the next lines come from.
LINE_MARKER = re.compile(r'^#\s*\d+\s+"([^"]*)"')


def preprocessed(path: str, arch: str, nvcc: str,
                 renames: tuple[tuple[re.Pattern, str], ...] = ()) -> list[str]:
    """``path`` preprocessed, without line markers and blank lines; ``renames`` applied to
    the lines that come from files in ``path``'s directory (the generated ones)."""
    folder = os.path.dirname(os.path.abspath(path))
    text = subprocess.run([nvcc, "-E", f"-arch={arch}", "-I", folder, path],
                          check=True, capture_output=True, text=True).stdout
    out, generated = [], True
    for line in text.splitlines():
        marker = LINE_MARKER.match(line)
        if marker:
            generated = os.path.dirname(os.path.abspath(marker.group(1))) == folder
            continue
        if line.startswith("#") or not line.strip():
            continue
        if generated:
            for pattern, replacement in renames:
                line = pattern.sub(replacement, line)
        out.append(line)
    return out


def compare_preprocessed(key: str, old: str, new: str, arch: str, nvcc: str,
                         renames: tuple[tuple[re.Pattern, str], ...]) -> tuple[str, str]:
    try:
        a = preprocessed(old, arch, nvcc, renames)
        b = preprocessed(new, arch, nvcc)
    except subprocess.CalledProcessError as e:
        return key, f"FAILED: {e.cmd[0]}: {e.stderr.strip()[:400]}"
    if a == b:
        return key, f"identical (preprocessed, {len(a)} lines)"
    first = next(k for k, (x, y) in enumerate(zip(a + [""], b + [""])) if x != y)
    return key, (f"DIFFERS at preprocessed line {first}:\n  old: {a[first][:300]}\n"
                 f"  new: {b[first][:300]}" if first < min(len(a), len(b)) else
                 f"DIFFERS: {len(a)} vs {len(b)} lines")


def parse_rename(text: str) -> tuple[re.Pattern, str]:
    pattern, sep, replacement = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--rename {text!r}: expected FROM=TO")
    return re.compile(pattern), replacement


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--preprocessed", action="store_true",
                    help="compare the preprocessed text (nvcc -E) instead of the SASS")
    ap.add_argument("--rename", type=parse_rename, action="append", default=[],
                    metavar="FROM=TO", help="with --preprocessed: a regular expression and "
                    "its replacement, applied to the OLD generated text")
    args = ap.parse_args(argv)
    if args.rename and not args.preprocessed:
        ap.error("--rename needs --preprocessed")
    from an5dpy.cuda.runtime import nvcc_path
    nvcc = nvcc_path()
    if nvcc is None:
        print("error: nvcc not found (PATH, CUDA_HOME, /usr/local/cuda)", file=sys.stderr)
        return 2
    beside = os.path.join(os.path.dirname(nvcc), "cuobjdump")
    cuobjdump = shutil.which("cuobjdump") or (beside if os.path.exists(beside) else None)
    old, new = kernel_files(args.old), kernel_files(args.new)
    if set(old) != set(new):
        print(f"error: the directories hold different kernels: "
              f"{sorted(set(old) ^ set(new))}", file=sys.stderr)
        return 2
    same = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        if args.preprocessed:
            futures = [pool.submit(compare_preprocessed, key, old[key], new[key], args.arch,
                                   nvcc, tuple(args.rename)) for key in old]
        else:
            futures = [pool.submit(compare, key, old[key], new[key], args.arch, nvcc,
                                   cuobjdump) for key in old]
        for future in concurrent.futures.as_completed(futures):
            key, verdict = future.result()
            same += verdict.startswith("identical")
            print(f"{key}: {verdict}", flush=True)
    print(f"{'preprocessed' if args.preprocessed else 'SASS'} identical {same}/{len(old)}")
    return 0 if same == len(old) else 1


if __name__ == "__main__":
    sys.exit(main())
