"""More ``an5d`` subcommands: ``an5d model`` (the paper's performance model, section 5).

:func:`register` adds them to the ``an5d`` argument parser's subparsers; the shared
handler in :func:`an5dpy.cli.main.run` turns :class:`UsageError` into exit status 2.

    an5d model IN.c --gpu NAME|SPEC.json [--bt N] [--bs B1[xB2]] [--sl N] [--opt MODE]
               [--dtype float|double] [-D NAME[=V]]... [-I DIR]... [-P NAME=VALUE]...
               [--size N] [--steps N] [--regs N] [--halo-computes] [--json]
"""

from __future__ import annotations

import json
from typing import Mapping

from an5dpy.perf.bench import HARNESS_SIZE, HARNESS_STEPS, PAPER_SIZE, PAPER_STEPS
from an5dpy.cli.main import _add_input, _add_plan, _check_dtype, _options, _param, _positive
from an5dpy.errors import UsageError
from an5dpy.ir import StencilInfo, StencilProgram, is_floating


def _add_sizes(p) -> None:
    p.add_argument("-P", dest="params", action="append", type=_param, default=[],
                   metavar="NAME=VALUE", help="value of a scop parameter (sizes, steps)")
    p.add_argument("--size", type=_positive, metavar="N",
                   help=f"interior cells per dimension: -P {HARNESS_SIZE}=N for the benchmark "
                        f"harness (default {PAPER_SIZE[2]} in 2D, {PAPER_SIZE[3]} in 3D, as the "
                        "paper)")
    p.add_argument("--steps", type=_positive, metavar="N",
                   help=f"time steps: -P {HARNESS_STEPS}=N for the benchmark harness "
                        f"(default {PAPER_STEPS})")


def register(subparsers) -> None:
    """Add ``model`` to the ``an5d`` subparsers."""
    p = subparsers.add_parser(
        "model", help="predict GFLOP/s and the bottleneck of a blocking plan on a GPU",
        description="The AN5D performance model (paper section 5): counts every thread's "
                    "global/shared-memory traffic and FLOPs for the plan's launches and "
                    "predicts the run time as a roofline over compute, shared memory and "
                    "device memory, divided by the SM utilisation.")
    _add_input(p)
    _add_plan(p)
    p.add_argument("--gpu", required=True, metavar="NAME|SPEC.json",
                   help="a known GPU (P100, V100, A100, H100, H200, or a CUDA device name such "
                        "as 'NVIDIA H200') or a JSON spec written by 'an5d probe'")
    _add_sizes(p)
    p.add_argument("--regs", type=_positive, metavar="N",
                   help="registers per thread for the occupancy (default: the paper's "
                        "estimate, bT*(2r+1)+bT+20 in float)")
    p.add_argument("--halo-computes", action="store_true",
                   help="charge FLOPs and shared-memory reads to halo (redundant) threads too")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_model)

    p = subparsers.add_parser(
        "bench", help="time the generated kernels on the GPU (GFLOP/s as the paper counts)",
        description="Builds the plan's kernels with nvcc (-O3 --use_fast_math) and times the "
                    "whole launch plan with CUDA events (warm-up, median of the repeats, "
                    "transfers excluded). GFLOP/s = interior cells x FLOP/cell x steps / time.")
    _add_input(p)
    _add_plan(p)
    _add_sizes(p)
    p.add_argument("--regs", type=_positive, metavar="N",
                   help="register budget per thread (launch bounds, like nvcc -maxrregcount)")
    p.add_argument("--naive", action="store_true", help="also time the naive baseline")
    p.add_argument("--sconf", action="store_true", help="also time the paper's Sconf plan")
    p.add_argument("--repeats", type=_positive, default=5, help="timed runs (default 5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_bench)

    p = subparsers.add_parser(
        "tune", help="find the fastest blocking plan: model-ranked, then measured",
        description="Enumerates bT, bS and sl (the paper's sets, extended for Hopper), prunes "
                    "plans over the GPU's limits or the register estimate, ranks the rest with "
                    "the performance model and, with --measure K, builds the top K plans and "
                    "a best plan per bT and per bS (on Hopper as the paper's terms alone rank "
                    "them) with each register budget that binds, times each once on the "
                    "present GPU and the fastest three again. "
                    "Results are cached.")
    _add_input(p)
    p.add_argument("--gpu", metavar="NAME|SPEC.json",
                   help="GPU to model (default: the present one; required without a GPU)")
    _add_sizes(p)
    p.add_argument("--measure", type=_positive, metavar="K", default=0,
                   help="build and time the model's top K plans (and a best per bT and bS) "
                        "on the GPU (default: model only)")
    p.add_argument("--narrow", action="store_true",
                   help="measure only the model's top K plans (no sweep over bT and bS)")
    p.add_argument("--caps", default="none,32,64,96",
                   help="register budgets to try for each measured plan (default none,32,64,96)")
    p.add_argument("--tune-steps", type=_positive, metavar="N",
                   help="time candidates with N steps instead of the full count")
    p.add_argument("--top", type=_positive, default=10, help="ranked plans to print (default 10)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not update the cache")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_tune)

    p = subparsers.add_parser(
        "probe", help="measure the present GPU (memory and shared-memory bandwidth) for the model",
        description="Measures device-memory bandwidth (a large device-to-device copy) and "
                    "shared-memory bandwidth (a read kernel) with cupy and writes a GPU spec "
                    "for 'an5d model/tune --gpu SPEC.json'.")
    p.add_argument("-o", dest="output", metavar="SPEC.json", help="write the spec here")
    p.set_defaults(func=cmd_probe)


def model_params(program: StencilProgram, info: StencilInfo, given: Mapping[str, str],
                 size: int | None = None, steps: int | None = None) -> dict[str, int | float]:
    """Parameter values for the model: ``-P`` values, ``--size``/``--steps`` as the
    harness' compsize/timestep (paper sizes for those not given), and a placeholder for
    floating-point parameters (coefficients cannot change sizes or counts)."""
    from an5dpy.check.reference import resolve_params

    names = {p.name for p in program.params}
    values = dict(given)
    harness = HARNESS_SIZE in names and HARNESS_STEPS in names
    if (size is not None or steps is not None) and not harness:
        raise UsageError(f"--size/--steps set the benchmark harness' parameters "
                         f"{HARNESS_SIZE}/{HARNESS_STEPS}, which this program does not have; "
                         f"give its sizes with -P NAME=VALUE (parameters: "
                         f"{', '.join(sorted(names)) or 'none'})")
    for flag, name, value in (("--size", HARNESS_SIZE, size), ("--steps", HARNESS_STEPS, steps)):
        if value is None:
            continue
        if name in values and str(values[name]).strip() != str(value):
            raise UsageError(f"{flag} {value} contradicts -P {name}={values[name]}")
        values[name] = str(value)
    if harness:
        values.setdefault(HARNESS_SIZE, str(PAPER_SIZE.get(info.ndim, 512)))
        values.setdefault(HARNESS_STEPS, str(PAPER_STEPS))
    for p in program.params:
        if is_floating(p.ctype) and p.name not in values and p.value is None:
            values[p.name] = "1"
    return resolve_params(program, values)


def cmd_model(args) -> int:
    from an5dpy import driver
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.model import Model
    from an5dpy.perf.report import format_prediction
    from an5dpy.blocking.plan import check_plan

    options = _options(args)
    program, info = driver.load(args.input, options.defines, options.include_dirs)
    _check_dtype(args, info)
    gpu = get_gpu(args.gpu)
    plan = driver.plan_for(info, options)
    check_plan(plan, info, gpu.limits())
    env = model_params(program, info, dict(args.params), args.size, args.steps)
    sizes = {p.name: env[p.name] for p in program.params if not is_floating(p.ctype)}
    prediction = Model(info, gpu, env, halo_computes=args.halo_computes).predict(plan, args.regs)
    if args.json:
        out = {"input": args.input, "params": sizes, "gpu_spec": gpu.to_json(),
               **prediction.to_json()}
        print(json.dumps(out, indent=2))
        return 0
    shown = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"{args.input}: {info.ndim}D {info.shape} stencil, radius "
          f"{'x'.join(map(str, info.radius))}, {info.flops_per_cell} FLOP/cell; {shown}")
    print(format_prediction(prediction, gpu))
    return 0


def cmd_bench(args) -> int:
    from pathlib import Path

    from an5dpy import driver
    from an5dpy.perf.bench import bench_plan, sconf_plan
    from an5dpy.cuda.runtime import cupy_available, device_name

    ok, why = cupy_available()
    if not ok:
        raise UsageError(f"an5d bench needs a GPU with cupy: {why}")
    options = _options(args)
    program, info = driver.load(args.input, options.defines, options.include_dirs)
    _check_dtype(args, info)
    plan = driver.plan_for(info, options)
    env = model_params(program, info, dict(args.params), args.size, args.steps)
    stem = Path(args.input).stem
    results = [bench_plan(info, plan, env, stem, args.regs, args.repeats,
                          smem_wrap=options.smem_wrap)]
    if args.sconf:
        results.append(bench_plan(info, sconf_plan(info), env, stem, None, args.repeats,
                                  label="Sconf " + sconf_plan(info).describe()))
    if args.naive:
        results.append(bench_plan(info, plan, env, stem, None, args.repeats, naive=True))
    gpu = device_name()
    sizes = {p.name: env[p.name] for p in program.params if not is_floating(p.ctype)}
    if args.json:
        print(json.dumps({"input": args.input, "gpu": gpu, "params": sizes,
                          "results": [r.to_json() for r in results]}, indent=2))
        return 0
    shown = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"{args.input} on {gpu}: {shown}")
    for r in results:
        spill = ", spills" if r.spills else ""
        print(f"  {r.label}: {r.gflops:,.0f} GFLOP/s, {r.seconds * 1e3:.2f} ms "
              f"(median of {len(r.times)}; {r.regs} registers{spill})")
    return 0


def _caps(text: str) -> tuple[int | None, ...]:
    caps = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("none", "-", ""):
            caps.append(None)
            continue
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"--caps {text!r}: expected 'none' or register counts") from None
        if not 16 <= value <= 255:
            raise UsageError(f"--caps: {value} registers is outside 16..255")
        caps.append(value)
    return tuple(dict.fromkeys(caps))


def cmd_tune(args) -> int:
    from pathlib import Path

    from an5dpy import driver
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.blocking.plan import format_block_size
    from an5dpy.cuda.runtime import cupy_available, device_name
    from an5dpy.perf.tune import tune

    options = _options(args)
    program, info = driver.load(args.input, options.defines, options.include_dirs)
    _check_dtype(args, info)
    caps = _caps(args.caps)
    has_gpu, why = cupy_available()
    if args.measure and not has_gpu:
        raise UsageError(f"--measure needs a GPU with cupy: {why}")
    if args.gpu:
        gpu = get_gpu(args.gpu)
    elif has_gpu:
        gpu = get_gpu(device_name())
    else:
        raise UsageError("no GPU here: name the GPU to model with --gpu")
    env = model_params(program, info, dict(args.params), args.size, args.steps)
    result = tune(info, gpu, env, Path(args.input).stem, top=args.measure or 5, caps=caps,
                  measure=bool(args.measure), measure_steps=args.tune_steps,
                  use_cache=not args.no_cache, progress=not args.json,
                  diverse=not args.narrow)
    if args.json:
        print(json.dumps({"input": args.input, **result.to_json()}, indent=2))
        return 0
    sizes = " ".join(f"{k}={v}" for k, v in result.sizes.items())
    print(f"{args.input} on {gpu.name}: {sizes}; {result.candidates} plans fit")
    print("model ranking (predicted GFLOP/s):")
    for plan, g in result.ranking[:args.top]:
        print(f"  {g:10,.0f}  bt={plan.bt} bs={format_block_size(plan.bs)} sl={plan.sl or 'off'}")
    if result.measured:
        print("measured (GFLOP/s):")
        for m in sorted(result.measured, key=lambda m: -m.gflops):
            spill = ", spills" if m.spills else ""
            print(f"  {m.gflops:10,.0f}  {m.label()} ({m.registers} registers{spill}; "
                  f"model {m.predicted:,.0f})")
        best = result.best
        print(f"best: {best.label()}: {best.gflops:,.0f} GFLOP/s; reproduce with "
              f"an5d-translate {args.input} --bt {best.plan.bt} "
              f"--bs {format_block_size(best.plan.bs)}"
              + (f" --sl {best.plan.sl}" if best.plan.sl else "")
              + f" --opt {best.plan.mode.value}" + (f" --regs {best.cap}" if best.cap else ""))
    return 0


def cmd_probe(args) -> int:
    from an5dpy.perf.gpus import probe

    spec = probe()
    text = json.dumps(spec.to_json(), indent=2)
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            raise UsageError(f"cannot write '{args.output}': {e.strerror}") from None
        print(f"wrote {args.output}")
    print(text)
    return 0
