#!/usr/bin/env python3
"""Two generations of the same plans' kernels, timed side by side on the present GPU.

    # the older generation's kernels, written by the checkout at OLD (no GPU needed)
    python scripts/ab_compare.py --write DIR --package OLD CASE...
    # on the GPU: DIR's kernels against this checkout's, alternately, in one process
    python scripts/ab_compare.py --old DIR CASE... [--repeats 3] [--out FILE.jsonl]

A case is a benchmark of c_inputs/, its element type and its plan as ``--extra`` of
scripts/variants_compare.py spells it, with the register budget: ``"star2d1r float bt=14
bs=256 sl=256 barriers=step regs=64"`` (bs contiguous dimension first; coarsen, barriers,
opt and regs optional). The old generation is written by ``an5d-translate`` of its
checkout, the new one by this checkout's driver (what its ``an5d-translate`` writes), with
the same options, built with the same nvcc flags (``-O3 --use_fast_math``,
as the benchmarks are) and timed with the same harness (scripts/artifact.py's: the
paper's problem size, a step count that makes a run last about 0.2 s, the median of
two runs), old and new in turn ``--repeats`` times; the table gives each one's best
and the ratio new / old. The launch signature must be the same in both generations.
Before the timing, both run 9 steps from the same seeded grid and their results are
compared: ``same`` (bit for bit), ``close`` (within rounding: the generations may order a
sum differently) or ``WRONG``, where the ratio measures nothing and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

#: The plan settings of a case and their an5d-translate flags.
FLAGS = {"bt": "--bt", "bs": "--bs", "sl": "--sl", "coarsen": "--coarsen",
         "barriers": "--barriers", "idle": "--idle", "halo": "--halo", "opt": "--opt",
         "regs": "--regs"}


def parse_case(text: str) -> tuple[str, str, dict[str, str]]:
    """``"star2d1r float bt=14 bs=256"`` -> ("star2d1r", "float", {"bt": "14", ...})."""
    stencil, dtype, *items = text.split()
    settings = dict(item.split("=", 1) for item in items)
    unknown = set(settings) - set(FLAGS)
    if unknown:
        raise SystemExit(f"case {text!r}: unknown settings {', '.join(sorted(unknown))}")
    return stencil, dtype, settings


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text.strip())


def write_case(text: str, out: str, package: str) -> str:
    """The case's kernels written by the checkout at ``package`` into ``out/<slug>``."""
    stencil, dtype, settings = parse_case(text)
    folder = os.path.abspath(os.path.join(out, slug(text)))
    flags = [a for k, v in settings.items() for a in (FLAGS[k], v)]
    subprocess.run([sys.executable, "-m", "an5dpy", "translate",
                    os.path.join(package, "c_inputs", f"{stencil}.c"), "--dtype", dtype,
                    *flags, "-q", "-o", folder], cwd=package, check=True)
    return folder


def plan_of(text: str):
    """The case's program, stencil, plan (scripts/variants_compare.py's
    ``settings_plan``) and register budget in this checkout."""
    from an5dpy.driver import load
    from variants_compare import settings_plan
    stencil, dtype, s = parse_case(text)
    program, info = load(os.path.join(REPO, "c_inputs", f"{stencil}.c"),
                         (("SB_TYPE", dtype),))
    regs = s.pop("regs", None)
    return program, info, settings_plan(info, s), None if regs in (None, "none") else int(regs)


def submit(bench, text: str, old_dir: str) -> dict:
    """Start building a case's two generations on the bench's pool: the old one from
    ``old_dir``, this checkout's from the driver's kernels of the case (what its
    ``an5d-translate`` writes), whose render model both generations' launches use."""
    from an5dpy.cuda.runtime import compile_cubin
    from an5dpy.driver import generate
    from an5dpy.perf.bench import paper_env
    program, info, plan, regs = plan_of(text)
    stencil, _, _ = parse_case(text)
    kernels = generate(info, plan, stencil, regs=regs)
    new_dir = tempfile.mkdtemp(prefix="ab-new-")
    for name, content in kernels.files().items():
        with open(os.path.join(new_dir, name), "w") as f:
            f.write(content)
    sources = {"old": os.path.join(old_dir, slug(text), f"{stencil}_kernel.cu"),
               "new": os.path.join(new_dir, f"{stencil}_kernel.cu")}
    return {"text": text, "info": info, "plan": plan, "env": paper_env(program, info),
            "model": kernels.model,
            "builds": {name: bench.pool.submit(compile_cubin, path, bench.options)
                       for name, path in sources.items()}}


#: Steps of the results' check before the timing: odd, so that the launches of remainder
#: degrees run too.
CHECK_STEPS = 9
#: How far apart two generations' results may be and still agree, in relative error as
#: ``an5d verify`` measures it: the generations may order a sum differently (the
#: benchmarks' builds use fast math), which moves a result by rounding, never by more.
AGREEMENT = {"float": 1e-4, "double": 1e-10}


def agreement(a, b, dtype: str) -> str:
    """``"same"`` (bit for bit, any NaN equal to any NaN), ``"close"`` (within
    ``AGREEMENT[dtype]`` of relative error) or ``"WRONG"``: ``an5d verify``'s comparison
    (:func:`an5dpy.check.verify.compare`) of the new result against the old."""
    import numpy as np
    from an5dpy.check.verify import compare
    a, b = (x.get() if hasattr(x, "get") else np.asarray(x) for x in (a, b))
    if a.shape != b.shape or a.dtype != b.dtype:
        return "WRONG"
    result = compare(b, a, AGREEMENT[dtype])
    return "same" if result.bit_identical else "close" if result.passed else "WRONG"


def checked_result(bench, info, plan, built, env):
    """A built kernel's result after :data:`CHECK_STEPS` steps from a copy of the bench's
    seeded grid (take it before a timing run of the case changes the grid)."""
    from an5dpy.cuda.runtime import CupyRunner
    from an5dpy.perf.tune import with_steps
    model, cubin = built
    grid, read_only = bench.grid(info, env, plan.dtype)
    out = grid.copy()
    CupyRunner(info, plan, cubin, model.prefix, model.signature).run(
        out, with_steps(info, env, CHECK_STEPS), read_only)
    return out


def compare(bench, job: dict, repeats: int) -> dict:
    """Old and new kernels of one case: their results after :data:`CHECK_STEPS` steps
    compared (:func:`agreement`), then timed in turn; each one's runs in GFLOP/s."""
    info, plan, env, text = job["info"], job["plan"], job["env"], job["text"]
    built = {name: (job["model"], fut.result()) for name, fut in job["builds"].items()}
    results = agreement(checked_result(bench, info, plan, built["old"], env),
                        checked_result(bench, info, plan, built["new"], env), plan.dtype)
    runs = {"old": [], "new": []}
    regs_used = {}
    for _ in range(repeats):
        for name in ("old", "new"):
            gflops, _, _, registers, spills = bench.time(info, plan, built[name], env)
            runs[name].append(gflops)
            regs_used[name] = (registers, spills)
    return {"case": text, "old": runs["old"], "new": runs["new"],
            "ratio": max(runs["new"]) / max(runs["old"]), "registers": regs_used,
            "results": results}


def render(rows) -> str:
    """The table: each case's best runs, their ratio, the registers and whether the two
    generations' results agree (same bits, close, or WRONG: the ratio then measures
    nothing)."""
    lines = ["| case | old GFLOP/s | new GFLOP/s | new / old | registers old, new | results |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        regs = ", ".join(f"{r['registers'][k][0]}{' (spills)' if r['registers'][k][1] else ''}"
                         for k in ("old", "new"))
        lines.append(f"| {r['case']} | {max(r['old']):,.0f} | {max(r['new']):,.0f} | "
                     f"{r['ratio']:.3f} | {regs} | {r['results']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", help="'stencil dtype bt=.. bs=.. [sl=..] ...'")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", help="write the cases' kernels into DIR")
    mode.add_argument("--old", metavar="DIR", help="time DIR's kernels against this checkout's")
    ap.add_argument("--package", default=REPO,
                    help="with --write: the checkout whose an5d-translate writes them")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="with --old: append each case's result to this JSON lines file")
    args = ap.parse_args(argv)
    if args.write:
        for text in args.cases:
            print(write_case(text, args.write, os.path.abspath(args.package)))
        return 0
    import artifact
    from an5dpy.cuda.runtime import device_name
    bench = artifact.Bench()
    rows = []
    jobs = [submit(bench, text, args.old) for text in args.cases]
    for job in jobs:
        row = compare(bench, job, args.repeats)
        rows.append(row)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        print(render([row]).splitlines()[-1], flush=True)
    print(f"\n{device_name()}\n")
    print(render(rows))
    return 1 if any(row["results"] == "WRONG" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
