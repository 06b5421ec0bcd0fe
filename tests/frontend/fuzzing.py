"""Mutation fuzzing of the frontend: every input must give a StencilProgram or an
UnsupportedInput, never another exception.

Used by test_frontend_fuzz.py with a small fixed budget, and as a campaign:

    python tests/frontend/fuzzing.py --seconds 600 --out tests/data/fuzz

which keeps every crashing (or very slow) input as a regression file.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import random
import re
import sys
import time
import traceback
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from an5dpy.errors import UnsupportedInput  # noqa: E402
from an5dpy.frontend import read_program_text  # noqa: E402
from an5dpy.ir import StencilProgram  # noqa: E402

_TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|#[^\n]*|[A-Za-z_]\w*|\d[\w.]*|\.\d\w*"
                    r"|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|->|\+\+|--|<<=?|>>=?"
                    r"|[-+*/%&|^!=<>]=|&&|\|\||.", re.DOTALL)

#: Tokens to splice in: C punctuation and keywords, and the constructs the frontend
#: handles specially.
VOCABULARY = (
    "(", ")", "[", "]", "{", "}", ";", ",", "+", "-", "*", "/", "%", "=", "+=", "<", "<=",
    ">", "==", "!", "~", "&", "?", ":", "++", "--", "->", ".", "0", "1", "2", "0.5f", "1e3",
    "0x1p3", "1.5L", "10u", "'a'", '"s"', "int", "float", "double", "long", "unsigned",
    "const", "static", "typedef", "struct", "enum", "for", "while", "if", "else", "return",
    "sizeof", "t", "i", "j", "k", "n", "T", "A", "B", "sqrt", "sqrtf", "foo",
    "\n#pragma scop\n", "\n#pragma endscop\n", "\n#pragma omp parallel for\n",
    "\n#define X 1\n", "\n#include <math.h>\n", "\n#if 0\n", "\n#endif\n", "%2", "(t+1)%2",
    "\\\n", "/*", "*/", "_Pragma(\"scop\")", "__attribute__((x))", "\t", "\r\n",
)


def seed_files(everything: bool = False) -> list[str]:
    """Accepted inputs; with ``everything`` also the rejected ones and the benchmarks."""
    data = os.path.join(REPO, "tests", "data")
    patterns = ["forms/*.c", "frontend/*.c", "analysis_forms/*.c"]
    if everything:
        patterns += ["rejects/*.c", os.path.join("..", "..", "c_inputs", "*.c")]
    files = []
    for pattern in patterns:
        files += sorted(glob.glob(os.path.join(data, pattern)))
    return files


def tokens_of(text: str) -> list[str]:
    return _TOKEN.findall(text)


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits at the token, character or line level."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.55:
            toks = tokens_of(text)
            if not toks:
                continue
            k = rng.randrange(len(toks))
            op = rng.randrange(4)
            if op == 0:
                del toks[k]
            elif op == 1:
                toks.insert(k, toks[k])
            elif op == 2 and len(toks) > 1:
                m = rng.randrange(len(toks))
                toks[k], toks[m] = toks[m], toks[k]
            else:
                toks[k] = rng.choice(VOCABULARY)
            text = "".join(toks)
        elif kind < 0.8:
            if not text:
                continue
            k = rng.randrange(len(text))
            op = rng.randrange(3)
            if op == 0:
                text = text[:k] + text[k + 1:]
            elif op == 1:
                text = text[:k] + rng.choice("(){}[];,+-*/%=<>#\\\"'\n 0aZ_\t") + text[k:]
            else:
                text = text[:k] + chr(rng.randrange(1, 0x250)) + text[k + 1:]
        else:
            lines = text.split("\n")
            k, m = rng.randrange(len(lines)), rng.randrange(len(lines))
            op = rng.randrange(3)
            if op == 0:
                del lines[k]
            elif op == 1:
                lines.insert(k, lines[m])
            else:
                lines[k], lines[m] = lines[m], lines[k]
            text = "\n".join(lines)
    return text


INCLUDE_DIRS = [os.path.join(REPO, "tests", "data", "frontend"), os.path.join(REPO, "c_inputs")]


@dataclass(frozen=True)
class Finding:
    text: str
    problem: str  # the traceback, or "slow: N s"


def check(text: str, filename: str = "fuzz.c", slow_seconds: float = 10.0) -> Finding | None:
    """None when the frontend behaved (a program or UnsupportedInput)."""
    started = time.perf_counter()
    try:
        result = read_program_text(text, filename, defines=[("SB_TYPE", "float")],
                                   include_dirs=INCLUDE_DIRS)
        if not isinstance(result, StencilProgram):
            return Finding(text, f"returned {type(result).__name__}")
    except UnsupportedInput as error:
        if error.coord is not None and error.coord.file not in (filename,) \
                and not os.path.isabs(error.coord.file) \
                and not error.coord.file.startswith(("<", "tests", REPO)):
            return Finding(text, f"coordinate names an unexpected file: {error}")
    except Exception:  # noqa: BLE001 -- this is exactly what the fuzzer looks for
        return Finding(text, traceback.format_exc())
    elapsed = time.perf_counter() - started
    if elapsed > slow_seconds:
        return Finding(text, f"slow: {elapsed:.1f} s")
    return None


def campaign(seconds: float, seed: int, out: str | None, max_inputs: int | None = None,
             verbose: bool = False, everything: bool = False) -> list[Finding]:
    rng = random.Random(seed)
    seeds = [open(f, encoding="utf-8").read() for f in seed_files(everything)]
    findings: list[Finding] = []
    deadline = time.monotonic() + seconds
    count = 0
    while time.monotonic() < deadline and (max_inputs is None or count < max_inputs):
        text = rng.choice(seeds)
        for _ in range(rng.randint(1, 4)):  # stack mutations now and then
            text = mutate(text, rng)
        count += 1
        finding = check(text)
        if finding is not None:
            findings.append(finding)
            if out:
                save(finding, out)
            if verbose:
                print(finding.problem.strip().splitlines()[-1], flush=True)
    if verbose:
        print(f"{count} inputs, {len(findings)} findings", flush=True)
    return findings


def save(finding: Finding, out: str) -> str:
    os.makedirs(out, exist_ok=True)
    digest = hashlib.sha1(finding.text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    path = os.path.join(out, f"crash_{digest}.c")
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(finding.text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None)
    parser.add_argument("--everything", action="store_true",
                        help="also mutate the rejected inputs and the benchmark programs")
    args = parser.parse_args()
    campaign(args.seconds, args.seed, args.out, verbose=True, everything=args.everything)


if __name__ == "__main__":
    main()
