"""The kernels of a plan: the schedule an5dpy emits, its render model and the kernel texts.

Below :mod:`an5dpy.driver` (which re-exports these names) so that the CUDA runtime builds
exactly what ``an5d-translate`` writes without importing the driver, whose plan choice
consults the performance model (and through it the GPU descriptions and the runtime).
"""

from __future__ import annotations

from dataclasses import dataclass

from an5dpy.blocking.build import build_schedule, static_head_degrees
from an5dpy.blocking.ops import Schedule
from an5dpy.blocking.plan import BlockingPlan
from an5dpy.cuda.render import render_header, render_kernel
from an5dpy.cuda.render_model import RenderModel, render_model
from an5dpy.ir import StencilInfo


def emitted_schedule(info: StencilInfo, plan: BlockingPlan,
                     degrees: tuple[int, ...] | None = None) -> Schedule:
    """The schedule of the code an5dpy emits: unrolled heads only where they pay
    (remainder degrees and very large expressions get compact kernels); the kernels of
    ``degrees`` alone where given (a timing build: :func:`an5dpy.perf.tune.timing_degrees`),
    each the same kernel as in the full schedule."""
    return build_schedule(plan, degrees,
                          static_heads=static_head_degrees(plan, info.flops_per_cell))


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
             regs: int | None = None, plan_note: str = "",
             degrees: tuple[int, ...] | None = None) -> Kernels:
    """Schedule and print the kernels of ``plan``; ``regs``: a register budget per thread
    (launch bounds), ``smem_wrap``: read shared memory through a device function,
    ``plan_note``: a line for the files' header comment saying how the plan was chosen
    (empty where the user gave it), ``degrees``: the kernels' degrees where not every
    degree a launch plan can need (:func:`emitted_schedule`)."""
    schedule = emitted_schedule(info, plan, degrees)
    model = render_model(info, plan, schedule, stem, smem_wrap=smem_wrap, max_registers=regs,
                         plan_note=plan_note)
    return Kernels(schedule, model, render_kernel(model), render_header(model))
