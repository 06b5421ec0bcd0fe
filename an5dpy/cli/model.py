"""``an5d model``: predict GFLOP/s and the bottleneck of a blocking plan on a GPU with the
paper's performance model (section 5; :mod:`an5dpy.perf.model`).

    an5d model IN.c [--gpu NAME|SPEC.json] [--bt N] [--bs B1[xB2]] [--sl N|off] [--opt MODE]
               [--regs N|none] [--dtype float|double] [-D NAME[=V]]... [-I DIR]...
               [-P NAME=VALUE]... [--size N] [--steps N] [--gpus N] [--halo-computes]
               [--json] [-q]

Plan options not given are the model's own choice (its best plan for the GPU and sizes;
for one GPU also with ``--gpus N``, as ``an5d-translate --gpus N`` chooses it).
``--gpus N`` adds the run over N GPUs (:mod:`an5dpy.perf.multi`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from an5dpy.cli.options import (add_input, add_plan, add_sizes, choose,
                                integer_sizes, load_input, model_params, options, positive)
from an5dpy.perf.model_constants import NORM_EXPONENT


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "model", help="predict GFLOP/s and the bottleneck of a blocking plan on a GPU",
        description="The AN5D performance model (paper section 5): counts every thread's "
                    "global/shared-memory traffic and FLOPs for the plan's launches and "
                    "predicts the run time as a roofline over compute, shared memory and "
                    "device memory, divided by the SM utilisation. On Hopper (H100, H200) "
                    "it adds an issue term the paper does not have: the instructions every "
                    "active warp issues per level (double divisions and the spills of a "
                    "register budget included) against a minimum time per streaming step (a "
                    "global load's round trip plus each level's chain of dependent "
                    "instructions and its barriers' stalls), and it combines the four times "
                    f"as a p-norm (p = {NORM_EXPONENT:g}) instead of taking the largest; its constants are fitted to this "
                    "repository's H200 measurements.")
    add_input(p)
    add_plan(p)
    add_sizes(p)
    p.add_argument("--halo-computes", action="store_true",
                   help="charge FLOPs and shared-memory reads to halo (redundant) threads too")
    p.add_argument("--gpus", type=positive, metavar="N",
                   help="also predict the run over N GPUs: slabs of the streaming dimension, "
                        "the slowest slab's kernels and the halo exchange after each launch "
                        "over the GPU's link (nominal, or measured: a spec of 'an5d probe' "
                        "on two GPUs; fewer GPUs where the slabs would be thinner than the "
                        "halo)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from an5dpy.blocking.plan import check_plan
    from an5dpy.perf.choice import target_gpu
    from an5dpy.perf.model import Model
    from an5dpy.perf.report import format_prediction, format_slabs

    opts = options(args)
    program, info = load_input(args, opts)
    gpu, _ = target_gpu(args.gpu)
    env = model_params(program, info, dict(args.params), args.size, args.steps)
    # the plan chosen for this very GPU (also when it was detected) and these sizes
    choice = choose(args, info, replace(opts, gpu=gpu), env)
    check_plan(choice.plan, info, gpu.limits())
    sizes = integer_sizes(program, env)
    prediction = Model(info, gpu, env, halo_computes=args.halo_computes).predict(choice.plan,
                                                                                choice.regs)
    slabs = several_gpus(args, info, choice, gpu, env)
    if args.json:
        out = {"input": args.input, "params": sizes, "gpu_spec": gpu.to_json(),
               **prediction.to_json()}
        if slabs is not None:
            out["several_gpus"] = slabs.to_json()
        print(json.dumps(out, indent=2))
        return 0
    shown = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"{args.input}: {info.ndim}D {info.shape} stencil, radius "
          f"{'x'.join(map(str, info.radius))}, {info.flops_per_cell} FLOP/cell; {shown}")
    print(format_prediction(prediction, gpu))
    if slabs is not None:
        print(format_slabs(slabs, prediction))
    return 0


def several_gpus(args, info, choice, gpu, env):
    """The prediction over ``--gpus`` GPUs (None without the option, or for one GPU);
    fewer where the slabs would be thinner than the halo, said on stderr."""
    import sys
    from an5dpy.blocking.plan import grid_extents
    from an5dpy.blocking.slabs import slab_count, slab_halo
    from an5dpy.perf.multi import predict_slabs
    if args.gpus is None or args.gpus == 1:
        return None
    count, note = slab_count(args.gpus, grid_extents(info, env)[0], slab_halo(info, choice.plan))
    if note and not args.quiet:
        print(note, file=sys.stderr)
    if count == 1:
        return None
    return predict_slabs(info, choice.plan, gpu, env, count, choice.regs,
                         halo_computes=args.halo_computes)
