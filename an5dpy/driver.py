"""The pipeline driver: the one place that runs the stages, in order.

    C file -frontend-> StencilProgram -analysis-> StencilInfo -plan-> BlockingPlan
           -schedule-> Schedule -codegen-> RenderModel -> x_host.cu, x_kernel.cu, x_kernel.hu

* :func:`load`: the program and its analysis.
* :func:`choose_plan` / :func:`plan_for`: the plan of the user's :class:`Options`; options
  left open (None or ``"auto"``) are the performance model's choice for the target GPU and
  problem size (:mod:`an5dpy.perf.choice`), the others stay as given. :func:`blocking_plan`:
  a plan from explicit values.
* :func:`emitted_schedule`: the schedule the generated code runs (also what the simulator
  runs for ``an5d verify --backend sim``).
* :func:`generate`: schedule, render model and kernel texts of a plan (the CUDA runner
  builds these, :mod:`an5dpy.cuda.runtime`).
* :func:`translate`: all of it for a C file, behind ``an5d-translate``; each field of the
  returned :class:`Translation` is one stage's value (``--print-ir`` prints any of them).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from an5dpy.analysis import analyze
from an5dpy.cuda import kernels as cuda_kernels
from an5dpy.cuda.kernels import Kernels, emitted_schedule  # noqa: F401 (re-exported)
from an5dpy.cuda.render import host_multi, render_host
from an5dpy.cuda.render_model import RenderModel
from an5dpy.errors import OptionError, UnsupportedInput, UsageError
from an5dpy.frontend import read_program, read_program_text, read_source_text
from an5dpy.ir import StencilInfo, StencilProgram
from an5dpy.blocking.plan import (BELOW_ONE, HOPPER_LIMITS, Barriers, BlockingPlan,
                                  DeviceLimits, HaloCells, IdleWarps, make_plan,
                                  parse_block_size, resolve_barriers, resolve_halo,
                                  resolve_idle)
from an5dpy.blocking.ops import Schedule
from an5dpy.perf.choice import AUTO, Fixed, default_plan, describe_sizes, problem_env, target_gpu
from an5dpy.perf.gpus import GpuSpec

Defines = tuple[tuple[str, str | None], ...]
#: ``Options.sl`` for no stream division, ``Options.regs`` for no register budget.
OFF, NO_BUDGET = "off", "none"


@dataclass(frozen=True)
class Options:
    """What the user chose (command-line flags or the Python API), before validation.

    The plan options ``bt``, ``bs``, ``sl``, ``opt``, ``regs``, ``coarsen``, ``barriers`` and
    ``idle`` are None (or ``"auto"``) where the performance model chooses them
    (:func:`choose_plan`): its best plan for ``gpu`` and the problem of ``params``, around
    the options that are given. ``opt``
    left open is the analysis' default mode (the only one the search space holds), and
    ``regs`` left open is chosen only with the plan: where ``bt``, ``bs`` and ``sl`` are
    all given the kernels get no register budget unless ``regs`` is given (``"auto"``
    asks the model for the best budget of that plan), one cell per thread unless
    ``coarsen`` is given, a barrier per level unless ``barriers`` is, idle warps
    skipped unless ``idle`` is and a thread per halo cell unless ``halo`` is.
    """

    bt: int | str | None = None
    bs: str | None = None  # "128" or "32x16" (contiguous dimension first)
    sl: int | str | None = None  # planes per stream block; "off": no stream division
    opt: str | None = None  # nondiag, assoc, none ("auto": the analysis' default mode)
    defines: Defines = ()
    include_dirs: tuple[str, ...] = ()
    smem_wrap: bool = True
    baseline: bool = False  # host code runs the naive kernel instead of the blocked one
    #: host code drives this many GPUs (NCCL; ``AN5D_GPUS`` overrides it at run time);
    #: None: one GPU, the host code of a single device
    gpus: int | None = None
    regs: int | str | None = None  # register budget per thread (launch bounds); "none"
    #: cells per thread along the outermost in-plane dimension (None or "auto": the
    #: model's choice where it chooses the plan, else 1)
    coarsen: int | str | None = None
    #: "level" or "step" (None or "auto": the model's choice where it chooses the plan,
    #: else "level"; :class:`~an5dpy.blocking.plan.Barriers`)
    barriers: str | None = None
    #: "skip" or "compute" (None or "auto": "skip", the model's search space holds it
    #: only; :class:`~an5dpy.blocking.plan.IdleWarps`)
    idle: str | None = None
    #: "threads" or "loaded" (None or "auto": the model's choice, "threads" or, where the
    #: block, cells per thread and plan are left open, a bT 1 plan loading the halo at one
    #: cell a thread or, in mode nondiag, two, :func:`~an5dpy.perf.choice.
    #: loaded_halo_candidates`; "threads" where the plan is given;
    #: :class:`~an5dpy.blocking.plan.HaloCells`)
    halo: str | None = None
    gpu: str | GpuSpec | None = None  # name or spec file; None: this machine's, else H100
    #: Parameter values (``-P``) of the problem the plan is chosen for; sizes not given are
    #: the paper's (:func:`an5dpy.perf.choice.problem_env`).
    params: tuple[tuple[str, str | int | float], ...] = ()


@dataclass(frozen=True)
class PlanChoice:
    """The plan of some :class:`Options`, its register budget, and how it was chosen."""

    plan: BlockingPlan
    regs: int | None  # register budget per thread (None: no launch-bound budget)
    chosen: tuple[str, ...] = ()  # the options the model chose (empty: all were given)
    gpu: str = ""  # the GPU it was chosen for, and why that one
    sizes: str = ""  # the problem it was chosen for ("16384^2 x 1000 steps")
    given: str = ""  # the options held fixed ("bt=6")
    predicted: float = 0.0  # the model's GFLOP/s

    def summary(self) -> str:
        """The plan as options: ``bt=12 bs=256 sl=256 opt=nondiag regs=64``."""
        regs = NO_BUDGET if self.regs is None else self.regs
        return f"{self.plan.option_text()} regs={regs}"

    def reason(self) -> str:
        """Why this plan, after "the model's" (empty where every option was given)."""
        if not self.chosen:
            return ""
        held = f" with {self.given}" if self.given else ""
        return (f"best for {self.gpu} at {self.sizes}{held}; "
                f"{self.predicted:,.0f} GFLOP/s predicted")

    def line(self) -> str:
        """The line the commands print on stderr."""
        reason = f" (model's {self.reason()})" if self.chosen else ""
        return f"an5d: plan {self.summary()}{reason}"

    def note(self) -> str:
        """The generated files' header line (empty where every option was given, so that
        the output is what it always was)."""
        return (f"Plan {self.summary()}: the performance model's {self.reason()}."
                if self.chosen else "")


@dataclass(frozen=True)
class Translation:
    path: str
    options: Options
    program: StencilProgram
    info: StencilInfo
    plan: BlockingPlan
    schedule: Schedule
    model: RenderModel
    outputs: dict[str, str] = field(hash=False)  # file name -> text
    choice: PlanChoice | None = None  # how the plan and register budget were chosen

    @property
    def stem(self) -> str:
        return Path(self.path).stem


def last_definitions(defines: Defines) -> Defines:
    """``-D`` options as the C compiler sees them: a name given twice has its last value
    (the host file repeats the definitions, and must not keep the first)."""
    last: dict[str, str | None] = {}
    for name, value in defines:
        last.pop(name, None)
        last[name] = value
    return tuple(last.items())


def load(path: str, defines: Defines = (), include_dirs: Sequence[str] = (),
         text: str | None = None) -> tuple[StencilProgram, StencilInfo]:
    """Frontend and analysis of the C file ``path``, or of the source ``text`` (then
    ``path`` only names it: coordinates, and ``#include "..."`` searches its folder)."""
    if text is None:
        program = read_program(path, last_definitions(defines), include_dirs)
    else:
        program = read_program_text(text, path, last_definitions(defines), include_dirs)
    return program, analyze(program)


def generate(info: StencilInfo, plan: BlockingPlan, stem: str, smem_wrap: bool = True,
             regs: int | None = None, plan_note: str = "") -> Kernels:
    """Schedule, render model and kernel texts of ``plan`` (:func:`an5dpy.cuda.kernels.generate`)."""
    return cuda_kernels.generate(info, plan, stem, smem_wrap=smem_wrap, regs=regs,
                                 plan_note=plan_note)


def blocking_plan(info: StencilInfo, bt: int, bs: tuple[int, ...] | None = None,
                  sl: int | None = None, opt: str | None = None, dtype: str | None = None,
                  limits: DeviceLimits = HOPPER_LIMITS, coarsen: int = 1,
                  barriers: Barriers | str = Barriers.LEVEL,
                  idle: IdleWarps | str = IdleWarps.SKIP,
                  halo: HaloCells | str = HaloCells.THREADS) -> BlockingPlan:
    """A checked plan for ``info`` (``opt`` None: the analysis' default mode)."""
    return make_plan(info, bt=bt, bs=bs, sl=sl, opt=opt, dtype=dtype, limits=limits,
                     coarsen=coarsen, barriers=barriers, idle=idle, halo=halo)


def _open(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() == AUTO)


def fixed_options(info: StencilInfo, options: Options) -> Fixed:
    """The plan options of ``options`` that are given, checked, as :class:`Fixed`."""
    def number(name: str, value, word: str | None) -> int | str | None:
        if _open(value):
            return AUTO
        if word is not None and isinstance(value, str) and value.strip().lower() == word:
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(value, bool) or (isinstance(value, float)
                                                         and value != number):
            extra = f", '{word}'" if word else ""
            raise OptionError([(name, value)], f"expected a positive integer{extra} or 'auto'")
        if number < 1:  # an integer, too small: the plan's own reason where it has one
            raise OptionError([(name, number)], BELOW_ONE.get(name, "must be at least 1"))
        return number

    # the mode left open is the analysis' default (the only mode of the search space), so
    # a plan with bt, bs and sl given is the user's whole plan
    plan_open = any(_open(v) for v in (options.bt, options.bs, options.sl))
    regs = options.regs if options.regs is not None or plan_open else NO_BUDGET
    opt = AUTO if _open(options.opt) else options.opt
    return Fixed(bt=number("bt", options.bt, None),
                 bs=AUTO if _open(options.bs) else parse_block_size(str(options.bs), info.ndim),
                 sl=number("sl", options.sl, OFF), opt=opt,
                 regs=number("regs", regs, NO_BUDGET),
                 coarsen=number("coarsen", options.coarsen if plan_open else
                                (options.coarsen or 1), None),
                 barriers=(Barriers.LEVEL if not plan_open else AUTO) if _open(options.barriers)
                 else resolve_barriers(options.barriers),
                 idle=(IdleWarps.SKIP if not plan_open else AUTO) if _open(options.idle)
                 else resolve_idle(options.idle),
                 halo=(HaloCells.THREADS if not plan_open else AUTO) if _open(options.halo)
                 else resolve_halo(options.halo))


def choose_plan(info: StencilInfo, options: Options,
                env: Mapping[str, int | float] | None = None) -> PlanChoice:
    """The plan of ``options``: the given options as given, the open ones the performance
    model's choice (:func:`an5dpy.perf.choice.default_plan`) for ``options.gpu`` and the
    problem of ``env`` (default: ``options.params``, the paper's sizes for the rest)."""
    fixed = fixed_options(info, options)
    if set(fixed.open) <= {"opt", "coarsen"}:  # the user's own plan
        opt = None if fixed.opt == AUTO else fixed.opt
        coarsen = 1 if fixed.coarsen == AUTO else fixed.coarsen
        plan = blocking_plan(info, fixed.bt, bs=fixed.bs, sl=fixed.sl, opt=opt,
                             coarsen=coarsen, barriers=fixed.barriers, idle=fixed.idle,
                             halo=fixed.halo)
        return PlanChoice(plan, fixed.regs)
    gpu, why = target_gpu(options.gpu)
    if env is None:
        env = problem_env(info.program, info, {k: str(v) for k, v in options.params},
                          complete=True)
    gpus = options.gpus or 1
    best = default_plan(info, gpu, env, fixed, gpus)
    chosen = tuple(name for name in fixed.open if name != "opt")
    sizes = describe_sizes(info, env) + (f" on {gpus} GPUs" if gpus > 1 else "")
    return PlanChoice(best.plan, best.registers, chosen,
                      f"{gpu.name} ({why})" if why else gpu.name, sizes,
                      fixed.given(), best.gflops)


def plan_for(info: StencilInfo, options: Options,
             env: Mapping[str, int | float] | None = None) -> BlockingPlan:
    """The plan the user's options ask for (:func:`choose_plan`'s plan)."""
    return choose_plan(info, options, env).plan


def translate(path: str, options: Options = Options(),
              env: Mapping[str, int | float] | None = None,
              loaded: tuple[StencilProgram, StencilInfo] | None = None,
              text: str | None = None) -> Translation:
    """Translate the C file ``path``, or the C source ``text`` (then ``path`` only names
    it); ``env``: the problem the plan is chosen for where options are open (default:
    ``options.params`` and the paper's sizes); ``loaded``: :func:`load`'s result for
    ``path`` and ``options`` where the caller has it."""
    program, info = loaded or load(path, options.defines, options.include_dirs, text)
    choice = choose_plan(info, options, env)
    stem = Path(path).stem
    kernels = generate(info, choice.plan, stem, smem_wrap=options.smem_wrap, regs=choice.regs,
                       plan_note=choice.note())
    original = read_source_text(path) if text is None else text
    multi = None
    if options.gpus is not None:
        if options.baseline:
            raise UsageError("the naive baseline runs on one GPU: give --baseline or --gpus")
        multi = host_multi(info, choice.plan, options.gpus)
    host = render_host(kernels.model, info, original, kernels.model.header,
                       baseline=options.baseline, multi=multi)
    outputs = {f"{stem}_host.cu": host, **kernels.files()}
    return Translation(path, options, program, info, choice.plan, kernels.schedule,
                       kernels.model, outputs, choice)


def write_outputs(outputs: dict[str, str], out_dir: str | Path) -> list[Path]:
    """Write all files atomically: every file goes to a temporary name in ``out_dir``
    first and is renamed only when all were written, so a failure leaves nothing new."""
    out_dir = Path(out_dir)
    created = [p for p in (out_dir, *out_dir.parents) if not p.exists()]  # deepest first
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UnsupportedInput(f"cannot create output directory '{out_dir}': {e.strerror}") from None
    staged: list[tuple[str, Path]] = []
    pending: list[str] = []  # temporary files not renamed yet

    def undo() -> None:
        for tmp in pending:
            Path(tmp).unlink(missing_ok=True)
        for d in created:
            try:
                d.rmdir()
            except OSError:
                break

    try:
        for name in outputs:
            if (out_dir / name).is_dir():
                raise UnsupportedInput(f"cannot write '{out_dir / name}': it is a directory")
        for name, text in outputs.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
            staged.append((tmp, out_dir / name))
            pending.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
        for tmp, final in staged:
            os.replace(tmp, final)
            pending.remove(tmp)
    except OSError as e:
        undo()
        raise UnsupportedInput(f"cannot write to '{out_dir}': {e.strerror or e}") from None
    except BaseException:
        undo()
        raise
    return [final for _, final in staged]
