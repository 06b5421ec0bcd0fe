"""Printing the render model with jinja2: the kernel file, its header, and the user's host
file with the scop replaced by the launch code."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from an5dpy.blocking.plan import BlockingPlan
from an5dpy.cuda.macros import CoefLayout, coef_layouts
from an5dpy.cuda.render_model import RenderModel
from an5dpy.errors import OptionError
from an5dpy.ir import StencilInfo


def template_dir() -> Path:
    """The templates: those of the source tree this module is in (the repository's
    top-level ``templates/``), else the ``an5dpy.templates`` package of an installed wheel
    (the same folder, mapped by pyproject.toml). The source tree comes first so that a
    checkout run from its own folder renders its own templates, not an installed copy's."""
    source_tree = Path(__file__).resolve().parents[2] / "templates"
    if (source_tree / "kernel.cu.j2").is_file():
        return source_tree
    from importlib.resources import files
    return Path(str(files("an5dpy.templates")))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)


def render_kernel(model: RenderModel) -> str:
    return environment().get_template("kernel.cu.j2").render(m=model)


def render_header(model: RenderModel) -> str:
    return environment().get_template("kernel.hu.j2").render(m=model)


@dataclass(frozen=True)
class HostCoef:
    """A read-only array in the host region: the user's array (``source``: its name, a
    pointer or an array that decays to one), the device copy (``pointer``, as the launches
    take it) and its element count (``count``, a C expression, kept in ``count_name``),
    and the extents the kernels take as parameters (``(name, C expression)``)."""

    source: str
    elem_type: str
    pointer: str
    count_name: str
    count: str
    extents: tuple[tuple[str, str], ...]
    #: several GPUs: elements per index of the outermost extent (a C expression), and
    #: whether that index follows the streaming dimension (each GPU's copy is shifted)
    inner: str = "1"
    shifted: bool = False


@dataclass(frozen=True)
class HostField:
    """A field of a time step of several statements in the host region: the user's array
    (``source``, a C expression), whether it is updated in place (one buffer, which the
    device doubles), and the first of its two device buffers."""

    source: str
    in_place: bool
    first_buffer: int


@dataclass(frozen=True)
class HostCall:
    """What the host region needs from the user's program, as C expressions."""

    array: str
    extents: tuple[str, ...]
    lowers: tuple[str, ...]
    uppers: tuple[str, ...]
    steps: str
    start_buffer: str
    read_only: tuple[HostCoef, ...] = ()
    fields: tuple[HostField, ...] = ()  # a time step of several statements: every field

    @property
    def copies_last_level(self) -> bool:
        """Some field is updated in place: the host copies back its last level's buffer."""
        return any(f.in_place for f in self.fields)


def host_coef(layout: CoefLayout, shifted: bool = False) -> HostCoef:
    """The host region's copy of a read-only array: as many elements as the product of
    its extents, written in the user's names (``shifted``: on several GPUs, its outermost
    index follows the streaming dimension)."""
    count = " * ".join(f"(size_t)({e.c_str()})" for e in layout.extents)
    inner = " * ".join(f"(size_t)({e.c_str()})" for e in layout.extents[1:]) or "1"
    return HostCoef(source=layout.name, elem_type=layout.elem_type, pointer=layout.pointer,
                    count_name=f"an5d_coefsize_{layout.name}", count=count,
                    extents=tuple((layout.extent_param(k), layout.extents[k].c_str())
                                  for k in layout.extent_params), inner=inner, shifted=shifted)


def host_call(info: StencilInfo) -> HostCall:
    t = info.time
    return HostCall(
        array=info.array,
        extents=tuple(f"({d.extent.c_str()})" for d in info.dims),
        lowers=tuple(f"({d.lower.c_str()})" for d in info.dims),
        uppers=tuple(f"({d.upper.c_str()})" for d in info.dims),
        steps=f"(({t.upper.c_str()}) - ({t.lower.c_str()}) + 1)",
        start_buffer=f"((({t.lower.c_str()}) + ({t.read_shift})) % {t.buffers} + {t.buffers})"
                     f" % {t.buffers}",
        read_only=tuple(host_coef(c, any(read[0].dim == 0 for read in coef.reads))
                        for c, coef in zip(coef_layouts(info), info.coefficients)),
        fields=tuple(HostField(f.name, f.in_place, 2 * k) for k, f in enumerate(info.fields)))


@dataclass(frozen=True)
class HostMulti:
    """What the host region of several GPUs prints (``an5d-translate --gpus N``): the GPUs
    by default, the slabs' halos (:func:`an5dpy.blocking.slabs.slab_halo`) and the element
    type as NCCL and MPI name it."""

    gpus: int
    below: int
    above: int
    edge: int
    widest: int
    nccl_type: str
    mpi_type: str


#: Lines after the kernels' header in a host file of several GPUs: NCCL, MPI where built
#: with -DAN5D_MPI (one process per GPU), and NCCL's error check.
MULTI_PRELUDE = """#include <stdlib.h>
#include <nccl.h>
#ifdef AN5D_MPI
#include <mpi.h>
/* registered at exit where the host region started MPI: the C program knows nothing of
   MPI, and mpirun takes a rank that ends without MPI_Finalize for a failed one */
static void an5d_mpi_finalize(void) {
  int an5d_done = 0;
  MPI_Finalized(&an5d_done);
  if (!an5d_done) MPI_Finalize();
}
#endif
#define AN5D_NCCL_CHECK(call) do { \\
    ncclResult_t an5d_nccl_err_ = (call); \\
    if (an5d_nccl_err_ != ncclSuccess) { \\
      fprintf(stderr, "%s:%d: NCCL error: %s\\n", __FILE__, __LINE__, ncclGetErrorString(an5d_nccl_err_)); \\
      exit(EXIT_FAILURE); \\
    } \\
  } while (0)
"""


def host_multi(info: StencilInfo, plan: BlockingPlan, gpus: int) -> HostMulti:
    """The several-GPU host region's numbers; refuses what it does not run (yet): the
    Python runner (:mod:`an5dpy.cuda.multi_gpu`) runs every form."""
    from an5dpy.blocking.slabs import slab_halo
    if gpus < 1:
        raise OptionError([("gpus", gpus)], "need at least one GPU")
    if info.coupled or plan.levels.rotating:
        kind = "several statements per time step" if info.coupled else "rotating time levels"
        raise OptionError([("gpus", gpus)], f"the generated host code runs a program of {kind} "
                          "on one GPU only; Stencil.run(devices=...) of the Python API runs it "
                          "on several")
    for c in info.coefficients:
        if any(i.dim == 0 for read in c.reads for i in read[1:]):
            raise OptionError([("gpus", gpus)], f"read-only array '{c.name}' follows the "
                              "streaming dimension with an inner index; the generated host "
                              "code of several GPUs shifts only an outermost one")
    halo = slab_halo(info, plan)
    double = plan.dtype == "double"
    return HostMulti(gpus, halo.below, halo.above, halo.edge, halo.widest,
                     "ncclDouble" if double else "ncclFloat",
                     "MPI_DOUBLE" if double else "MPI_FLOAT")


def render_host_region(model: RenderModel, info: StencilInfo, baseline: bool = False,
                       multi: HostMulti | None = None) -> str:
    call = host_call(info)
    if multi is not None:
        return environment().get_template("host_multi.cu.j2").render(m=model, call=call,
                                                                     g=multi)
    return environment().get_template("host_region.cu.j2").render(
        m=model, call=call, baseline=baseline)


def render_host(model: RenderModel, info: StencilInfo, original: str, header_name: str,
                baseline: bool = False, multi: HostMulti | None = None) -> str:
    """The user's file with only the scop region replaced (everything else verbatim);
    ``multi``: the region drives several GPUs (NCCL, and MPI with ``-DAN5D_MPI``).

    The -D definitions the code was generated with are repeated at the top (unless the
    build defines them too), so the host file compiles to what the kernels assume.
    """
    start, end = info.program.scop.original_span
    region = render_host_region(model, info, baseline, multi)
    before, after = original[:start], original[end:]
    line_after = before.count("\n") + original[start:end].count("\n") + 1
    name = model.source_name.replace("\\", "\\\\").replace('"', '\\"')
    defines = "".join(f"#ifndef {k}\n#define {k} {'1' if v is None else v}\n#endif\n"
                      for k, v in info.program.defines)
    guard = ""
    if has_vla_parameter(info.program):
        host = f"{model.stem}_host.cu"
        guard = ("#ifdef __cplusplus\n"
                 f'#error "{host} keeps your C function, whose variable-length array parameter '
                 f'C++ rejects: compile this file as C (nvcc -x c -c {host})"\n#endif\n')
    prelude = MULTI_PRELUDE if multi is not None else ""
    return (f'{guard}#include "{header_name}"\n{prelude}{defines}#line 1 "{name}"\n' + before
            + region
            + f'#line {line_after} "{name}"\n' + after)


def has_vla_parameter(program) -> bool:
    """Whether a function of the user's file takes an array whose extents are not
    constants (``float A[2][n][n]``): valid C, but nvcc compiles .cu files as C++, which
    has no variable-length arrays, so the host file must be compiled as C."""
    return any(a.form == "parameter" and not all(e.is_constant for e in a.extents)
               for a in program.arrays)
