"""Model-guided tuning (AN5D paper section 6.3, extended for Hopper).

1. Enumerate the space: bT 1-16 (2D) or 1-8 (3D), counted in levels of the pipeline (a
   time step of S sub-steps is S levels, so bT goes up to 16/S or 8/S:
   :func:`an5dpy.perf.choice.search_space`); bS from {128, 256, 512, 1024} (2D) or
   {16x16, 32x16, 32x32, 64x16} (3D, contiguous dimension first); sl from
   {128, 256, 512, 1024} (2D) or {64, 128, 256, off} (3D); the stencil's default mode.
2. Prune plans that cannot run: shared memory and threads over the GPU's limits, and the
   paper's register estimate (bT(2r+1) + bT + 20 for float, 2bT(2r+1) + bT + 30 for
   double, the rings once per field) over 255 per thread or over the registers of an SM
   for one block.
3. Rank the rest with the performance model (:mod:`an5dpy.perf.model`; on Hopper each plan at
   its best register budget, as the model's issue term sees it). The space and the top
   plan, which every command uses where the user leaves plan options open, are in
   :mod:`an5dpy.perf.choice`.
4. Build the top K, and the model's best plan per bT and per bS, without a register
   budget and with the budget in ``caps`` (32, 64, 96: launch bounds that play the part
   of nvcc -maxrregcount) that binds and that the model predicts fastest
   (:func:`submit_builds`); time each once on the GPU in a short run (:data:`SCREEN_S`,
   :func:`probed_steps`), time the fastest again for the whole run and report the best.
   A heavy stencil's search is narrower (:func:`search_breadth`).

Over N GPUs (``gpus``, ``an5d tune --gpus N``) step 3 ranks the one-GPU ranking's best
plans again with the model of a run over N GPUs (:func:`rank_over_gpus`, as
:func:`an5dpy.perf.choice.default_plan` does with ``gpus``: the slowest slab plus the halo
exchanges, whose bytes grow with bT), and step 4 measures that ranking's candidates on
devices 0..N-1 with the several-GPU runner (:func:`measure_plans_multi`).

Results are cached as JSON, keyed by the stencil (its update and loop bounds), dtype,
sizes, step count, GPU (and GPU count), an5dpy version and a hash of the code generator
(``$AN5D_CACHE_DIR``, default ``~/.cache/an5dpy``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from an5dpy.version import __version__
from an5dpy.cache import cache_dir
from an5dpy.cexpr import c_expr
from an5dpy.errors import UsageError
from an5dpy.perf.gpus import GpuSpec
from an5dpy.ir import StencilInfo
from an5dpy.perf.model_constants import REGISTER_BUDGETS
from an5dpy.blocking.plan import (WARP_SIZE, Barriers, BlockingPlan, IdleWarps,
                                  computing_warp_fraction, format_block_size,
                                  full_launch_steps, loaded_halo_plans)
from an5dpy.driver import blocking_plan
# the search space is also where the commands' default plan is chosen from
from an5dpy.perf.choice import SPACE, candidate_plans, default_plan  # noqa: F401

CAPS: tuple[int | None, ...] = (None, *REGISTER_BUDGETS)


@dataclass(frozen=True)
class Measured:
    plan: BlockingPlan
    cap: int | None  # register budget the kernels were built with
    gflops: float
    seconds: float
    registers: int | None  # ptxas' count for the plan's own degree
    spills: bool
    predicted: float  # the model's GFLOP/s for the plan

    def label(self) -> str:
        cap = "-" if self.cap is None else str(self.cap)
        return f"{self.plan.describe()} regs {cap}"

    def to_json(self) -> dict:
        return {"bt": self.plan.bt, "bs": format_block_size(self.plan.bs), "sl": self.plan.sl,
                "coarsen": self.plan.coarsen, "barriers": self.plan.barriers.value,
                "idle": self.plan.idle.value, "halo_cells": self.plan.halo_cells.value,
                "opt": self.plan.mode.value, "dtype": self.plan.dtype, "cap": self.cap,
                "gflops": self.gflops, "seconds": self.seconds, "registers": self.registers,
                "spills": self.spills, "predicted": self.predicted}


@dataclass(frozen=True)
class NaiveTiming:
    """The naive baseline (one kernel per time step, or per sub-step; what
    ``an5d-translate --baseline naive`` runs) timed beside the measured plans."""

    gflops: float
    seconds: float

    def to_json(self) -> dict:
        return {"gflops": self.gflops, "seconds": self.seconds}


@dataclass(frozen=True)
class TuneResult:
    gpu: str
    sizes: dict
    steps: int
    ranking: tuple[tuple[BlockingPlan, float], ...]  # the model's top plans, GFLOP/s
    measured: tuple[Measured, ...] = ()
    candidates: int = 0
    measure_steps: int | None = None
    gpus: int = 1  # the GPUs the ranking models and the measurements ran on
    naive: NaiveTiming | None = None  # measured on one GPU: the baseline to beat

    @property
    def best(self) -> Measured | None:
        return max(self.measured, key=lambda m: m.gflops) if self.measured else None

    def to_json(self) -> dict:
        return {"gpu": self.gpu, "gpus": self.gpus, "sizes": self.sizes, "steps": self.steps,
                "measure_steps": self.measure_steps, "candidates": self.candidates,
                "ranking": [{"bt": p.bt, "bs": format_block_size(p.bs), "sl": p.sl,
                             "coarsen": p.coarsen, "barriers": p.barriers.value,
                             "idle": p.idle.value, "halo_cells": p.halo_cells.value,
                             "opt": p.mode.value, "dtype": p.dtype, "predicted": g}
                            for p, g in self.ranking],
                "measured": [m.to_json() for m in self.measured],
                "best": self.best.to_json() if self.best else None,
                "naive": self.naive.to_json() if self.naive else None}


def plan_from_json(info: StencilInfo, d: Mapping) -> BlockingPlan:
    """A plan from its JSON: the tuner's (bS as text) or :meth:`BlockingPlan.to_json`'s
    (bS as a list, as artifact rows keep it; rows written before plans had cells per
    thread have one, and a barrier per level; before idle warps were an option, they
    skip; before the halo could be loaded by the computing threads, each halo cell has a
    thread; without an element type, the program's)."""
    from an5dpy.blocking.plan import parse_block_size
    bs = parse_block_size(d["bs"], info.ndim) if isinstance(d["bs"], str) else tuple(d["bs"])
    return blocking_plan(info, d["bt"], bs=bs, sl=d["sl"], opt=d["opt"], dtype=d.get("dtype"),
                         coarsen=d.get("coarsen", 1), barriers=d.get("barriers", "level"),
                         idle=d.get("idle", "skip"), halo=d.get("halo_cells", "threads"))


def result_from_json(info: StencilInfo, d: Mapping) -> TuneResult:
    ranking = tuple((plan_from_json(info, r), r["predicted"]) for r in d["ranking"])
    measured = tuple(Measured(plan_from_json(info, m), m["cap"], m["gflops"], m["seconds"],
                              m["registers"], m["spills"], m["predicted"])
                     for m in d["measured"])
    naive = d.get("naive")  # results cached before the baseline was timed have none
    return TuneResult(d["gpu"], d["sizes"], d["steps"], ranking, measured,
                      d.get("candidates", 0), d.get("measure_steps"), d.get("gpus", 1),
                      NaiveTiming(naive["gflops"], naive["seconds"]) if naive else None)


# --------------------------------------------------------------------------- step counts


def steps_can_vary(info: StencilInfo) -> bool:
    """Whether a run's step count can be set (:func:`with_steps`): the time loop's upper
    bound is one parameter plus a constant."""
    names = info.time.upper.variables
    return len(names) == 1 and info.time.upper.coeff(names[0]) == 1


def with_steps(info: StencilInfo, env: Mapping[str, int | float], steps: int) -> dict:
    """``env`` with the parameter the time loop's upper bound depends on set so the loop
    runs ``steps`` times (for timing with fewer steps than the user's)."""
    env = dict(env)
    if not steps_can_vary(info):
        if info.time.steps(env) == steps:
            return env
        raise UsageError("cannot change the step count of this time loop: give its "
                         "parameters with -P")
    name = info.time.upper.variables[0]
    env[name] = env[name] + steps - info.time.steps(env)
    return env


# --------------------------------------------------------------------------- cache


def cache_path() -> Path:
    return cache_dir("tune.json")


@lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """A hash of what decides the generated CUDA (the templates and the modules that
    schedule and print kernels), so that measurements cached for kernels an5dpy no
    longer generates are not reused, whether or not the version number changed."""
    from an5dpy.cuda import render
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    sources = [package / "cexpr.py", *sorted((package / "blocking").glob("*.py")),
               *sorted((package / "cuda").glob("*.py"))]
    sources += sorted(render.template_dir().glob("*.j2"))
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(info: StencilInfo, dtype: str, gpu: str, env: Mapping, top: int,
              caps: Sequence, measure_steps: int | None, diverse: bool = True,
              gpus: int = 1) -> str:
    if info.coupled:  # every statement, its reads named by field
        expr = [f"{name} = {c_expr(value, lambda r: f'{r.array}{list(r.offset)}')}"
                for sub in info.substeps for name, value in sub.updates]
    else:
        expr = c_expr(info.update, lambda r: f"A{list(r.offset)}")
    bounds = [(str(d.lower), str(d.upper), str(d.extent)) for d in info.dims]
    parts = json.dumps([expr, bounds, info.ndim, dtype, gpu, __version__,
                        generator_fingerprint(),
                        sorted((k, v) for k, v in env.items()), top, list(caps),
                        measure_steps, diverse,
                        # the search: its breadth, neighbourhood and stream lengths
                        [search_breadth(info, top, diverse), NEIGHBOURHOOD_ROOTS,
                         CLIMB_ROOTS, BALANCE_FACTOR] if diverse
                        else 0]
                       + ([gpus] if gpus > 1 else []), default=str)
    return hashlib.sha256(parts.encode()).hexdigest()


def _load_cache() -> dict:
    try:
        return json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}


def _store_cache(key: str, value: dict) -> None:
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _load_cache()
        data[key] = value
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs time


# --------------------------------------------------------------------------- tuning


def rank(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float],
         plans: Iterable[BlockingPlan] | None = None) -> list[tuple[BlockingPlan, float]]:
    from an5dpy.perf.model import Model
    plans = candidate_plans(info, gpu) if plans is None else plans
    model = Model(info, gpu, env)
    return [(p.plan, p.gflops) for p in model.rank(plans)]


def rank_over_gpus(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float],
                   gpus: int, plans: Iterable[BlockingPlan]
                   ) -> list[tuple[BlockingPlan, float]]:
    """The model's ranking of a run over ``gpus`` GPUs (GFLOP/s of the whole run): the
    one-GPU ranking's :data:`~an5dpy.perf.choice.SLAB_CANDIDATES` best plans (each at its
    best register budget) predicted by :func:`an5dpy.perf.multi.predict_slabs`, fastest
    first, as :func:`~an5dpy.perf.choice.default_plan` chooses among them with ``gpus``
    (its choice is this ranking's first plan). Plans whose slabs would be thinner than
    their halo are left out."""
    from an5dpy.perf.choice import SLAB_CANDIDATES
    from an5dpy.perf.model import Model
    from an5dpy.perf.multi import predict_slabs
    scored = []
    for p in Model(info, gpu, env).rank(plans)[:SLAB_CANDIDATES]:
        try:
            slabs = predict_slabs(info, p.plan, gpu, env, gpus, p.registers)
        except UsageError:  # slabs thinner than this plan's halo
            continue
        scored.append((slabs.seconds, p.plan, slabs.gflops))
    scored.sort(key=lambda s: s[0])  # stable: ties keep the one-GPU order, as min() does
    return [(plan, rate) for _, plan, rate in scored]


def diverse_candidates(ranking: Sequence[tuple[BlockingPlan, float]], top: int = 5,
                       extra: Sequence[BlockingPlan] = (), floor: float = 0.5,
                       per_bt: bool = True, per_bs: bool = True) -> list[BlockingPlan]:
    """Plans worth measuring: the model's ``top`` plans, then its best plan for every bT
    (with ``per_bt``) and for every bS (with ``per_bs``) among the plans predicted within
    ``floor`` of the best one, then ``extra``.

    The paper's terms rank the space coarsely on Hopper: their predictions for the
    leading plans are nearly flat while measured ones differ by up to 2x, mostly with bT,
    bS and occupancy, so one plan per bT and per bS covers the directions the ranking is
    unsure about at a small cost.
    """
    chosen = [p for p, _ in ranking[:top]]
    if ranking:
        best_of: dict[tuple, BlockingPlan] = {}
        bound = floor * ranking[0][1]
        for plan, predicted in ranking:  # best first
            if predicted >= bound:
                if per_bt:
                    best_of.setdefault(("bt", plan.bt), plan)
                if per_bs:
                    best_of.setdefault(("bs", plan.bs), plan)
        chosen += best_of.values()
    chosen += extra
    return list(dict.fromkeys(chosen))  # in order, each plan once (best of a bT and a bS)


def paper_ranking(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float],
                  plans: Iterable[BlockingPlan],
                  ranking: Sequence[tuple[BlockingPlan, float]]
                  ) -> list[tuple[BlockingPlan, float]]:
    """The ranking by the paper's terms alone (no issue term; each plan at the register
    estimate): the model's ``ranking`` itself where the GPU has no issue term."""
    if gpu.step_latency_cycles <= 0:
        return list(ranking)
    return rank(info, replace(gpu, step_latency_cycles=0.0), env, plans)


#: Cells per thread the tuner measures besides the model's plans (:func:`coarsened_plans`).
COARSENED_CELLS = (2, 4)


def coarsened_plans(info: StencilInfo, plan: BlockingPlan,
                    cells: Sequence[int] = COARSENED_CELLS) -> list[BlockingPlan]:
    """``plan`` with each number of ``cells`` per thread that is legal: the same block of
    cells with that many times fewer threads, and a block of as many threads with that
    many times more cells along the outermost in-plane dimension.

    The model's search space holds one cell per thread only: its counts rank coarsened
    plans above one-cell plans that measure faster (scripts/variants_compare.py on the
    H200), so the tuner measures these besides the model's plans instead."""
    out = []
    for c in cells:
        for bs0 in (plan.bs[0], plan.bs[0] * c):
            try:
                out.append(blocking_plan(info, plan.bt, bs=(bs0, *plan.bs[1:]), sl=plan.sl,
                                         opt=plan.mode.value, coarsen=c))
            except UsageError:
                continue
    return out


#: Cells per thread of the warp-shuffle plans (:func:`shuffle_plans`; the tuner does not
#: measure them, scripts/variants_compare.py ``--kinds shuffle`` does).
SHUFFLE_CELLS = (2, 4, 8)
#: Their temporal degrees: those of these whose compute region keeps at least
#: :data:`SHUFFLE_MIN_COMPUTE` of the block's cells and whose register estimate stays
#: under :data:`SHUFFLE_MAX_REGISTERS`.
SHUFFLE_DEGREES = (2, 3, 4, 5, 6, 8, 10, 12, 14, 16)
SHUFFLE_MIN_COMPUTE = 0.7
SHUFFLE_MAX_REGISTERS = 160


def shuffle_plans(info: StencilInfo, plan: BlockingPlan) -> list[BlockingPlan]:
    """Warp-shuffle plans (:attr:`~an5dpy.blocking.plan.Barriers.SHUFFLE`) of ``plan``'s
    stream length: a block of one warp holding 2, 4 or 8 cells per thread, at each
    temporal degree whose redundant halo and registers stay moderate. Empty where
    shuffles do not apply (3D, modes none and assoc).

    Not among the tuner's variants (:func:`variant_plans`): side by side on the H200
    (scripts/variants_compare.py ``--kinds shuffle``, artifact/H200/shuffle.md) the best
    of them ran at 0.61-0.89 of the tuned plan on the four 2D rows measured. A block of
    one warp keeps ``2 r bT`` of its ``32 c`` cells as halo and each cell its own
    register ring, and a shuffle issues like the shared load it replaces."""
    out = []
    for c in SHUFFLE_CELLS:
        cells = WARP_SIZE * c
        for bt in SHUFFLE_DEGREES:
            try:
                p = blocking_plan(info, bt, bs=(cells,), sl=plan.sl, opt=plan.mode.value,
                                  coarsen=c, barriers=Barriers.SHUFFLE)
            except UsageError:  # 3D, another mode, or no compute region left
                continue
            if (p.compute_region()[0] >= SHUFFLE_MIN_COMPUTE * cells
                    and p.register_estimate() <= SHUFFLE_MAX_REGISTERS):
                out.append(p)
    return out


def plan_with(info: StencilInfo, plan: BlockingPlan, **changes) -> BlockingPlan:
    """``plan`` with the settings of ``changes`` (``bt``, ``bs``, ``sl``, ``coarsen``,
    ``barriers``, ``idle``, ``halo``) changed and all else kept, checked: raises UsageError
    where that plan is not legal."""
    settings = {"bt": plan.bt, "bs": plan.bs, "sl": plan.sl, "coarsen": plan.coarsen,
                "barriers": plan.barriers, "idle": plan.idle, "halo": plan.halo_cells,
                **changes}
    return blocking_plan(info, settings.pop("bt"), opt=plan.mode.value, **settings)


def legal_plans(info: StencilInfo, plan: BlockingPlan,
                changes: Iterable[Mapping]) -> list[BlockingPlan]:
    """:func:`plan_with` of each of ``changes``, in order, those that are legal."""
    out = []
    for change in changes:
        try:
            out.append(plan_with(info, plan, **change))
        except UsageError:  # no degree there, no compute region, too many threads, ...
            continue
    return out


def variant_plans(info: StencilInfo, plan: BlockingPlan) -> list[BlockingPlan]:
    """What the tuner measures besides the model's plans: ``plan`` coarsened
    (:func:`coarsened_plans`), in mode nondiag ``plan`` and its coarsened plans of the
    same block of cells with one barrier per step
    (:attr:`~an5dpy.blocking.plan.Barriers.STEP`), and ``plan`` and its own block's
    one-barrier-per-step plans computing at idle warps (:func:`idle_compute_plans`), which
    the model does not rank either: measured side by side on the H200
    (scripts/variants_compare.py, scripts/ab_compare.py), each pays on some rows and not
    on others, by more than the model's counts tell apart; and, for a bT 1 plan, the plans
    whose computing threads load the halo (:func:`halo_loaded_plans`)."""
    if plan.halo_loaded:
        return []
    coarsened = coarsened_plans(info, plan)
    out = list(coarsened)
    stepped = []
    for p in (plan, *(c for c in coarsened if c.bs == plan.bs)):
        # none in another mode, or where its buffers do not fit
        stepped += legal_plans(info, p, [{"barriers": Barriers.STEP}])
    out += stepped
    return (out + idle_compute_plans(info, [plan, *(p for p in stepped
                                                    if p.coarsen == plan.coarsen)])
            + halo_loaded_plans(info, plan))


#: The compute regions (outermost in-plane side, contiguous side) and cells per thread of
#: the plans whose computing threads load the halo (:func:`halo_loaded_plans`): the
#: hand-written kernel's fastest layouts on the H200 (artifact/H200/halo_stream.md: 64x16
#: and 32x32 cells, 4 cells per thread, and 64x8 of 2), and 64x8 of one cell, where mode
#: assoc's sums of a large box are too many registers for more (box3d4r double: 62 a
#: thread at one cell, 255 and spills at two; nvcc 13.0, sm_90).
HALO_LOADED_LAYOUTS = (((16, 64), 4), ((32, 32), 4), ((8, 64), 2), ((16, 64), 2),
                       ((8, 64), 1))


def halo_loaded_plans(info: StencilInfo, plan: BlockingPlan) -> list[BlockingPlan]:
    """For a bT 1 plan, the plans of the same stream blocks whose computing threads load
    the halo (:attr:`~an5dpy.blocking.plan.HaloCells.LOADED`), at the compute regions and
    cells per thread of :data:`HALO_LOADED_LAYOUTS` (each block's tile: its compute region
    and the halo), those that are legal. Measured by hand on the H200, such kernels ran
    1.2-1.6x the tuned bT 1 plans of star3d3r and star3d4r. The model counts their
    threads and halo loads (an5dpy.perf.model.issuing_share, HALO_LOAD_INSTRUCTIONS) and
    takes their own efficiency and registers (CELL_EFFICIENCY, UNBOUNDED_RATIO)."""
    return loaded_halo_plans(info, plan, HALO_LOADED_LAYOUTS)


def idle_compute_plans(info: StencilInfo, plans: Iterable[BlockingPlan]) -> list[BlockingPlan]:
    """Each of ``plans`` computing at idle warps
    (:attr:`~an5dpy.blocking.plan.IdleWarps.COMPUTE`) where its level ops branch around
    idle warps at some level (elsewhere its kernels would be the same). On the H200
    (artifact/H200/idle_warps.md) star3d1r double's tuned plan ran 14% faster so, and
    star3d2r's plans slower: the registers ptxas gives the branch-free kernel decide,
    which the model does not know."""
    return [p for plan in plans if plan.idle is not IdleWarps.COMPUTE
            and any(computing_warp_fraction(plan, level) < 1
                    for level in range(1, plan.depth + 1))
            for p in legal_plans(info, plan, [{"idle": IdleWarps.COMPUTE}])]


#: The stream lengths of :func:`balanced_stream_plans`: within this factor of the plan's
#: own, either way.
BALANCE_FACTOR = 2


def balanced_stream_plans(info: StencilInfo, model, plan: BlockingPlan, cap: int | None,
                          count: int = 2) -> list[BlockingPlan]:
    """``plan`` at the ``count`` stream lengths within :data:`BALANCE_FACTOR` of its own that
    the model (with register budget ``cap``) predicts fastest, those it predicts faster than
    ``plan``, fastest first; none for a plan without stream division or one the model
    cannot place on an SM with that budget.

    The search space's stream lengths are powers of two, and a launch's blocks (in-plane
    blocks times stream blocks) fill its last wave as they fall: star2d1r float's tuned
    plan on the H200 (bt=15 bs=512 sl=256) launches 2,176 blocks, 8.24 waves of the 264
    that fit at once, its last wave a quarter full. A length in between can fill it (sl
    309: 6.95 waves), at the cost of the halo planes that each stream block's first steps
    compute again; the model weighs both (eff_SM, the streaming counts), and predicts
    2-16% for the tuned plans of artifact/H200. Measured there beside the tuned plans
    (``scripts/variants_compare.py --kinds balanced``, artifact/H200/balanced_stream.md):
    the faster of the two gained more than 1% on 18 of 39 rows, up to 7.1% (box3d1r
    double), and lost more than 1% on 11: the model cannot tell which, so the search
    measures them, for its fastest build once the neighbourhood stopped
    (:attr:`Neighbourhood.balance`)."""
    if plan.sl is None:
        return []
    own = predicted_gflops(model, plan, cap)
    # one length per count of stream blocks: the shortest, whose blocks are the most even
    by_blocks: dict[int, tuple[float, BlockingPlan]] = {}
    for sl in range(max(1, plan.sl // BALANCE_FACTOR), plan.sl * BALANCE_FACTOR + 1):
        try:
            other = plan_with(info, plan, sl=sl)
            blocks = model.launch_cost(other, other.bt, cap).stream_blocks
        except UsageError:  # too short for the plan's head and tail, or does not fit
            continue
        if blocks not in by_blocks:
            by_blocks[blocks] = (predicted_gflops(model, other, cap), other)
    try:
        own_blocks = model.launch_cost(plan, plan.bt, cap).stream_blocks
    except UsageError:  # the model cannot place the plan at this budget: nothing to balance
        return []
    faster = [(g, p) for blocks, (g, p) in by_blocks.items() if blocks != own_blocks and g > own]
    return [p for _, p in sorted(faster, key=lambda x: (-x[0], x[1].sl))[:count]]


#: After every candidate was timed once, the search also measures the neighbours
#: (:func:`neighbour_plans`) of this many of the fastest plans (:class:`Neighbourhood`).
#: On the 18 rows of artifact/H200 measured with it, the neighbours of the fastest plan
#: beat the first round on 5 rows and those of the second fastest on 2 (star2d3r float
#: only through them).
NEIGHBOURHOOD_ROOTS = 2
#: Rounds of neighbours at most: after each round, the fastest plan, if it is new, has its
#: neighbours measured in the next (a local search that climbs while it finds faster
#: plans). A faster plan is often two steps from the first round's: on the H200
#: (artifact/H200/one_gpu_run), j3d27pt float's fastest plan, bt=2 32x32 with 2 cells per
#: thread (18,418 GFLOP/s), is the doubled block of bt=2 32x16 with 2 cells per thread
#: (17,597), itself a variant of bt=2 32x16 (16,631); a later run that measured one round
#: only missed both and kept 16,985, and the climb found it again (18,426).
NEIGHBOURHOOD_ROUNDS = 3
#: Roots of the rounds after the first: the fastest shape alone. Climbing from the two
#: fastest (a plan that became the second fastest was climbed from too) made the 40 rows
#: of artifact/H200 measured with it take 1,859 s against 1,233 s with one round.
CLIMB_ROOTS = 1
#: Stencils of more FLOP per cell than this are heavy (box3d2r-4r: 249, 685 and 1,457):
#: nvcc takes tens of seconds per plan where others take a few, up to minutes at 4 cells
#: per thread, and every heavy row of artifact/H200 was fastest at bT 1-2. The search
#: measures fewer of their plans (:func:`search_breadth`).
HEAVY_FLOPS = 200
#: The model's best plans measured for a heavy stencil.
HEAVY_TOP = 3


@dataclass(frozen=True)
class SearchBreadth:
    """How much of the space the tuner measures for one stencil: the model's ``top``
    plans, the paper ranking's best plan per bT (``per_bt``) and per bS (``per_bs``,
    :func:`tuning_candidates`), and up to ``neighbour_rounds`` rounds of neighbours
    (:class:`Neighbourhood`; the fastest build's other stream lengths are measured with
    none too)."""

    top: int
    per_bt: bool
    per_bs: bool
    neighbour_rounds: int


def search_breadth(info: StencilInfo, top: int, diverse: bool = True) -> SearchBreadth:
    """The tuner's breadth for ``info`` (``an5d tune`` and ``scripts/artifact.py`` alike):
    the model's ``top`` plans and, with ``diverse``, the per-bT and per-bS picks and
    :data:`NEIGHBOURHOOD_ROUNDS` rounds of neighbours. A heavy stencil (over
    :data:`HEAVY_FLOPS`) has :data:`HEAVY_TOP` plans of the model at most, diverse or not,
    and no per-bT picks and no rounds of neighbours: on the six heavy rows of
    artifact/H200 the rounds found no faster plan (the best of their 16-28 neighbours,
    against the first round's: 0.79 to 1.00) while they were most of the time of the
    slowest rows (box3d3r double's round: 16 builds, the slowest 94 s on a 2-CPU
    machine). Without them the whole artifact ran in 24 minutes on one H200, against an
    estimated 42-49 (artifact/H200/one_gpu_run.md)."""
    heavy = info.flops_per_cell > HEAVY_FLOPS
    top = min(top, HEAVY_TOP) if heavy else top
    if not diverse:
        return SearchBreadth(top, False, False, 0)
    if heavy:
        return SearchBreadth(top, False, True, 0)
    return SearchBreadth(top, True, True, NEIGHBOURHOOD_ROUNDS)


def plan_shape(plan: BlockingPlan) -> BlockingPlan:
    """``plan`` without its stream length. The roots of a :class:`Neighbourhood` are the
    fastest plans of distinct shapes: two plans that differ in the stream length alone
    have neighbours that differ in it alone (:func:`neighbour_plans` keeps it), so the
    second root would measure the first one's neighbours again at another length."""
    return replace(plan, sl=None)


def neighbour_plans(info: StencilInfo, plan: BlockingPlan) -> list[BlockingPlan]:
    """The plans next to a measured ``plan`` that the search measures too: its variants
    (:func:`variant_plans`), ``plan`` one temporal degree shallower and deeper and at
    twice its degree, with the same block, stream length, cells per thread and barriers,
    and ``plan`` with each in-plane block side halved and doubled (:func:`block_sides`),
    with the same degree and all else.

    The tuner's candidates come from the model's ranking, and the variants of its best
    plan only; where the model's best plan is not the fastest measured one (on the H200,
    box3d1r float: bt=3 32x32 ranked first, bt=2 32x16 measured fastest), the variants
    that pay are those of the plan that measured fastest. Twice the degree: in 2D the
    model prefers bT 6-7 where the measured GFLOP/s still rise to bT 14 (artifact/H200's
    fig8, each radius-1 stencil's tuned plan swept over bT: star2d1r float 19,079 GFLOP/s
    at bT 14 against 17,260 for its tuned bT 7, j2d5pt float 20,453 against 18,651). The
    block sides: the paper's per-bS picks hold each block size's best degree, not each
    degree's best block, so a fast degree was measured at one block size only (box2d4r
    double, artifact/H200: bt=2 at 512 cells, never at 256, which then measured 13%
    faster in the same run). And the plans whose computing threads load the halo of
    ``plan`` at bT 1 (:func:`halo_loaded_plans`): they beat the bT 2 and 3 plans of some
    rows (on the H200, artifact/H200/halo_loaded.md: j3d27pt double 1.24x, star3d2r float
    1.09x), but a bT 1 plan with halo threads is rarely the fastest measured, whose
    variants they would otherwise be."""
    changes = [{"bt": bt} for bt in (plan.bt - 1, plan.bt + 1, 2 * plan.bt)]
    changes += [{"bs": bs} for bs in block_sides(plan.bs)]
    out = variant_plans(info, plan) + legal_plans(info, plan, changes)
    if plan.bt > 1 and not plan.halo_loaded:
        out += [p for shallow in legal_plans(info, plan, [{"bt": 1}])
                for p in halo_loaded_plans(info, shallow)]
    return [p for p in dict.fromkeys(out) if p != plan]


def halved_and_doubled(side: int) -> tuple[int, int]:
    """The neighbours' block sides of ``side`` (:func:`neighbour_plans`)."""
    return side // 2, side * 2


def block_sides(bs: tuple[int, ...],
                sides: Callable[[int], Iterable[int]] = halved_and_doubled
                ) -> list[tuple[int, ...]]:
    """``bs`` with one side replaced by each of ``sides(side)`` (default: halved or
    doubled) that is at least 1, each side in turn (array order)."""
    out = []
    for d, side in enumerate(bs):
        for new in sides(side):
            if new >= 1:
                out.append(bs[:d] + (new,) + bs[d + 1:])
    return out


#: The scalings of one block side in :func:`tile_plans`, as (numerator, denominator): a
#: quarter less and a half more (from 64: 48 and 96; from 32: 24 and 48).
TILE_SCALES = ((3, 4), (3, 2))


def tile_plans(info: StencilInfo, plan: BlockingPlan) -> list[BlockingPlan]:
    """``plan`` with one in-plane block side scaled by each of :data:`TILE_SCALES` where
    the side comes out whole, one side at a time (array order), all else kept; those legal.

    The search's block sides are powers of two, so a block's threads go up or down by
    twice at once, and with them its registers per thread under the launch bounds: on the
    H200, star3d1r double's tuned plan (bt=4 64x32 sl=171, 2 cells per thread, one
    barrier per step: 1,024 threads, held to 64 registers) spills 48 bytes and reloads
    292 per thread, where ptxas (nvcc 13.0, sm_90, no GPU) builds its 64x24 (768 threads,
    80 registers) with 12 and 64 (none at sl=128), at 58% of the block's cells computed
    at the last level against 66%, and the halved block (32x32, 512 threads) with 92
    registers and no spills at 56%. Measured beside the tuned plans of 24 rows on the
    H200 (``scripts/variants_compare.py --kinds tiles``, artifact/H200/tiles.md): the
    fastest tile plan gained 3-4% on three 3D assoc rows and lost on the other 21, up to
    21% (star3d1r double's 48x32: 0.89, though it spills less), 1.005 in geomean
    taking the better; what they would add to the search is not worth its builds, so
    the tuner does not search them."""
    def scaled(side: int) -> list[int]:
        return [side * num // den for num, den in TILE_SCALES if side * num % den == 0]
    blocks = block_sides(plan.bs, scaled)
    return list(dict.fromkeys(legal_plans(info, plan, [{"bs": bs} for bs in blocks])))


def space_with_measured(info: StencilInfo, gpu: GpuSpec,
                        measured: Iterable[Mapping]) -> list[BlockingPlan]:
    """The search space the model ranks (:func:`candidate_plans`) and the plans of
    ``measured`` (entries with a plan's JSON, as artifact rows keep them) outside it: the
    variant plans (:func:`variant_plans`) that the tuner measures beside the model's. Scored
    measurements rank what was measured with the space, so a row whose fastest plan is a
    variant can count as a hit."""
    space = list(candidate_plans(info, gpu))
    known = {p.describe() for p in space}
    extra = {m["describe"]: plan_from_json(info, m["plan"]) for m in measured
             if m["describe"] not in known}
    return space + list(extra.values())


def tuning_candidates(ranking: Sequence[tuple[BlockingPlan, float]],
                      paper: Sequence[tuple[BlockingPlan, float]], top: int = 5,
                      extra: Sequence[BlockingPlan] = (), per_bt: bool = True,
                      per_bs: bool = True) -> list[BlockingPlan]:
    """Plans to measure: the model's ``top`` plans, then :func:`diverse_candidates` of the
    paper's ranking (:func:`paper_ranking`; with ``per_bt``/``per_bs``), then ``extra``,
    each plan once.

    Where the model has its issue term (Hopper), the paper's per-bT and per-bS picks found
    the fastest plan of most rows measured on the H200 (artifact/H200), so with them the
    search never covers less than it did, and the issue term's top plans are measured
    besides. Elsewhere the two rankings are the same.
    """
    chosen = [p for p, _ in ranking[:top]]
    if per_bt or per_bs:
        chosen += diverse_candidates(paper, top, per_bt=per_bt, per_bs=per_bs)
    chosen += extra
    return list(dict.fromkeys(chosen))


def tune(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float], stem: str,
         top: int = 5, caps: Sequence[int | None] = CAPS, measure: bool = True,
         measure_steps: int | None = None, repeats: int = 3, use_cache: bool = True,
         progress: bool = True, extra: Sequence[BlockingPlan] = (),
         diverse: bool = True, ranked: int = 5, gpus: int = 1) -> TuneResult:
    """Rank the space with the model; with ``measure``, time on the present GPU the top
    ``top`` plans, with ``diverse`` also a best plan per bT and per bS
    (:func:`tuning_candidates`) and the model's best plan's variants
    (:func:`variant_plans`), and ``extra``, each with every register budget in
    ``caps`` that binds; with ``diverse``, then the neighbours of the fastest
    (:func:`neighbour_plans`, :class:`Neighbourhood`) and the fastest build's other
    stream lengths (:func:`balanced_stream_plans`); a heavy stencil's search is narrower
    (:func:`search_breadth`). The result keeps the model's ``max(top, ranked)`` best
    plans.

    With ``gpus`` > 1 the ranking is the model's of a run over that many GPUs
    (:func:`rank_over_gpus`) and the candidates, its top ``top`` plans and with
    ``diverse`` its best per bT and per bS (:func:`diverse_candidates`) and its best
    plan's variants, are timed on devices 0..gpus-1 (:func:`measure_plans_multi`; no
    neighbours: a neighbour's slabs may be thinner than its halo)."""
    plans = candidate_plans(info, gpu)
    ranking = (rank(info, gpu, env, plans) if gpus == 1
               else rank_over_gpus(info, gpu, env, gpus, plans))
    if not ranking:
        if gpus > 1 and rank(info, gpu, env, plans):
            raise UsageError(f"the grid cannot be cut into {gpus} slabs as thick as the halo "
                             f"of any of the model's best plans: use fewer GPUs")
        raise UsageError(f"no blocking plan of the search space fits on {gpu.name}")
    steps = info.time.steps(env)
    sizes = {k: v for k, v in env.items() if isinstance(v, int)}
    result = TuneResult(gpu.name, sizes, steps, tuple(ranking[:max(top, ranked)]),
                        candidates=len(plans), measure_steps=measure_steps, gpus=gpus)
    if not measure:
        return result
    key = cache_key(info, info.dtype, gpu.name, env, top, caps, measure_steps, diverse, gpus)
    if use_cache:
        cached = _load_cache().get(key)
        if cached is not None:  # the ranking is the model's, as long as asked for now
            return replace(result_from_json(info, cached), ranking=result.ranking)
    breadth = search_breadth(info, top, diverse)
    if diverse:  # the model's best plan in the forms it does not rank
        extra = (*extra, *variant_plans(info, ranking[0][0]))
    predicted = dict(ranking)
    run_env = with_steps(info, env, measure_steps) if measure_steps else dict(env)
    from an5dpy.perf.model import Model
    model = Model(info, gpu, env)
    budget_score = partial(predicted_gflops, model)  # one budget per plan
    guess = guessed_registers(model)
    if gpus > 1:
        chosen = diverse_candidates(ranking, breadth.top, extra, per_bt=breadth.per_bt,
                                    per_bs=breadth.per_bs)
        measured = measure_plans_multi(info, chosen, caps, run_env, stem, tuple(range(gpus)),
                                       predicted, repeats, progress,
                                       overlaps(info, gpu, run_env, gpus, chosen),
                                       budget_score=budget_score, registers_guess=guess)
    else:
        paper = paper_ranking(info, gpu, env, plans, ranking) if diverse else ranking
        chosen = tuning_candidates(ranking, paper, breadth.top, extra, per_bt=breadth.per_bt,
                                   per_bs=breadth.per_bs)
        measured = measure_plans(info, chosen, caps, run_env, stem, predicted, repeats,
                                 progress, (lambda p: neighbour_plans(info, p)) if diverse
                                 else None, budget_score,
                                 partial(balanced_stream_plans, info, model), guess,
                                 breadth.neighbour_rounds)
    # the baseline a blocked plan must beat (acousticvp3d's do not, artifact/H200/
    # acousticvp3d.md); it runs on one GPU
    naive = (time_naive(info, max(measured, key=lambda m: m.gflops).plan, run_env, stem,
                        repeats) if measured and gpus == 1 else None)
    result = TuneResult(gpu.name, sizes, steps, result.ranking, tuple(measured),
                        len(plans), measure_steps, gpus, naive)
    if use_cache:
        _store_cache(key, result.to_json())
    return result


def time_naive(info: StencilInfo, plan: BlockingPlan, env: Mapping[str, int | float],
               stem: str, repeats: int) -> NaiveTiming:
    """The naive baseline of the program, from the module of ``plan`` (which holds it),
    timed as the finalists are: the median of ``repeats`` runs of ``env`` after a warm-up
    (seconds for the run of ``env``)."""
    from an5dpy.perf.bench import bench_plan
    timed = bench_plan(info, plan, env, stem, repeats=repeats, naive=True)
    return NaiveTiming(timed.gflops, timed.seconds)


#: Plans re-timed with all the repeats after every candidate was timed once.
FINALISTS = 3


def own_kernel(cubin, plan: BlockingPlan):
    """ptxas' resources of the kernel of the plan's own degree (None if not reported)."""
    return cubin.kernel(f"_kernel_d{plan.depth}")


def own_registers(cubin, plan: BlockingPlan) -> int | None:
    """ptxas' register count for the kernel of the plan's own degree."""
    own = own_kernel(cubin, plan)
    return own.registers if own else None


def budget_binds(natural: int | None, cap: int) -> bool:
    """Whether a register budget of ``cap`` changes a kernel that ptxas gave ``natural``
    registers without one (:func:`own_registers`; None: not reported, so measured rather
    than guessed): it does not where that is no more than ``cap``."""
    return natural is None or natural > cap


def timing_steps(plan: BlockingPlan, wanted: int, at_most: int | None = None) -> int:
    """The step count of a timing run of ``plan`` that is to run about ``wanted`` steps:
    the fewest from ``wanted`` on made of full launches alone
    (:func:`an5dpy.blocking.plan.full_launch_steps`), or where that passes ``at_most``
    the most up to it; such a run needs only the kernel of a timing build
    (:func:`timing_degrees`). ``wanted`` itself where no count is (such a plan's timing
    builds hold every degree)."""
    steps = full_launch_steps(wanted, plan.bt, plan.levels)
    if steps is None:
        return wanted
    if at_most is not None and steps > at_most:
        # the counts repeat within 2 bt: the search from 2 bt below finds the last one
        lower = full_launch_steps(at_most - 2 * plan.bt + 1, plan.bt, plan.levels)
        if lower is not None and lower <= at_most:
            return lower
    return steps


#: A screening run (every build timed once, :func:`screen`) lasts this long at least
#: (seconds), not the whole run; the finalists are timed as the reported runs.
SCREEN_S = 0.05
#: A run's step time is taken from a warm-up and a run of the fewest steps of full launches
#: where that run lasts this long (seconds), else from a run of PROBE_STEPS steps
#: (:func:`probed_steps`).
PROBE_S = 0.01
PROBE_STEPS = 20


def probed_steps(plan: BlockingPlan, total: int, step_seconds: Callable[[int, int], float],
                 min_run_s: float) -> int:
    """The step count of a timing run of ``plan`` (:func:`timing_steps`) that lasts about
    ``min_run_s`` seconds, at most the program's ``total`` steps unless that is fewer than
    one launch sequence allows. ``step_seconds(steps, warmup)`` times a run of ``steps``
    steps after ``warmup`` untimed ones and gives its seconds per step: first a warm-up
    and a run of the fewest steps of full launches (at bT 1 one launch, 15-55 ms on
    box3d4r double at 512^3), then, where that run took under :data:`PROBE_S`, a run of
    :data:`PROBE_STEPS` steps. The runs that follow need no warm-up of their own. With
    runs of 20 steps at least, as the artifact timed before, a heavy row screened each
    plan for 80 steps, 1-4 s, for 0.05 s of measurement."""
    fewest = timing_steps(plan, 1)
    per_step = step_seconds(fewest, 1)
    if per_step * fewest < PROBE_S:
        per_step = step_seconds(timing_steps(plan, min(PROBE_STEPS, total)), 0)
    wanted = max(fewest, min(total, math.ceil(min_run_s / max(per_step, 1e-9))))
    return timing_steps(plan, wanted, at_most=max(total, fewest))


def run_step_seconds(run_for: Callable[[int], Callable[[], None]]
                     ) -> Callable[[int, int], float]:
    """:func:`probed_steps`'s ``step_seconds`` for the runs ``run_for(steps)`` makes: one
    run of that many steps after ``warmup`` untimed ones, timed by CUDA events
    (:func:`an5dpy.perf.bench.time_runs`), over its steps. The tuner's screening and the
    artifact's timings both probe with it."""
    from an5dpy.perf.bench import time_runs
    return lambda steps, warmup: time_runs(run_for(steps), 1, warmup)[0] / steps


def timing_degrees(plan: BlockingPlan) -> tuple[int, ...] | None:
    """The kernels a timing build of ``plan`` holds: the full degree's alone where runs of
    full launches exist (:func:`timing_steps` gives their step counts), else None (every
    degree). The other degrees' kernels are most of a build's compile time (measured
    with nvcc 13, sm_90: box2d4r float at bT 16 builds in 12.5 s alone against 90 s with
    all 16; star2d1r float at bT 14, 2 cells per thread: 3.7 s against 11.1 s) and a
    timing run does not launch them."""
    if full_launch_steps(1, plan.bt, plan.levels) is None:
        return None
    return (plan.depth,)


def predicted_gflops(model, plan: BlockingPlan, cap: int | None) -> float:
    """The model's GFLOP/s for ``plan`` built with register budget ``cap`` (None: none),
    as the tuner ranks it; 0 where the model cannot place it on an SM."""
    try:
        return model.predict(plan, cap).gflops
    except UsageError:
        return 0.0


def guessed_registers(model) -> Callable[[BlockingPlan], int | None]:
    """The registers ``model`` expects ptxas to give a plan's own kernel without a budget
    (:meth:`~an5dpy.perf.model.Model.thread_registers`; None where it does not say): the
    guess :func:`submit_builds` starts budgeted builds on."""
    return lambda plan: model.thread_registers(plan, plan.depth, None)


def model_budget(binding: Sequence[int], score: Callable[[int], float]) -> int | None:
    """The register budget a plan is built with besides none: of the budgets that bind
    (``binding``, in the order of ``caps``), the one ``score`` (the model's GFLOP/s at a
    budget, :func:`predicted_gflops`) rates highest, the first of equals; None where none
    binds. :func:`submit_builds` builds it, ``scripts/model_check.py --budgets`` checks it
    against the measured tables."""
    return max(binding, key=score, default=None)


def submit_builds(pool: concurrent.futures.Executor, info: StencilInfo,
                  plans: Sequence[BlockingPlan], caps: Sequence[int | None], stem: str,
                  options, timing: bool = False,
                  budget_score: Callable[[BlockingPlan, int], float] | None = None,
                  registers_guess: Callable[[BlockingPlan], int | None] | None = None
                  ) -> list[tuple[BlockingPlan, int | None, concurrent.futures.Future]]:
    """(plan, budget, future build) for every plan without a register budget, submitted
    first, then with each budget in ``caps``. A budgeted build gives None where the budget
    does not bind (:func:`budget_binds`, by the plan's unbudgeted build): it would build
    the same kernel. With ``budget_score`` (the model's GFLOP/s of a plan at a budget,
    :func:`predicted_gflops`) only the budget it scores highest among those that bind is
    built (:func:`model_budget`), the others give None too: in the three measured tables
    of artifact/ (H200 twice, H100: 9,148 builds of 3,184 plans) the unbudgeted build and
    the model's best budget that binds held every row's fastest build, with a third fewer
    builds (``scripts/model_check.py --budgets``). ``timing``: timing builds
    (:func:`timing_degrees`), for runs of :func:`timing_steps` steps only.

    Which budgets bind is known once the unbudgeted build is. A budgeted job, at its place
    in the pool's queue, builds then if its budget is wanted and gives None if not; where
    the unbudgeted build is still running it leaves its worker to other builds and is
    settled when that ends (a wanted build is then queued last). A round of builds would
    still last about twice its longest build, so with ``registers_guess`` (the registers
    the model expects ptxas to give the unbudgeted kernel, :func:`guessed_registers`) the
    budget that this guess says is wanted starts at once instead, beside the unbudgeted
    build, and is dropped if the unbudgeted build says otherwise. The builds kept are the
    same either way. On the 1,703 plans of artifact/H200 the guess was right for 88%: 212
    builds more, of about 3,200."""
    from an5dpy.cuda.runtime import build_kernels

    def build(plan, cap=None):
        return build_kernels(info, plan, stem, options, regs=cap,
                             degrees=timing_degrees(plan) if timing else None)

    uncapped = {p: pool.submit(build, p) for p in plans}
    budgets = [c for c in caps if c is not None]
    # the model's scores, taken here rather than in the build threads
    scores = ({p: {c: budget_score(p, c) for c in budgets} for p in plans}
              if budget_score else None)

    def wanted(plan, registers: int | None) -> list[int]:
        """The budgets built for ``plan`` where its unbudgeted kernel has ``registers``."""
        binding = [c for c in budgets if budget_binds(registers, c)]
        return binding if scores is None else [model_budget(binding, scores[plan].get)]

    def needed(plan, cap) -> bool:
        return cap in wanted(plan, own_registers(uncapped[plan].result()[1], plan))

    guessed = {p: wanted(p, registers_guess(p)) if registers_guess else [] for p in plans}
    jobs = [(p, None, uncapped[p]) for p in plans]
    for c in budgets:
        for p in plans:
            jobs.append((p, c, _budgeted_job(pool, uncapped[p], partial(needed, p, c),
                                             partial(build, p, c), c in guessed[p])))
    return jobs


def _budgeted_job(pool: concurrent.futures.Executor, uncapped: concurrent.futures.Future,
                  needed: Callable[[], bool], build: Callable[[], object],
                  early: bool) -> concurrent.futures.Future:
    """The future of a budgeted build of :func:`submit_builds`: once ``uncapped`` (the
    plan's unbudgeted build) is done, ``build()``'s result where ``needed()``, else None.
    ``early``: ``build()`` is queued now and its result dropped if not needed; otherwise a
    job queued now builds if ``uncapped`` is done by the time a worker takes it, and
    else waits for it without holding the worker. A failed unbudgeted build fails the
    job; a pool shut down cancels it."""
    out: concurrent.futures.Future = concurrent.futures.Future()

    def cancel() -> None:
        out.cancel()
        out.set_running_or_notify_cancel()  # so that concurrent.futures.wait sees it done

    def settle(call: Callable[[], object]) -> None:
        try:
            result = call()
        except BaseException as e:  # noqa: BLE001 - the job's future carries it
            out.set_exception(e)
        else:
            out.set_result(result)

    def copy(source: concurrent.futures.Future) -> None:
        if source.cancelled():
            cancel()
        else:
            settle(source.result)

    def keep() -> bool:
        """Whether the build is needed; where not, the job is settled here: cancelled
        with the unbudgeted build, failed with it, or None."""
        if uncapped.cancelled():
            cancel()
            return False
        try:
            if needed():
                return True
        except BaseException as e:  # noqa: BLE001 - the unbudgeted build's failure
            out.set_exception(e)
            return False
        out.set_result(None)
        return False

    if early:
        started = pool.submit(build)

        def known(_) -> None:
            if keep():
                started.add_done_callback(copy)
            else:
                started.cancel()

        uncapped.add_done_callback(known)
        return out

    def known_later(_) -> None:
        if keep():
            try:
                pool.submit(settle, build)
            except RuntimeError:  # the pool was shut down meanwhile
                cancel()

    def in_turn() -> None:
        if not uncapped.done():
            uncapped.add_done_callback(known_later)
        elif keep():
            settle(build)

    queued = pool.submit(in_turn)
    queued.add_done_callback(lambda f: cancel() if f.cancelled() else None)
    return out


@dataclass
class Screened:
    """One build of :func:`screen`: its short-run GFLOP/s and, for a finalist, the
    result of the reported timing."""

    plan: BlockingPlan
    cap: int | None
    built: tuple  # (RenderModel, Cubin)
    gflops: float
    final: object = None
    round: int = 0  # 0: the first round's jobs; k: the k-th round of neighbours
    balanced: bool = False  # one of the fastest plan's stream lengths (Neighbourhood.balance)


@dataclass(frozen=True)
class Neighbourhood:
    """The later rounds of :func:`screen`: once every job was timed, the neighbours
    (``plans(plan)``, as :func:`neighbour_plans`) of the roots, the fastest plans of the
    ``roots`` fastest shapes (``shape(plan)``, as :func:`plan_shape`), that were not
    measured yet are built (``submit(plans)`` gives their jobs, as :func:`submit_builds`)
    and timed once too; then those of the ``climb_roots`` fastest shapes whose
    neighbours were not measured yet, round after round, until there is none or
    ``rounds`` rounds were timed; with ``balance``, then the fastest build's other stream
    lengths (``balance(plan, cap)``, as :func:`balanced_stream_plans`) not measured yet;
    then the finalists are chosen.

    The stream length comes last: which length fills a launch's last wave depends on the
    block, the degree and the registers, which the rounds before settle, and it changes
    neither the halo nor a kernel's code, so the lengths need no round of neighbours."""

    plans: Callable[[BlockingPlan], Sequence[BlockingPlan]]
    submit: Callable[[Sequence[BlockingPlan]], list]
    roots: int = NEIGHBOURHOOD_ROOTS
    rounds: int = NEIGHBOURHOOD_ROUNDS
    shape: Callable[[BlockingPlan], object] = plan_shape
    climb_roots: int = CLIMB_ROOTS
    balance: Callable[[BlockingPlan, int | None], Sequence[BlockingPlan]] | None = None

    def root_plans(self, screened: Sequence[Screened], count: int) -> list[BlockingPlan]:
        """The fastest plan of each of the ``count`` fastest shapes of ``screened``
        (fastest first), fastest first."""
        out: dict[object, BlockingPlan] = {}
        for s in screened:
            if len(out) == count:
                break
            out.setdefault(self.shape(s.plan), s.plan)
        return list(out.values())

    def jobs(self, screened: Sequence[Screened], known: set, expanded: set,
             first: bool = True) -> list:
        """The jobs of the neighbours of the roots of ``screened`` (after the ``first``
        round, those of ``climb_roots``) whose shapes are not in ``expanded``, submitted
        (their builds may still run); the plans of ``known`` are not submitted again.
        Both sets take this round's shapes and plans."""
        count = self.roots if first else self.climb_roots
        roots = [r for r in self.root_plans(screened, count)
                 if self.shape(r) not in expanded]
        expanded.update(self.shape(r) for r in roots)
        return self._submit_new((n for r in roots for n in self.plans(r)), known)

    def balance_jobs(self, fastest: Screened, known: set) -> list:
        """The jobs of ``fastest``'s other stream lengths (:attr:`balance`) not in
        ``known``, submitted; ``known`` takes their plans."""
        if self.balance is None:
            return []
        return self._submit_new(self.balance(fastest.plan, fastest.cap), known)

    def _submit_new(self, plans: Iterable[BlockingPlan], known: set) -> list:
        """The jobs of ``plans`` not in ``known`` (each once), submitted; ``known`` takes
        them."""
        new = [p for p in dict.fromkeys(plans) if p not in known]
        known.update(new)
        return self.submit(new) if new else []


class Stopwatch:
    """Seconds spent per kind of wait, summed (:func:`screen`: ``builds``, waiting for
    nvcc; ``runs``, timing on the GPU): where a tuning run's time goes. Within
    :meth:`phase` the same seconds are also summed per phase of the search
    (:class:`Screening`'s: ``first round``, ``round 1``, ``round 2``, ..., ``stream
    lengths``, ``finalists``), whose sum is the part of :attr:`seconds` timed within one."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.phases: dict[str, float] = {}
        self._phase: str | None = None

    @contextlib.contextmanager
    def phase(self, name: str):
        """Count what is timed within the block to phase ``name`` too."""
        outer, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = outer

    def timed(self, kind: str, call: Callable, *args, **kwargs):
        """``call(*args, **kwargs)``, its seconds added to ``kind`` (and to the phase)."""
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent = time.perf_counter() - start
            self.seconds[kind] = self.seconds.get(kind, 0.0) + spent
            if self._phase is not None:
                self.phases[self._phase] = self.phases.get(self._phase, 0.0) + spent


class Screening:
    """:func:`screen` in two halves, so that a caller may time other work on the GPU
    while the second round's builds run (``scripts/artifact.py``: the next row's first
    round). :meth:`first_round` times every job once and submits the neighbourhood's
    builds without waiting for them; :meth:`finish` waits for those builds, times them,
    builds and times the later rounds the neighbourhood climbs to and the fastest plan's
    other stream lengths (:attr:`Neighbourhood.balance`), and then the finalists."""

    def __init__(self, jobs, time_once, time_final, finalists: int = FINALISTS,
                 on_error=None, progress: bool = False,
                 neighbourhood: Neighbourhood | None = None,
                 stopwatch: Stopwatch | None = None):
        self.jobs, self.time_once, self.time_final = jobs, time_once, time_final
        self.finalists, self.on_error, self.progress = finalists, on_error, progress
        self.neighbourhood = neighbourhood
        self.clock = stopwatch or Stopwatch()
        self.screened: list[Screened] = []
        self.more: list = []
        self.rounds = 0  # rounds of neighbours timed
        self._known: set = set()  # plans measured or submitted
        self._expanded: set = set()  # shapes whose neighbours were submitted

    def _time_each(self, round_jobs, desc: str, round_no: int = 0,
                   balanced: bool = False) -> list[Screened]:
        from tqdm import tqdm
        out = []
        for plan, cap, fut in tqdm(round_jobs, desc=desc, disable=not self.progress):
            try:
                built = self.clock.timed("builds", fut.result)
                if built is None:
                    continue
                out.append(Screened(plan, cap, built,
                                    self.clock.timed("runs", self.time_once, plan, built),
                                    round=round_no, balanced=balanced))
            except Exception as e:  # noqa: BLE001 - reported by the caller's handler
                if self.on_error is None:
                    raise
                self.on_error(plan, cap, e)
        return out

    def _later_round(self, screened: list[Screened], round_jobs, phase: str, desc: str,
                     balanced: bool = False) -> list[Screened]:
        """``screened`` and ``round_jobs`` timed once (round :attr:`rounds`), fastest
        first, the time spent counted to ``phase``."""
        with self.clock.phase(phase):
            # every build of the round first, as in the first round: nvcc would delay the
            # launches
            self.clock.timed("builds", concurrent.futures.wait, [f for _, _, f in round_jobs])
            return sorted(screened + self._time_each(round_jobs, desc, self.rounds,
                                                     balanced),
                          key=lambda s: -s.gflops)

    def _next_round(self, screened: list[Screened]) -> list:
        """The jobs of the round of neighbours after :attr:`rounds`, submitted, or none
        where the neighbourhood's rounds are all timed."""
        if self.rounds >= self.neighbourhood.rounds:
            return []
        return self.neighbourhood.jobs(screened, self._known, self._expanded,
                                       first=self.rounds == 0)

    def first_round(self) -> None:
        """Time every job once and submit the neighbourhood's builds."""
        with self.clock.phase("first round"):
            self.screened = sorted(self._time_each(self.jobs, "time"),
                                   key=lambda s: -s.gflops)
        if self.neighbourhood is not None:
            self._known = {p for p, _, _ in self.jobs}
            self.more = self._next_round(self.screened)

    def finish(self) -> list[Screened]:
        """The rounds of neighbours, the fastest plan's other stream lengths and the
        finalists (fastest first)."""
        screened = self.screened
        while self.more:
            self.rounds += 1
            screened = self._later_round(screened, self.more, f"round {self.rounds}",
                                         "time neighbours")
            self.more = self._next_round(screened)
        lengths = (self.neighbourhood.balance_jobs(screened[0], self._known)
                   if self.neighbourhood is not None and screened else [])
        if lengths:
            screened = self._later_round(screened, lengths, "stream lengths",
                                         "time stream lengths", balanced=True)
        with self.clock.phase("finalists"):
            for s in screened[:self.finalists]:
                s.final = self.clock.timed("runs", self.time_final, s.plan, s.built)
        return screened


def screen(jobs, time_once, time_final, finalists: int = FINALISTS, on_error=None,
           progress: bool = False, neighbourhood: Neighbourhood | None = None,
           stopwatch: Stopwatch | None = None) -> list[Screened]:
    """Time every job's build once (``time_once(plan, built)`` gives GFLOP/s), with a
    ``neighbourhood`` then its rounds' jobs too, then the ``finalists`` fastest again
    (``time_final(plan, built)``, kept as ``final``); fastest first. Builds that the budget
    does not change (None) are left out. A failed build or run raises, or with
    ``on_error(plan, cap, exception)`` is reported and left out. ``stopwatch`` sums the
    waits for builds and the timings. Both halves of :class:`Screening` in turn."""
    screening = Screening(jobs, time_once, time_final, finalists, on_error, progress,
                          neighbourhood, stopwatch)
    screening.first_round()
    return screening.finish()


def measure_plans(info: StencilInfo, plans: Sequence[BlockingPlan],
                  caps: Sequence[int | None], env: Mapping[str, int | float], stem: str,
                  predicted: Mapping[BlockingPlan, float] | None = None, repeats: int = 3,
                  progress: bool = True,
                  neighbours: Callable[[BlockingPlan], Sequence[BlockingPlan]] | None = None,
                  budget_score: Callable[[BlockingPlan, int], float] | None = None,
                  balance: Callable[[BlockingPlan, int | None],
                                    Sequence[BlockingPlan]] | None = None,
                  registers_guess: Callable[[BlockingPlan], int | None] | None = None,
                  neighbour_rounds: int = NEIGHBOURHOOD_ROUNDS) -> list[Measured]:
    """Build every plan with each register budget that binds (with ``budget_score``, the
    best of them by it; with ``registers_guess``, the budget it points to started at once:
    :func:`submit_builds`), in parallel with nvcc, and
    time them (:func:`screen`): every build once after a warm-up, with ``neighbours`` (as
    :func:`neighbour_plans`) then the neighbours of the fastest (:class:`Neighbourhood`,
    up to ``neighbour_rounds`` rounds) and with ``balance`` too the fastest build's other
    stream lengths
    (:attr:`Neighbourhood.balance`), and the ``FINALISTS`` fastest again ``repeats``
    times (their median is reported).

    Where the run's step count can be set (:func:`steps_can_vary`) the builds are timing
    builds (:func:`timing_degrees`: the full degree's kernel alone, a fraction of the
    compile time), each build is screened with a run of about :data:`SCREEN_S` seconds
    (:func:`probed_steps`) rather than the whole run, and the finalists' runs are
    :func:`timing_steps` steps, the fewest from the run of ``env`` on made of full
    launches; seconds are reported for the run of ``env``, in proportion to the steps
    (GFLOP/s is a rate). A heavy 3D stencil's run of 1000 steps lasts 15-55 s, which
    every screened build ran twice before."""
    from an5dpy.perf.bench import device_grid, device_read_only_values, median, time_runs
    from an5dpy.cuda.runtime import CupyRunner

    grids: dict[str, object] = {}
    read_only: list[tuple] = []  # made once, on first use
    steps = info.time.steps(env)
    timing = steps > 0 and steps_can_vary(info)

    def runner_of(plan, built):
        """A run of ``built`` for a given number of steps."""
        model, cubin = built
        grid = grids.get(plan.dtype)
        if grid is None:
            grids.clear()  # one grid on the device at a time
            grid = grids[plan.dtype] = device_grid(info, env, plan.dtype)
        if not read_only:
            read_only.append(device_read_only_values(info, env))
        runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)

        def run_for(count: int) -> Callable[[], None]:
            run_env = with_steps(info, env, count) if count != steps else env
            return lambda: runner.run(grid, run_env, read_only[0])
        return run_for

    def seconds(plan, built, count):
        run_for = runner_of(plan, built)
        timed = timing_steps(plan, steps) if timing else steps
        return median(time_runs(run_for(timed), count)) * steps / timed

    def screened_seconds(plan, built):
        run_for = runner_of(plan, built)
        timed = probed_steps(plan, steps, run_step_seconds(run_for), SCREEN_S)
        return time_runs(run_for(timed), 1, 0)[0] * steps / timed

    return _build_and_time(info, plans, caps, env, stem, predicted, repeats, progress,
                           seconds, neighbours, budget_score, timing, balance,
                           registers_guess, neighbour_rounds,
                           # a program whose step count is fixed is screened as it runs
                           screened_seconds if timing else None)


def overlaps(info: StencilInfo, gpu: GpuSpec, env: Mapping[str, int | float], gpus: int,
             plans: Iterable[BlockingPlan]) -> dict[BlockingPlan, bool]:
    """Whether the model overlaps the halo exchange of each plan's run over ``gpus`` GPUs
    (:attr:`an5dpy.perf.multi.SlabPrediction.overlap`, as ``Stencil.run(devices=..)``
    decides it); plans whose slabs are too thin are left out."""
    from an5dpy.perf.multi import predict_slabs
    out = {}
    for plan in plans:
        try:
            out[plan] = predict_slabs(info, plan, gpu, env, gpus).overlap
        except UsageError:
            continue
    return out


def measure_plans_multi(info: StencilInfo, plans: Sequence[BlockingPlan],
                        caps: Sequence[int | None], env: Mapping[str, int | float],
                        stem: str, devices: Sequence[int],
                        predicted: Mapping[BlockingPlan, float] | None = None,
                        repeats: int = 3, progress: bool = True,
                        overlap: Mapping[BlockingPlan, bool] | None = None,
                        budget_score: Callable[[BlockingPlan, int], float] | None = None,
                        registers_guess: Callable[[BlockingPlan], int | None] | None = None
                        ) -> list[Measured]:
    """:func:`measure_plans` on several GPUs: each build run by the NCCL runner over
    ``devices`` (:mod:`an5dpy.cuda.multi_gpu`; one process, communicators made once for
    every build), on random slabs made on their devices, timed from device 0 (its stream
    waits for every slab's, :meth:`~an5dpy.cuda.multi_gpu.MultiGpuRunner.join`); GFLOP/s
    are the whole grid's. ``overlap``: the plans whose runs overlap the halo exchange
    (:func:`overlaps`; the others do not). A plan whose slabs would be thinner than its
    halo on that many devices is left out. Read-only arrays are placed on the devices by
    every run (the runner copies each slab's part through the host), which the times
    include."""
    import cupy

    from an5dpy.blocking.slabs import max_slabs, slab_halo
    from an5dpy.blocking.plan import grid_extents
    from an5dpy.cuda.multi_gpu import check_devices, communicators, runner_over
    from an5dpy.perf.bench import device_read_only_values, median, time_runs

    devices = check_devices(devices)
    extent = grid_extents(info, env)[0]
    plans = [p for p in plans if max_slabs(extent, slab_halo(info, p)) >= len(devices)]
    comms = communicators(devices)
    slabs: dict[tuple, list] = {}
    read_only: list[tuple] = []  # made once, on first use

    def seconds(plan, built, count):
        model, cubin = built
        runner = runner_over(info, plan, cubin, model.prefix, model.signature, devices, comms)
        shapes = tuple(runner.slab_shape(env, g) for g in range(len(devices)))
        key = (plan.dtype, shapes)
        if key not in slabs:
            slabs.clear()  # one grid on the devices at a time
            slabs[key] = random_slabs(devices, shapes, plan.dtype)
        if not read_only:
            with cupy.cuda.Device(devices[0]):
                read_only.append(device_read_only_values(info, env))

        def run():
            runner.run(slabs[key], env, read_only[0],
                       overlap=bool((overlap or {}).get(plan, False)))
            runner.join()

        with cupy.cuda.Device(devices[0]):
            return median(time_runs(run, count))

    return _build_and_time(info, plans, caps, env, stem, predicted, repeats, progress,
                           seconds, budget_score=budget_score,
                           registers_guess=registers_guess)


def random_slabs(devices: Sequence[int], shapes: Sequence[tuple[int, ...]], dtype: str
                 ) -> list:
    """Values in [0.5, 1.5) of each shape, made on its device (timing only)."""
    import cupy
    out = []
    for k, (device, shape) in enumerate(zip(devices, shapes)):
        with cupy.cuda.Device(device):
            values = cupy.random.default_rng(k).random(shape, dtype=cupy.float64) + 0.5
            out.append(values.astype(cupy.float32 if dtype == "float" else cupy.float64))
    return out


def _build_and_time(info: StencilInfo, plans: Sequence[BlockingPlan],
                    caps: Sequence[int | None], env: Mapping[str, int | float], stem: str,
                    predicted: Mapping[BlockingPlan, float] | None, repeats: int,
                    progress: bool, seconds,
                    neighbours: Callable[[BlockingPlan], Sequence[BlockingPlan]] | None = None,
                    budget_score: Callable[[BlockingPlan, int], float] | None = None,
                    timing: bool = False,
                    balance: Callable[[BlockingPlan, int | None],
                                      Sequence[BlockingPlan]] | None = None,
                    registers_guess: Callable[[BlockingPlan], int | None] | None = None,
                    neighbour_rounds: int = NEIGHBOURHOOD_ROUNDS,
                    screened_seconds: Callable[[BlockingPlan, tuple], float] | None = None
                    ) -> list[Measured]:
    """Build every plan with each budget of ``caps`` that binds (:func:`submit_builds`,
    with ``budget_score`` and ``registers_guess``; ``timing``: timing builds, whose runs
    must be of :func:`timing_steps` steps), then :func:`screen` the builds, each once
    with ``screened_seconds(plan, built)`` (default: ``seconds(plan, built, 1)``) and the
    finalists with ``seconds(plan, built, count)``, the median seconds of ``count`` runs
    (with ``neighbours``, the :class:`Neighbourhood` of the fastest too, of up to
    ``neighbour_rounds`` rounds, with ``balance`` as its :attr:`~Neighbourhood.balance`)."""
    from tqdm import tqdm

    from an5dpy.perf.bench import gflops
    from an5dpy.cuda.runtime import BuildOptions, build_workers, device_arch

    options = BuildOptions(arch=device_arch())
    with concurrent.futures.ThreadPoolExecutor(build_workers()) as pool:
        jobs = submit_builds(pool, info, plans, caps, stem, options, timing=timing,
                             budget_score=budget_score, registers_guess=registers_guess)
        # every build first: timing while nvcc keeps the CPUs busy would delay launches
        for fut in tqdm(concurrent.futures.as_completed([f for _, _, f in jobs]),
                        total=len(jobs), desc="build", disable=not progress):
            fut.result()
        neighbourhood = None if neighbours is None else Neighbourhood(
            neighbours, lambda new: submit_builds(pool, info, new, caps, stem, options,
                                                  timing=timing, budget_score=budget_score,
                                                  registers_guess=registers_guess),
            rounds=neighbour_rounds, balance=balance)
        once = screened_seconds or (lambda p, b: seconds(p, b, 1))
        screened = screen(jobs, lambda p, b: gflops(info, env, once(p, b)),
                          lambda p, b: seconds(p, b, repeats), progress=progress,
                          neighbourhood=neighbourhood)
    out = []
    for s in screened:
        cubin = s.built[1]
        median = s.final if s.final is not None else _seconds_at(info, env, s.gflops)
        out.append(Measured(s.plan, s.cap, gflops(info, env, median), median,
                            own_registers(cubin, s.plan),
                            any(k.spills for k in cubin.kernels("_kernel_d")),
                            (predicted or {}).get(s.plan, 0.0)))
    return out


def _seconds_at(info: StencilInfo, env: Mapping[str, int | float], rate: float) -> float:
    """The run time that a rate of ``rate`` GFLOP/s means for the run of ``env``."""
    from an5dpy.perf.bench import gflops
    return gflops(info, env, 1.0) / rate if rate > 0 else float("inf")
