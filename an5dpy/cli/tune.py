"""``an5d tune``: rank the plan space with the model and, with ``--measure K``, time the
best plans on the GPU (:mod:`an5dpy.perf.tune`); with ``--gpus N``, the model and the
timings of a run over N GPUs (slabs and NCCL halo exchanges, :mod:`an5dpy.perf.multi`,
:mod:`an5dpy.cuda.multi_gpu`)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from an5dpy.cli.options import (add_input, add_sizes, load_input, model_params, options,
                                positive, register_budget)
from an5dpy.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "tune", help="find the fastest blocking plan: model-ranked, then measured",
        description="Enumerates bT, bS and sl (the paper's sets, extended for Hopper), prunes "
                    "plans over the GPU's limits or the register estimate, ranks the rest with "
                    "the performance model and, with --measure K, builds the top K plans and "
                    "a best plan per bT and per bS (on Hopper as the paper's terms alone rank "
                    "them) without a register budget and with the budget that binds and that the "
                    "model predicts fastest, times each once on the "
                    "present GPU, then the neighbours of the fastest plans of the two "
                    "fastest shapes, stream lengths apart (their variants, bT - 1, bT + 1 "
                    "and 2 bT, one block side halved or doubled), then those of the plan "
                    "that becomes the fastest, a few rounds at most, and the fastest three of "
                    "all again, and on one GPU the naive baseline (one kernel per step), "
                    "which the best plan must beat. "
                    "Results are cached.")
    add_input(p)
    p.add_argument("--gpu", metavar="NAME|SPEC.json",
                   help="GPU to model (default: the present one; required without a GPU)")
    add_sizes(p)
    p.add_argument("--measure", type=positive, metavar="K", default=0,
                   help="build and time the model's top K plans (and a best per bT and bS) "
                        "on the GPU (default: model only)")
    p.add_argument("--narrow", action="store_true",
                   help="measure only the model's top K plans (no sweep over bT and bS, "
                        "no variants, no neighbours)")
    p.add_argument("--caps", default="none,32,64,96",
                   help="register budgets for the measured plans (default none,32,64,96): "
                        "each plan is built without one and with the one of these that "
                        "binds and that the model predicts fastest")
    p.add_argument("--tune-steps", type=positive, metavar="N",
                   help="time candidates with N steps instead of the full count")
    p.add_argument("--gpus", type=positive, metavar="N", default=1,
                   help="tune a run over N GPUs: the model's best plans ranked by the model "
                        "of N GPUs (slowest slab plus halo exchanges), and with --measure "
                        "timed on devices 0..N-1 with the NCCL runner (default 1)")
    p.add_argument("--top", type=positive, default=10, help="ranked plans to print (default 10)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not update the cache")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def register_caps(text: str) -> tuple[int | None, ...]:
    """``--caps none,32,64``: register budgets (as ``--regs`` takes them), None for no
    budget, each once."""
    caps = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("none", "-", ""):
            caps.append(None)
            continue
        try:
            value = register_budget(part)
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"--caps {text}: {part}: {e}") from None
        caps.append(value)
    return tuple(dict.fromkeys(caps))


def run(args: argparse.Namespace) -> int:
    from an5dpy.cuda.runtime import cupy_available, device_name
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.tune import tune

    opts = options(args)
    program, info = load_input(args, opts)
    caps = register_caps(args.caps)
    has_gpu, why = cupy_available()
    if args.measure and not has_gpu:
        raise UsageError(f"--measure needs a GPU with cupy: {why}")
    if args.measure and args.gpus > 1:
        visible = visible_devices()
        if visible < args.gpus:
            raise UsageError(f"--gpus {args.gpus} --measure: {visible} GPU(s) visible; "
                             f"measure on at most {visible}, or leave out --measure to rank "
                             f"with the model alone")
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
                  diverse=not args.narrow, ranked=args.top, gpus=args.gpus)
    if args.json:
        print(json.dumps({"input": args.input, **result.to_json()}, indent=2))
        return 0
    sizes = " ".join(f"{k}={v}" for k, v in result.sizes.items())
    on = f"{args.gpus} x {gpu.name}" if args.gpus > 1 else gpu.name
    print(f"{args.input} on {on}: {sizes}; {result.candidates} plans fit")
    if info.coupled:  # the fields and sub-steps, as the model counts the top plan
        from an5dpy.perf.model import Model
        from an5dpy.perf.report import format_fields
        top = Model(info, gpu, env).rank([result.ranking[0][0]])[0]
        print(f"model's top plan {top.plan.describe()}:")
        print("\n".join(format_fields(top)))
    gpus = f" on {args.gpus} GPUs" if args.gpus > 1 else ""
    if args.gpus > 1:
        print(f"model ranking{gpus} (predicted GFLOP/s of the whole run; the one-GPU "
              f"model's best plans with the halo work and exchanges of {args.gpus} slabs):")
    else:
        print("model ranking (predicted GFLOP/s):")
    for plan, g in result.ranking[:args.top]:
        print(f"  {g:10,.0f}  {plan.describe()}")
    if result.measured:
        print(f"measured{gpus} (GFLOP/s):")
        for m in sorted(result.measured, key=lambda m: -m.gflops):
            spill = ", spills" if m.spills else ""
            print(f"  {m.gflops:10,.0f}  {m.label()} ({m.registers} registers{spill}; "
                  f"model {m.predicted:,.0f})")
        best = result.best
        print(f"best: {best.label()}: {best.gflops:,.0f} GFLOP/s; reproduce with "
              f"{reproduce_command(args, best.plan, best.cap)}")
        if result.naive:
            print(naive_lines(args, result.naive, best))
    else:
        plan, g = result.ranking[0]
        print(f"best predicted: {g:,.0f} GFLOP/s (not measured); reproduce with "
              f"{reproduce_command(args, plan)}")
    return 0


def naive_lines(args: argparse.Namespace, naive, best) -> str:
    """The naive baseline's rate beside the best plan's and, where the baseline is the
    faster, the command that writes it (temporal blocking does not pay for every program:
    a memory-bound time step of several statements in 3D may run faster one kernel per
    sub-step)."""
    ratio = best.gflops / naive.gflops
    lines = [f"naive baseline (one kernel per time step or sub-step): {naive.gflops:,.0f} "
             f"GFLOP/s; the best plan runs {ratio:.2f}x of it"]
    if ratio < 1:
        words = shlex.split(reproduce_command(args, best.plan, best.cap))
        lines.append("the naive baseline is faster here; write it with "
                     + shlex.join(words[:2] + ["--baseline", "naive"] + words[2:]))
    return "\n".join(lines)


def reproduce_command(args: argparse.Namespace, plan, cap: int | None = None) -> str:
    """The ``an5d-translate`` command line that writes ``plan`` (with the user's
    preprocessor options, so it runs as printed)."""
    from an5dpy.blocking.plan import format_block_size

    words = ["an5d-translate", args.input]
    for name, value in args.defines:
        words.append(f"-D{name}" if value is None else f"-D{name}={value}")
    for d in args.include_dirs:
        words += ["-I", d]
    if args.dtype:
        words += ["--dtype", args.dtype]
    words += ["--bt", str(plan.bt), "--bs", format_block_size(plan.bs)]
    if plan.sl:
        words += ["--sl", str(plan.sl)]
    if plan.coarsen > 1:
        words += ["--coarsen", str(plan.coarsen)]
    if plan.barriers.value != "level":
        words += ["--barriers", plan.barriers.value]
    if plan.idle.value != "skip":
        words += ["--idle", plan.idle.value]
    if plan.halo_loaded:
        words += ["--halo", plan.halo_cells.value]
    words += ["--opt", plan.mode.value]
    if cap:
        words += ["--regs", str(cap)]
    # the host code of several GPUs runs the double-buffered one-statement programs
    if getattr(args, "gpus", 1) > 1 and not plan.coupled and not plan.levels.rotating:
        words += ["--gpus", str(args.gpus)]
    return shlex.join(words)


def visible_devices() -> int:
    """CUDA devices visible to cupy (0 where none can be used)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any driver error means no device
        return 0
