"""The pipeline driver: the one place that runs the stages, in order.

    C file -frontend-> StencilProgram -analysis-> StencilInfo -plan-> BlockingPlan
           -schedule-> Schedule -codegen-> RenderModel -> x_host.cu, x_kernel.cu, x_kernel.hu

* :func:`load`: the program and its analysis; :func:`plan_for` / :func:`blocking_plan`: a plan.
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
from typing import Sequence

from an5dpy.analysis.stencil import analyze
from an5dpy.cuda.render import render_header, render_host, render_kernel
from an5dpy.cuda.render_model import RenderModel, render_model
from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program, read_program_text, read_source_text
from an5dpy.ir import StencilInfo, StencilProgram
from an5dpy.blocking.plan import (HOPPER_LIMITS, BlockingPlan, DeviceLimits, make_plan,
                                  parse_block_size)
from an5dpy.blocking.build import build_schedule, static_head_degrees
from an5dpy.blocking.ops import Schedule

Defines = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class Options:
    """What the user chose (command-line flags), before validation against the stencil."""

    bt: int = 4
    bs: str | None = None  # "128" or "32x16" (contiguous dimension first)
    sl: int | None = None
    opt: str | None = None  # None or "auto": the analysis' default
    defines: Defines = ()
    include_dirs: tuple[str, ...] = ()
    smem_wrap: bool = True
    baseline: bool = False  # host code runs the naive kernel instead of the blocked one
    regs: int | None = None  # register budget per thread (launch bounds)


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


def blocking_plan(info: StencilInfo, bt: int, bs: tuple[int, ...] | None = None,
                  sl: int | None = None, opt: str | None = None, dtype: str | None = None,
                  limits: DeviceLimits = HOPPER_LIMITS) -> BlockingPlan:
    """A checked plan for ``info`` (``opt`` None: the analysis' default mode)."""
    return make_plan(info, bt=bt, bs=bs, sl=sl, opt=opt, dtype=dtype, limits=limits)


def plan_for(info: StencilInfo, options: Options) -> BlockingPlan:
    """The plan the user's options ask for."""
    bs = parse_block_size(options.bs, info.ndim) if options.bs else None
    opt = None if options.opt in (None, "auto") else options.opt
    return blocking_plan(info, options.bt, bs=bs, sl=options.sl, opt=opt)


def emitted_schedule(info: StencilInfo, plan: BlockingPlan) -> Schedule:
    """The schedule of the code an5dpy emits: unrolled heads only where they pay
    (remainder degrees and very large expressions get compact kernels)."""
    return build_schedule(plan, static_heads=static_head_degrees(plan, info.flops_per_cell))


@dataclass(frozen=True)
class Kernels:
    """The generated kernels of a plan: the schedule, the render model and the texts of
    ``x_kernel.cu`` and its header (``model.header`` names it)."""

    schedule: Schedule
    model: RenderModel
    kernel_cu: str
    kernel_hu: str

    def files(self) -> dict[str, str]:
        """File name -> text of the kernel file and its header."""
        return {f"{self.model.stem}_kernel.cu": self.kernel_cu, self.model.header: self.kernel_hu}


def generate(info: StencilInfo, plan: BlockingPlan, stem: str, smem_wrap: bool = True,
             regs: int | None = None) -> Kernels:
    """Schedule and print the kernels of ``plan``; ``regs``: a register budget per thread
    (launch bounds), ``smem_wrap``: read shared memory through a device function."""
    schedule = emitted_schedule(info, plan)
    model = render_model(info, plan, schedule, stem, smem_wrap=smem_wrap, max_registers=regs)
    return Kernels(schedule, model, render_kernel(model), render_header(model))


def translate(path: str, options: Options = Options(), text: str | None = None
              ) -> Translation:
    """Every stage for the C file ``path`` (or the source ``text``, named ``path``)."""
    program, info = load(path, options.defines, options.include_dirs, text)
    plan = plan_for(info, options)
    stem = Path(path).stem
    kernels = generate(info, plan, stem, smem_wrap=options.smem_wrap, regs=options.regs)
    original = read_source_text(path) if text is None else text
    host = render_host(kernels.model, info, original, kernels.model.header,
                       baseline=options.baseline)
    outputs = {f"{stem}_host.cu": host, **kernels.files()}
    return Translation(path, options, program, info, plan, kernels.schedule, kernels.model,
                       outputs)


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
