"""The plan an5dpy uses when the user leaves options open: the performance model's best
plan of the tuner's search space for the target GPU and problem size.

* :data:`SPACE`, :func:`search_space`, :func:`candidate_plans`: the search space (``an5d
  tune`` ranks it too; bT counted in time steps of the program's sub-steps), with the
  options the user fixed held fixed (:class:`Fixed`).
* :func:`default_plan`: the model's top plan of that space, each plan at its best register
  budget (:meth:`an5dpy.perf.model.Model.rank`): the same ranking ``an5d tune`` prints.
* :func:`problem_env`: the sizes a plan is chosen (and modelled) for: the user's ``-P`` and
  ``--size``/``--steps``, else the paper's sizes.
* :func:`target_gpu`: ``--gpu`` or the GPU of this machine, else an H100.

The driver (:func:`an5dpy.driver.plan_for`) turns the user's options into a :class:`Fixed`
and calls these; every command and the Python API go through it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields
from typing import Mapping, NoReturn

from an5dpy.blocking.plan import (Barriers, BlockingPlan, HaloCells, IdleWarps, Mode,
                                  block_size_value, grid_extents, loaded_halo_plans,
                                  make_plan)
from an5dpy.errors import OptionError, UsageError
from an5dpy.ir import StencilInfo, StencilProgram, is_floating
from an5dpy.perf.bench import HARNESS_SIZE, HARNESS_STEPS, PAPER_SIZE, PAPER_STEPS
from an5dpy.perf.gpus import GpuSpec, get_gpu
from an5dpy.perf.model import Model, Prediction

#: The GPU plans are chosen for where none is given and none is visible.
FALLBACK_GPU = "H100"

#: The model's search space. Cells per thread, one barrier per step and computing at idle
#: warps are tuner candidates beside it (:func:`an5dpy.perf.tune.variant_plans`), not axes
#: of it: the model's counts rank them above one-cell, barrier-per-level plans that measure
#: faster (computing at idle warps: its registers, which decide, are ptxas').
SPACE = {
    2: {"bt": range(1, 17), "bs": ((128,), (256,), (512,), (1024,)),
        "sl": (128, 256, 512, 1024), "coarsen": (1,), "barriers": (Barriers.LEVEL,),
        "idle": (IdleWarps.SKIP,), "halo": (HaloCells.THREADS,)},
    3: {"bt": range(1, 9), "bs": ((16, 16), (16, 32), (32, 32), (16, 64)),
        "sl": (64, 128, 256, None), "coarsen": (1,), "barriers": (Barriers.LEVEL,),
        "idle": (IdleWarps.SKIP,), "halo": (HaloCells.THREADS,)},
}

#: The compute regions (outermost in-plane side, contiguous side) at which the model also
#: weighs each bT 1 plan of a 3D space whose computing threads load the halo
#: (:func:`loaded_halo_candidates`), one cell per thread: with more, ptxas gives mode
#: assoc's sums of the larger boxes in double more registers than the model counts, and
#: the default plans of box3d1r-4r double measured 10-25% slower than their halo threads'
#: plans on the H200 (artifact/H200/rows.jsonl); at one cell the default plans of
#: box3d2r-4r run 1.13-1.76x their earlier ones there, and no measured row lost.
LOADED_COMPUTE_REGIONS = ((8, 64),)

#: Mode nondiag's loaded layouts beside those, (compute region, cells per thread): two
#: cells a thread, as the tuned plans of star3d2r-4r keep (artifact/H200/table5.md). At
#: these rows' measured plans (rows.jsonl, hand_written.jsonl) the defaults it moves run
#: at least as fast as those before; four cells, which the model would pick instead, ran
#: acoustic3d double at 0.46x its tuned plan (172 registers, one block an SM).
LOADED_NONDIAG_LAYOUTS = (((8, 64), 2),)

#: The search space's axes, in :func:`candidate_plans`' order.
PLAN_AXES = ("bt", "bs", "sl", "coarsen", "barriers", "idle", "halo")

#: The value of a :class:`Fixed` field that the model chooses.
AUTO = "auto"


def is_auto(value) -> bool:
    return isinstance(value, str) and value == AUTO


@dataclass(frozen=True)
class Fixed:
    """Plan options the user fixed; :data:`AUTO` where the model chooses.

    ``sl`` None: no stream division; ``opt`` a mode's name (:data:`AUTO`: the analysis'
    default mode, the only one the search space holds); ``regs`` None: no register budget.
    """

    bt: int | str = AUTO
    bs: tuple[int, ...] | str = AUTO
    sl: int | None | str = AUTO
    opt: str = AUTO
    regs: int | None | str = AUTO
    coarsen: int | str = AUTO
    barriers: Barriers | str = AUTO
    idle: IdleWarps | str = AUTO
    halo: HaloCells | str = AUTO

    @property
    def open(self) -> tuple[str, ...]:
        """The names of the options the model chooses."""
        return tuple(f.name for f in fields(self) if is_auto(getattr(self, f.name)))

    def given_names(self) -> tuple[str, ...]:
        """The names of the options held fixed."""
        return tuple(f.name for f in fields(self) if not is_auto(getattr(self, f.name)))

    def settings(self) -> tuple[tuple[str, object], ...]:
        """The fixed options as ``(name, value)`` pairs, valued as the user gives them
        (``bs`` ``128`` or ``"64x16"``, ``sl`` ``"off"``, ``regs`` ``"none"``)."""
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if is_auto(value):
                continue
            if f.name == "bs":
                value = block_size_value(value)
            elif isinstance(value, (Barriers, IdleWarps, HaloCells)):
                value = value.value
            elif value is None:
                value = "off" if f.name == "sl" else "none"
            shown.append((f.name, value))
        return tuple(shown)

    def given(self) -> str:
        """The fixed options as ``bt=6 bs=128`` (empty when none is)."""
        return " ".join(f"{name}={value}" for name, value in self.settings())


def loaded_halo_candidates(info: StencilInfo, gpu: GpuSpec, plans: list[BlockingPlan],
                           fixed: Fixed) -> list[BlockingPlan]:
    """For each bT 1 plan of ``plans`` with halo threads, the plans of the same stream
    length whose computing threads load the halo (:class:`HaloCells`), one cell per
    thread, at :data:`LOADED_COMPUTE_REGIONS` (each block's tile: the region and its
    halo), and in mode nondiag at :data:`LOADED_NONDIAG_LAYOUTS` too, those legal on
    ``gpu``; none where the user fixed the block, the cells per thread or who loads the
    halo (the plans would not keep them)."""
    if not all(is_auto(getattr(fixed, name)) for name in ("bs", "coarsen", "halo")):
        return []
    layouts = [(compute, 1) for compute in LOADED_COMPUTE_REGIONS]
    # the kernel has its own barriers and no idle warps: a plan whose barriers or idle
    # warps the user fixed otherwise keeps halo threads
    return list(dict.fromkeys(
        p for plan in plans
        if plan.barriers is Barriers.LEVEL and plan.idle is IdleWarps.SKIP
        for p in loaded_halo_plans(
            info, plan, layouts + list(LOADED_NONDIAG_LAYOUTS if plan.mode is Mode.NONDIAG
                                       else ()), gpu.limits())))


def search_space(info: StencilInfo) -> dict:
    """The search space for ``info``: :data:`SPACE` of its dimensions, whose bT values are
    levels of the pipeline (a launch's kernel degree, the range the model was fitted on).
    A time step of S sub-steps is S levels, so its bT goes up to the largest degree
    divided by S (at least 1)."""
    space = SPACE[info.ndim]
    levels, substeps = space["bt"], max(1, len(info.substeps))
    return {**space, "bt": range(levels.start,
                                 max(levels.start, levels[-1] // substeps) + 1)}


def candidate_plans(info: StencilInfo, gpu: GpuSpec, dtype: str | None = None,
                    fixed: Fixed = Fixed(), prune: bool = True) -> list[BlockingPlan]:
    """Every plan of the search space that can run on ``gpu``, with the options of
    ``fixed`` held at their values (a fixed value need not be one of the space's); with
    ``prune``, without those whose register estimate exceeds an SM's registers."""
    space = search_space(info)
    values = {name: (space[name] if is_auto(getattr(fixed, name)) else (getattr(fixed, name),))
              for name in PLAN_AXES}
    opt = None if is_auto(fixed.opt) else fixed.opt
    limits = gpu.limits()
    plans = []
    for bt, bs, sl, coarsen, barriers, idle, halo in itertools.product(
            *(values[n] for n in PLAN_AXES)):
        try:
            plan = make_plan(info, bt, bs=bs, sl=sl, opt=opt, dtype=dtype, limits=limits,
                             coarsen=coarsen, barriers=barriers, idle=idle, halo=halo)
        except UsageError:
            continue
        if prune and plan.register_estimate() * plan.nthreads > gpu.regs_per_sm:
            continue
        plans.append(plan)
    return plans


#: With several GPUs, the model's best plans for one GPU re-ranked with the exchange.
SLAB_CANDIDATES = 20


def default_plan(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float],
                 fixed: Fixed = Fixed(), gpus: int = 1) -> Prediction:
    """The model's best plan of the search space with ``fixed`` held, at its best register
    budget (or the fixed one): the prediction, whose ``registers`` is the budget (None:
    none). Raises UsageError, saying why, when no plan with the fixed options fits (an
    :class:`OptionError` naming the fixed options where some are).

    With ``gpus`` > 1 the one-GPU ranking's :data:`SLAB_CANDIDATES` best plans are ranked
    again by the model of a run over that many GPUs (:func:`an5dpy.perf.multi.
    predict_slabs`: the slowest slab, its halo planes computed again, and the halo
    exchanges after each launch, which grow with bT); the prediction returned is that
    plan's, its GFLOP/s the whole run's."""
    # the paper's register estimate prunes the tuner's space; plans the user narrowed to
    # that all exceed it can still run (with fewer blocks per SM), as the model predicts
    plans = (candidate_plans(info, gpu, fixed=fixed)
             or candidate_plans(info, gpu, fixed=fixed, prune=False))
    plans += loaded_halo_candidates(info, gpu, plans, fixed)
    model = Model(info, gpu, env)
    ranked = _ranked(model, plans, fixed)
    if not ranked:
        _nothing_fits(info, gpu, fixed, plans)
    best = (_with_cell_major_rows(info, model, ranked[0], fixed) if is_auto(fixed.coarsen)
            else ranked[0])
    if gpus > 1:  # the one-GPU choice among the candidates too
        candidates = ranked[:SLAB_CANDIDATES]
        return _best_over_gpus(info, gpu, env,
                               candidates + ([best] if best not in candidates else []), gpus)
    return best


#: Cells per thread of the default plan's cell-major form (:func:`_with_cell_major_rows`).
CELL_MAJOR_CELLS = 2


def _with_cell_major_rows(info: StencilInfo, model: Model, best: Prediction,
                          fixed: Fixed) -> Prediction:
    """``best``, or the same plan (its block of cells) with :data:`CELL_MAJOR_CELLS` cells
    per thread where that plan keeps its shared rows cell-major (2D nondiag,
    :attr:`~an5dpy.blocking.plan.BlockingPlan.cell_major`) and the model predicts it
    faster. The search space holds one cell per thread: over all of it, the model ranks
    coarsened plans it cannot tell apart by their registers, which were never measured
    (scripts/model_check.py); beside the plan it chose, its choice agreed with the H200 on
    7 of the 10 2D nondiag rows of artifact/H200 re-measured with cell-major rows, and the
    chosen plans reach 0.87 of the tuned ones there in geomean (0.82 one cell per
    thread)."""
    plan = best.plan
    try:
        coarse = make_plan(info, plan.bt, bs=plan.bs, sl=plan.sl, opt=plan.mode,
                           coarsen=CELL_MAJOR_CELLS,
                           barriers=plan.barriers, idle=plan.idle, halo=plan.halo_cells,
                           limits=model.gpu.limits())
    except UsageError:
        return best
    if not coarse.cell_major:
        return best
    ranked = _ranked(model, [coarse], fixed)
    return ranked[0] if ranked and ranked[0].seconds < best.seconds else best


def _ranked(model: Model, plans, fixed: Fixed) -> list[Prediction]:
    """The plans' predictions, fastest first, at the register budget ``fixed`` gives: the
    model's best budget of each (open), none (each plan at the paper's register
    estimate), or the given one."""
    if is_auto(fixed.regs):
        return model.rank(plans)
    if fixed.regs is None:
        return sorted(_predictions(model, plans), key=lambda p: p.seconds)
    return model.rank(plans, fixed.regs)


def _best_over_gpus(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float],
                    ranked: list[Prediction], gpus: int) -> Prediction:
    from dataclasses import replace
    from an5dpy.perf.multi import predict_slabs
    scored = []
    for p in ranked:
        try:
            scored.append((predict_slabs(info, p.plan, gpu, env, gpus, p.registers), p))
        except UsageError:  # slabs thinner than this plan's halo
            continue
    if not scored:
        return ranked[0]
    slabs, best = min(scored, key=lambda s: s[0].seconds)
    return replace(best, gflops=slabs.gflops, seconds=slabs.seconds)


def _predictions(model: Model, plans) -> list[Prediction]:
    out = []
    for plan in plans:
        try:
            out.append(model.predict(plan))
        except UsageError:
            continue
    return out


def _nothing_fits(info: StencilInfo, gpu: GpuSpec, fixed: Fixed, plans) -> NoReturn:
    """Raise why no plan with ``fixed`` fits: make_plan's reason for the first plan of the
    space with those options, where there is one. The error names the user's options
    (:class:`OptionError`, so the command line words them as its flags); a make_plan
    refusal of the user's own options alone is raised as is, whatever the model picks."""
    reason = "the registers or shared memory the plans need exceed the GPU's"
    if not plans:
        space = search_space(info)
        pick = {name: (space[name][0] if is_auto(getattr(fixed, name)) else getattr(fixed, name))
                for name in PLAN_AXES}
        try:
            make_plan(info, pick["bt"], bs=pick["bs"], sl=pick["sl"],
                      opt=None if is_auto(fixed.opt) else fixed.opt, limits=gpu.limits(),
                      coarsen=pick["coarsen"], barriers=pick["barriers"], idle=pick["idle"],
                      halo=pick["halo"])
        except OptionError as e:
            if {name for name, _ in e.settings} <= set(fixed.given_names()):
                raise
            picked = " ".join(f"{name}={value}" for name, value in e.settings
                              if name not in fixed.given_names())
            reason = f"with {picked}, {e.reason}"
        except UsageError as e:
            reason = e.args[0]
    where = f"no blocking plan fits on {gpu.name}: {reason}"
    if not fixed.settings():
        raise UsageError(where)
    raise OptionError(fixed.settings(), where)


# --------------------------------------------------------------------------- sizes


def problem_env(program: StencilProgram, info: StencilInfo, given: Mapping[str, str],
                size: int | None = None, steps: int | None = None,
                complete: bool = False) -> dict[str, int | float]:
    """Parameter values for the model: ``-P`` values, ``--size``/``--steps`` as the harness'
    compsize/timestep (the paper's sizes for those not given), and a placeholder for
    floating-point parameters (coefficients cannot change sizes or counts).

    ``complete``: an integer parameter still without a value gets the paper's size (one
    that only the time loop's bounds use, the paper's step count), as for choosing a
    plan when the sizes are not known."""
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
    if complete:
        spatial = {v for d in info.dims for a in (d.lower, d.upper, d.extent) for v in a.variables}
        for p in program.params:
            if p.name not in values and p.value is None and p.definition is None:
                only_time = p.name not in spatial
                values[p.name] = str(PAPER_STEPS if only_time else PAPER_SIZE[info.ndim])
    return resolve_params(program, values)


def describe_sizes(info: StencilInfo, env: Mapping[str, int | float]) -> str:
    """The problem as ``16384^2 x 1000 steps`` (interior cells per dimension)."""
    lengths = [d.length for d in grid_extents(info, env)]
    grid = (f"{lengths[0]}^{len(lengths)}" if len(set(lengths)) == 1
            else "x".join(map(str, lengths)))
    return f"{grid} x {info.time.steps(env)} steps"


# --------------------------------------------------------------------------- the GPU


def target_gpu(gpu: str | GpuSpec | None) -> tuple[GpuSpec, str]:
    """The GPU plans are chosen for and why: ``gpu`` (a name, a spec file or a spec), else
    the GPU of this machine where cupy sees one that :func:`get_gpu` knows, else
    :data:`FALLBACK_GPU`. The second value says where it came from (empty for ``gpu``)."""
    if gpu is not None:
        return get_gpu(gpu), ""
    local = local_device_name()
    if local is None:
        return get_gpu(FALLBACK_GPU), "no GPU visible"
    try:
        return get_gpu(local), "this machine's GPU"
    except UsageError:
        return get_gpu(FALLBACK_GPU), f"this machine's {local} is not a known GPU"


def local_device_name() -> str | None:
    """CUDA's name of this machine's GPU, or None where cupy sees none."""
    from an5dpy.cuda.runtime import cupy_available, device_name
    usable, _ = cupy_available()
    return device_name() if usable else None
