"""The Python API: compile a C stencil once, then run it on device arrays, simulate it on
the CPU, check it against gcc and time it.

    import cupy, an5dpy
    stencil = an5dpy.compile("c_inputs/j2d5pt.c", dtype="float", bt=4, bs=128, sl=128)
    grid = cupy.random.random((2, 4098, 4098), dtype=cupy.float32)
    result = stencil.run(grid, steps=100)   # in place, on the device; compsize from the shape

:func:`compile` goes through :mod:`an5dpy.driver` as ``an5d-translate`` does (same
:class:`~an5dpy.driver.Options`, same plan, same files). A :class:`Stencil` keeps every
stage's value and runs:

* :meth:`Stencil.run` -- the generated kernels on cupy arrays, in place (no host copies),
  built once per process and kept on disk (:func:`an5dpy.cuda.runtime.cached_runner`);
* :meth:`Stencil.simulate` -- the emitted schedule on numpy arrays (:mod:`an5dpy.check.simulate`);
* :meth:`Stencil.reference` -- the user's loop nest compiled by gcc (:mod:`an5dpy.check.reference`);
* :meth:`Stencil.bench` -- timing on the GPU (:mod:`an5dpy.perf.bench`).

Arrays are laid out as the C program's: the time buffers first, C order, shape
``(2, *extents)`` (``(k, *extents)`` for an array rotating through ``k`` buffers); or a
mapping ``{array name: array}``. A program that reads read-only
arrays (``f[i][j]`` beside the grid) takes them by name, in the mapping
(``{"A": grid, "f": f}``) or as keyword arguments (``stencil.run(grid, steps=10, f=f)``),
shaped as declared (``double f[n][n]``: ``(n, n)``), of the declared element type, on the
device for :meth:`Stencil.run` and in numpy for the CPU methods. Scalar parameters are given by
name; those that the array's shape or ``steps`` determine (``n`` in ``float A[2][n][n]``,
``compsize`` in the benchmarks' ``dimsize = compsize + 2``, ``timestep`` of the time loop)
may be left out (:func:`bind`). Each method returns the buffer where the C program leaves
its result (a view of the array given).

Errors are :class:`~an5dpy.errors.UnsupportedInput` (the C source; ``.coord`` is its
position) and :class:`~an5dpy.errors.UsageError` (the arguments), worded as a Python caller
gave them (``bt=0``, never a command-line flag).
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, Union

from an5dpy.errors import OptionError, UsageError

if TYPE_CHECKING:
    from an5dpy.blocking.plan import BlockingPlan
    from an5dpy.cuda.runtime import CupyRunner
    from an5dpy.driver import Translation
    from an5dpy.ir import Affine, StencilInfo, StencilProgram
    from an5dpy.perf.bench import BenchResult

PathOrSource = Union[str, "os.PathLike[str]"]
#: What a parameter value may be: a number of the C type (``int``, ``float``, numpy scalars).
Value = Union[int, float]
Arrays = Union[Any, Mapping[str, Any]]

#: The preprocessor macro the benchmarks' element type comes from (``dtype=``).
DTYPE_MACRO = "SB_TYPE"
#: The name source text is shown under when no ``name`` is given.
DEFAULT_SOURCE_NAME = "stencil.c"


# --------------------------------------------------------------------------- compile


def compile(source: PathOrSource, *, dtype: str | None = None,
            defines: Mapping[str, object] | Iterable[tuple[str, object]] | None = None,
            include_dirs: Sequence[str | os.PathLike] | None = None,
            bt: int | None = None, bs: int | str | Sequence[int] | None = None,
            sl: int | None = None, opt: str | None = None, regs: int | None = None,
            coarsen: int | None = None, barriers: str | None = None,
            idle: str | None = None, halo: str | None = None, gpu: str | None = None,
            exact: bool = False,
            smem_wrap: bool = True, name: str | None = None) -> "Stencil":
    """Translate a C stencil into CUDA (as ``an5d-translate``) and return it ready to run.

    ``source``: a path (``os.PathLike``, or a ``str`` naming a file) or C source text (a
    ``str`` holding a newline or ``#pragma scop``; ``name`` is the file name its errors and
    generated files use, ``stencil.c`` by default, and ``#include "..."`` searches
    ``include_dirs`` and ``name``'s directory). ``dtype``: ``"float"`` or ``"double"``,
    defines ``SB_TYPE`` (the benchmarks' element type macro) and must be the array's type.
    ``defines``: preprocessor definitions, ``{"N": 64, "FLAG": None}`` or pairs.
    ``bt``, ``bs``, ``sl``, ``opt``: the blocking plan; None leaves each to the tool's
    default (as omitting the flag does on the command line; ``gpu`` names the GPU a
    chosen plan is for, where the driver chooses plans for GPUs). ``bs`` is an int (2D),
    a tuple in array order (``(16, 64)``: 16 threads along the second-last dimension, 64
    along the contiguous one) or the command line's string, contiguous dimension first
    (``"64x16"``, the same block). ``regs``: a register budget per thread. ``coarsen``:
    cells per thread along the outermost in-plane dimension (1, 2, 4, 8). ``barriers``:
    ``"level"`` (a barrier per level op), ``"step"`` (one per streaming step, mode
    nondiag) or ``"shuffle"`` (2D nondiag, a block of one warp: ``bs`` = 32 x ``coarsen``,
    row neighbours by warp shuffles, no barrier). ``idle``: ``"skip"`` (warps with no cell
    in a level's window branch around its evaluation) or ``"compute"`` (no branch, every
    warp evaluates every level). ``halo``: ``"threads"`` (a thread per cell of the block's
    halo) or ``"loaded"`` (bT 1, 3D, mode nondiag or assoc: the computing threads load the
    halo, every lane computes). ``exact``:
    :meth:`Stencil.run` and :meth:`Stencil.bench` build without fast math and with
    ``-fmad=false`` (results bit-identical to gcc in modes nondiag and none).
    """
    from an5dpy import driver

    kind, value = _source_kind(source)
    all_defines = _defines(defines, dtype)
    # a None is the tool's default, as for every field of driver.Options
    options = driver.Options(bt=_integer_or_none("bt", bt), bs=_block_size_text(bs),
                             sl=_integer_or_none("sl", sl), opt=_mode_text(opt),
                             regs=_register_budget(regs),
                             coarsen=_integer_or_none("coarsen", coarsen),
                             barriers=barriers, idle=idle, halo=halo, defines=all_defines,
                             include_dirs=tuple(os.fspath(d) for d in include_dirs or ()),
                             smem_wrap=bool(smem_wrap), gpu=gpu)
    if kind == "path":
        translation = driver.translate(value, options)
        text = _read_text(value)
    else:
        translation = driver.translate(name or DEFAULT_SOURCE_NAME, options, text=value)
        text = value
    if dtype is not None and translation.info.dtype != dtype:
        raise OptionError([("dtype", dtype)],
                          f"'{translation.info.array}' is declared {translation.info.dtype} "
                          f"(dtype only sets the {DTYPE_MACRO} macro)")
    return Stencil(translation, text, exact=bool(exact))


def _source_kind(source: PathOrSource) -> tuple[str, str]:
    """("path", path) or ("text", C source). A str holding a newline or ``#pragma scop``
    is source (no sensible file name holds either); any other str, and every
    ``os.PathLike``, is a path."""
    if isinstance(source, os.PathLike):
        return "path", os.fspath(source)
    if not isinstance(source, str):
        raise UsageError(f"compile() takes a path or C source text, not "
                         f"{type(source).__name__}")
    if "\n" in source or "#pragma scop" in source:
        return "text", source
    return "path", source


def _read_text(path: str) -> str:
    from an5dpy.frontend import read_source_text
    return read_source_text(path)


def _defines(defines, dtype: str | None) -> tuple[tuple[str, str | None], ...]:
    """``defines`` as the driver's pairs, ``dtype`` as ``SB_TYPE`` (refused where it
    contradicts a definition of the same macro)."""
    if defines is None:
        pairs: list[tuple[str, object]] = []
    elif isinstance(defines, Mapping):
        pairs = list(defines.items())
    else:
        pairs = [tuple(d) for d in defines]
    out: list[tuple[str, str | None]] = []
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], str) or not pair[0].isidentifier():
            raise UsageError(f"defines: {pair!r} is not a (NAME, VALUE) pair with a C "
                             "identifier as NAME")
        out.append((pair[0], None if pair[1] is None else str(pair[1])))
    if dtype is not None:
        if dtype not in ("float", "double"):
            raise OptionError([("dtype", dtype)], "choose float or double")
        for macro, value in out:
            if macro == DTYPE_MACRO and value != dtype:
                raise OptionError([("dtype", dtype)],
                                  f"contradicts defines {DTYPE_MACRO}={value!r}")
        out.append((DTYPE_MACRO, dtype))
    return tuple(out)


def _integer_or_none(name: str, value) -> int | None:
    """An integer option (its range is the plan's to check, :func:`an5dpy.blocking.plan.make_plan`)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError([(name, value)], "expected an integer")
    return int(value)


def _register_budget(regs) -> int | None:
    """``regs`` checked as ``--regs`` is (:func:`an5dpy.blocking.plan.register_budget_problem`)."""
    from an5dpy.blocking.plan import register_budget_problem
    value = _integer_or_none("regs", regs)
    problem = None if value is None else register_budget_problem(value)
    if problem:
        raise OptionError([("regs", value)], problem)
    return value


def _block_size_text(bs) -> str | None:
    """``bs`` as the driver's string (contiguous dimension first, ``"64x16"``)."""
    from an5dpy.blocking.plan import format_block_size
    if bs is None or isinstance(bs, str):
        return bs
    if isinstance(bs, numbers.Integral) and not isinstance(bs, bool):
        return str(int(bs))
    try:
        sizes = tuple(bs)
    except TypeError:
        sizes = ()
    if not sizes or not all(isinstance(b, numbers.Integral) and not isinstance(b, bool)
                            for b in sizes):
        raise OptionError([("bs", bs)], "expected an int, a tuple of ints in array order or "
                          "a string such as '64x16' (contiguous dimension first)")
    return format_block_size(tuple(int(b) for b in sizes))


def _mode_text(opt) -> str | None:
    from an5dpy.blocking.plan import Mode
    if opt is None or isinstance(opt, str):
        return opt
    if isinstance(opt, Mode):
        return opt.value
    raise OptionError([("opt", opt)], "choose auto, nondiag, assoc or none")


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Binding:
    """What a call runs on: the stencil array (shape ``(2, *extents)``), every scop
    parameter's value, and the buffer holding the result afterwards."""

    grid: Any
    env: dict[str, int | float]
    result_buffer: int
    read_only: tuple = ()  # the read-only arrays, in ``info.coefficients`` order


@dataclass(frozen=True)
class _Equation:
    """``lhs == rhs`` over the integer parameters: a definition of the program
    (``dimsize - (compsize + 2) == 0``), an extent of the array against its shape, or the
    time loop's trip count against ``steps``."""

    kind: str  # "definition" | "extent" | "steps"
    lhs: "Affine"
    rhs: int
    label: str  # how the caller knows it: "dimsize = compsize + 2", "extent 1 (dimsize)"

    def holds(self, values: Mapping[str, int]) -> bool:
        got = self.lhs.evaluate(values)
        return got == self.rhs or (self.kind == "steps" and self.rhs == 0 and got <= 0)


def bind(info: "StencilInfo", grid_shape: tuple[int, ...], steps: int | None,
         given: Mapping[str, object]) -> dict[str, int | float]:
    """Every parameter of the program: ``given`` by name, the program's constants, and
    those the grid's extents, ``steps`` and the program's definitions determine (an
    extent, a step count or a definition with one unknown parameter, solved in turn).
    Refuses unknown names, values that contradict what the shape, ``steps`` or the
    program say, and parameters nothing determines."""
    from an5dpy.check.reference import resolve_params
    from an5dpy.ir import Affine, is_floating

    program = info.program
    params = {p.name: p for p in program.params}
    unknown = [n for n in given if n not in params]
    if unknown:
        raise UsageError(f"unknown parameter '{unknown[0]}' (the program's parameters are: "
                         f"{', '.join(params) or 'none'})")
    values: dict[str, object] = dict(given)
    for p in program.params:
        if p.value is not None:
            if p.name in given and given[p.name] != p.value:
                raise UsageError(f"parameter '{p.name}' is a constant ({p.value}) in the "
                                 f"program; {p.name}={given[p.name]!r} contradicts it")
            values[p.name] = p.value
    integers: dict[str, int] = {}
    for n, v in values.items():
        if is_floating(params[n].ctype):
            continue
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise UsageError(f"parameter '{n}' is an {params[n].ctype}; {v!r} is not an "
                             "integer")
        integers[n] = int(v)

    equations = [_Equation("definition", Affine.var(p.name) - p.definition, 0,
                           f"{p.name} = {p.definition}")
                 for p in program.params if p.definition is not None]
    equations += [_Equation("extent", d.extent, size, f"extent {k + 1} ({d.extent})")
                  for k, (d, size) in enumerate(zip(info.dims, grid_shape[1:]))]
    if steps is not None:
        trip = info.time.upper - info.time.lower + 1
        equations.append(_Equation("steps", trip, steps, f"the step count ({trip})"))
    _solve(equations, integers)  # definitions first: given values propagate before shapes
    for eq in equations:
        unknown = [n for n in eq.lhs.variables if n not in integers]
        if not unknown and not eq.holds(integers):
            raise UsageError(_contradiction(eq, integers, info, grid_shape, steps))
        if len(unknown) == 1:  # _solve found no integer solution
            raise UsageError(_contradiction(eq, integers, info, grid_shape, steps, unknown[0]))
    for n, v in integers.items():
        values[n] = v
    missing = [p for p in program.params if p.name not in values]
    if missing:
        named = ", ".join(f"{p.name} ({p.ctype})" for p in missing)
        hint = ""
        if steps is None and any(n not in values for n in
                                 info.time.lower.variables + info.time.upper.variables):
            hint = " (steps=N sets the time loop's)"
        raise UsageError(f"missing value for parameter{'s' if len(missing) > 1 else ''} "
                         f"{named}: pass {missing[0].name}=VALUE{hint}")
    return resolve_params(program, values)


def _solve(equations: Sequence[_Equation], values: dict[str, int]) -> None:
    """Assign each parameter that an equation with one unknown determines, in the order
    given, until none does (definitions chain: dimsize from an extent, then compsize)."""
    changed = True
    while changed:
        changed = False
        for eq in equations:
            unknown = [n for n in eq.lhs.variables if n not in values]
            if len(unknown) != 1:
                continue
            name = unknown[0]
            rest = eq.lhs.evaluate({**values, name: 0})
            coeff = eq.lhs.coeff(name)
            if (eq.rhs - rest) % coeff == 0:
                values[name] = (eq.rhs - rest) // coeff
                changed = True


def _contradiction(eq: _Equation, values: Mapping[str, int], info: "StencilInfo",
                   grid_shape: tuple[int, ...], steps: int | None,
                   unsolved: str | None = None) -> str:
    """Why ``eq`` fails: it does not hold for ``values``, or no integer ``unsolved`` makes
    it hold."""
    known = ", ".join(f"{n}={values[n]}" for n in eq.lhs.variables if n in values)
    if eq.kind == "definition":
        name = eq.label.split(" = ")[0]
        if unsolved is not None:
            return (f"the program defines {eq.label}: no integer {unsolved} gives it with "
                    f"{known}")
        defined = values[name] - eq.lhs.evaluate(values)
        return f"the program defines {eq.label}, which is {defined}, but {name}={values[name]}"
    if eq.kind == "steps":
        if unsolved is not None:
            return f"steps={steps}: no integer {unsolved} gives {eq.label} = {steps}"
        return (f"steps={steps} contradicts the program: {eq.label} is "
                f"{eq.lhs.evaluate(values)} with {known}")
    decl = f"{info.array}[{info.time.buffers}]" + "".join(f"[{d.extent}]" for d in info.dims)
    if unsolved is not None:
        return (f"the array's shape {grid_shape} does not fit {decl}: no integer {unsolved} "
                f"gives {eq.label} = {eq.rhs}")
    return (f"the array's shape {grid_shape} does not fit {decl}: {eq.label} is "
            f"{eq.lhs.evaluate(values)} with {known}, not {eq.rhs}")


# --------------------------------------------------------------------------- the stencil


@dataclass(frozen=True, eq=False)
class Stencil:
    """A compiled stencil: every stage's value (``translation``), the C source it came
    from, and the build its GPU runs use (``exact``: no fast math, ``-fmad=false``)."""

    translation: "Translation"
    source: str = field(repr=False)
    exact: bool = False

    # ------------------------------------------------------------------ what it is

    @property
    def name(self) -> str:
        """The source's file name (generated files are named after its stem)."""
        return self.translation.path

    @property
    def program(self) -> "StencilProgram":
        return self.translation.program

    @property
    def info(self) -> "StencilInfo":
        """The analysis: array, dtype, dimensions, radius, shape, modes, FLOP/cell."""
        return self.translation.info

    @property
    def plan(self) -> "BlockingPlan":
        """The blocking plan (bt, bs in array order, sl, mode)."""
        return self.translation.plan

    @property
    def dtype(self) -> str:
        return self.info.dtype

    @property
    def params(self) -> tuple[str, ...]:
        """The scop's parameters, in order of first use."""
        return tuple(p.name for p in self.program.params)

    @property
    def files(self) -> dict[str, str]:
        """File name -> text of the generated files (``x_host.cu``, ``x_kernel.cu``,
        ``x_kernel.hu``); a copy."""
        return dict(self.translation.outputs)

    def write(self, directory: str | os.PathLike) -> list[Path]:
        """Write :attr:`files` into ``directory`` (created if needed), atomically: all of
        them or, on an error, none. Returns the paths written."""
        from an5dpy.driver import write_outputs
        return write_outputs(self.translation.outputs, directory)

    def __repr__(self) -> str:
        return f"<an5dpy.Stencil {self.name}: {self.plan.describe()}>"

    # ------------------------------------------------------------------ arguments

    def bind(self, arrays: Arrays, steps: int | None, params: Mapping[str, object],
             backend: str) -> Binding:
        """The stencil array and the read-only arrays of ``arrays`` and ``params`` checked
        for ``backend`` (``"cupy"`` or ``"numpy"``), and every parameter's value
        (:func:`bind`)."""
        from an5dpy.check.verify import result_buffer

        grid, read_only, params = self._arrays(arrays, params)
        grid = self._grid(grid, backend)
        if steps is not None and (isinstance(steps, bool) or not isinstance(
                steps, numbers.Integral) or steps < 0):
            raise UsageError(f"steps={steps!r}: expected an integer >= 0")
        env = bind(self.info, tuple(grid.shape), None if steps is None else int(steps),
                   params)
        return Binding(grid, env, result_buffer(self.info, env),
                       self._read_only(read_only, env, backend))

    def _arrays(self, arrays: Arrays, params: Mapping[str, object]
                ) -> tuple[Any, dict[str, Any], dict[str, object]]:
        """The stencil array, the read-only arrays by name (from the mapping ``arrays``
        and the keyword arguments ``params``) and the scalar parameters."""
        array = self.info.array
        names = [c.name for c in self.info.coefficients]
        read_only = {n: params[n] for n in names if n in params}
        scalars = {k: v for k, v in params.items() if k not in read_only}
        if not isinstance(arrays, Mapping):
            return arrays, read_only, scalars
        known = [array, *names]
        if array not in arrays or any(k not in known for k in arrays):
            expected = ", ".join(f"'{k}': ..." for k in known)
            what = ("the program's stencil array, then its read-only arrays" if names
                    else "the program's stencil array")
            raise UsageError(f"arrays: expected {{{expected}}} ({what}), got keys "
                             f"{sorted(map(str, arrays))}")
        twice = [k for k in arrays if k in read_only]
        if twice:
            raise UsageError(f"read-only array '{twice[0]}' is given twice (in the arrays "
                             "mapping and as a keyword argument)")
        read_only.update({k: v for k, v in arrays.items() if k != array})
        return arrays[array], read_only, scalars

    def _read_only(self, given: Mapping[str, Any], env: Mapping[str, int | float],
                   backend: str) -> tuple:
        """The read-only arrays in ``info.coefficients`` order, each checked: an array of
        ``backend``, C-contiguous, of the declared element type and shape
        (:func:`an5dpy.cuda.runtime.check_read_only`)."""
        from an5dpy.cuda.runtime import check_read_only
        for c in self.info.coefficients:
            if c.name not in given:
                decl = f"{c.elem_type} {c.name}" + "".join(f"[{e}]" for e in c.extents)
                raise UsageError(f"missing read-only array '{c.name}' ({decl}): pass "
                                 f"{c.name}=ARRAY, or put it in the arrays mapping")
        out = tuple(given[c.name] for c in self.info.coefficients)
        check_read_only(self.info, env, out, backend)
        return out

    def _grid(self, grid, backend: str):
        import numpy as np
        array = self.info.array
        if backend == "cupy":
            import cupy
            if not isinstance(grid, cupy.ndarray):
                raise UsageError(f"run() takes a cupy array, not {type(grid).__name__} "
                                 "(simulate() and reference() take numpy arrays)")
            if grid.device.id != cupy.cuda.Device().id:
                raise UsageError(f"the array is on device {grid.device.id}, the current "
                                 f"device is {cupy.cuda.Device().id}")
        else:
            if not isinstance(grid, np.ndarray):
                raise UsageError(f"simulate() and reference() take a numpy array, not "
                                 f"{type(grid).__name__}")
            if not grid.flags.writeable:
                raise UsageError("the array is read-only (the stencil updates it in place)")
        want = np.dtype(_NUMPY_NAMES[self.dtype])
        ndim = 1 + self.info.ndim
        buffers = self.info.time.buffers
        if grid.ndim != ndim or grid.shape[0] != buffers:
            extents = "][".join(str(d.extent) for d in self.info.dims)
            raise UsageError(f"the array has shape {tuple(grid.shape)}; '{array}' is "
                             f"{array}[{buffers}][{extents}] ({buffers} time buffers, then "
                             f"{self.info.ndim} extents)")
        if grid.dtype != want:
            raise UsageError(f"the array has dtype {grid.dtype}; '{array}' holds {self.dtype} "
                             f"({want})")
        if not grid.flags.c_contiguous:
            raise UsageError("the array must be C-contiguous (laid out as the C program's)")
        return grid

    # ------------------------------------------------------------------ running

    def run(self, arrays: Arrays, steps: int | None = None, *,
            devices: Sequence[int] | None = None, overlap: bool | None = None,
            **params: Value):
        """Advance ``arrays`` (a cupy array of shape ``(2, *extents)``, or
        ``{array name: cupy array}``) by the scop in place on the GPU, with the generated
        kernels; ``steps`` time steps, or as ``params`` say. The read-only arrays the
        program reads are cupy arrays too, in the mapping or keyword arguments by name
        (``f=cupy.asarray(f_host)``). The data stays on the device
        (nothing is copied); the launches are queued on the current stream. Returns the
        buffer holding the result (a view of the array).

        ``devices=[0, 1, ..]``: on several GPUs (NCCL), the grid and the read-only arrays
        given as numpy arrays on the host, cut into slabs of planes along the streaming
        dimension, one per device, and gathered back in place when the run is done (fewer
        devices where the slabs would be thinner than the halo, said on stderr;
        :meth:`run_slabs` takes per-device cupy slabs instead). ``overlap``: whether the
        halo exchange runs while the next launch computes the planes that need no halo
        (True, False; None: where the performance model finds it faster,
        :meth:`overlaps`); the result is the same bits either way."""
        if devices is not None:
            return self._run_on_devices(arrays, steps, devices, overlap, params)
        if overlap is not None:
            raise UsageError("overlap= is for a run over several devices: give devices=")
        binding = self.bind(arrays, steps, params, "cupy")
        self.build().run(binding.grid, binding.env, binding.read_only)
        return binding.grid[binding.result_buffer]

    def _run_on_devices(self, arrays: Arrays, steps: int | None, devices: Sequence[int],
                        overlap: bool | None, params: Mapping[str, object]):
        binding = self.bind(arrays, steps, params, "numpy")
        runner = self.multi_gpu(devices, binding.env)
        binding.grid[...] = runner.run_host(
            binding.grid, binding.env, binding.read_only,
            overlap=self.overlaps(binding.env, runner.count, overlap))
        return binding.grid[binding.result_buffer]

    def overlaps(self, env: Mapping[str, int | float], devices: int,
                 overlap: bool | None = None) -> bool:
        """Whether a run over ``devices`` GPUs at the sizes and steps of ``env`` overlaps
        the halo exchange with the launches: ``overlap`` where given, else the choice of
        the model of several GPUs (:func:`an5dpy.perf.multi.predict_slabs`) for the GPU
        the plan was chosen for (``compile(gpu=...)``, a spec of ``an5d probe`` with its
        measured link included; else this machine's). Programs that cannot overlap
        (:func:`~an5dpy.blocking.slabs.can_overlap`) run without."""
        from an5dpy.blocking.slabs import can_overlap
        if overlap is not None:
            return bool(overlap)
        if devices < 2 or not can_overlap(self.info, self.plan):
            return False
        from an5dpy.perf.choice import target_gpu
        from an5dpy.perf.multi import predict_slabs
        gpu, _ = target_gpu(self.translation.options.gpu)
        choice = self.translation.choice
        try:
            return predict_slabs(self.info, self.plan, gpu, env, devices,
                                 choice.regs if choice else None).overlap
        except UsageError:  # slabs thinner than the halo: the runner uses fewer
            return False

    def decompose(self, grid_shape: Sequence[int], devices: Sequence[int], **params: Value):
        """The slabs of a grid of ``grid_shape`` on ``devices``
        (:class:`an5dpy.blocking.slabs.Decomposition`): slab g holds the planes
        ``slabs[g].held`` of the streaming dimension and owns ``slabs[g].owned``. Fewer
        slabs than devices where they would be thinner than the halo (said on stderr)."""
        from an5dpy.blocking.slabs import partition
        extent, halo, count = self._slab_count(grid_shape, len(devices), params, note=True)
        return partition(extent, count, halo)

    def _slab_count(self, grid_shape: Sequence[int], devices: int,
                    params: Mapping[str, object], note: bool):
        """The streaming dimension's extent, the halo and the slabs a grid of ``grid_shape``
        takes on ``devices`` GPUs (:func:`an5dpy.blocking.slabs.slab_count`; its note on
        stderr where ``note``). The step count does not matter: 0 where none is given."""
        import sys
        from an5dpy.blocking.plan import grid_extents
        from an5dpy.blocking.slabs import slab_count, slab_halo
        try:
            env = bind(self.info, tuple(grid_shape), None, params)
        except UsageError:
            env = bind(self.info, tuple(grid_shape), 0, params)
        extent, halo = grid_extents(self.info, env)[0], slab_halo(self.info, self.plan)
        count, text = slab_count(devices, extent, halo)
        if note and text:
            print(text, file=sys.stderr)
        return extent, halo, count

    def run_slabs(self, slabs: Sequence, grid_shape: Sequence[int], steps: int | None = None,
                  *, devices: Sequence[int], overlap: bool | None = None,
                  **params: Value) -> list:
        """Advance a grid of ``grid_shape`` held as per-device cupy slabs, in place (no
        host copy): ``slabs[g]`` on ``devices[g]``, of shape ``(k, planes, *extents[1:])``
        holding planes ``decompose(grid_shape, devices).slabs[g].held`` (only the owned
        planes, and the streaming boundary planes in the first and last slab, need the
        data: the halos are exchanged first). Read-only arrays are given whole, by name
        (numpy or cupy). ``overlap`` as :meth:`run` takes it. Returns each slab's buffer
        holding the result (views)."""
        from an5dpy.check.verify import result_buffer
        grid, read_only, scalars = self._arrays(slabs, params)
        env = bind(self.info, tuple(grid_shape), None if steps is None else int(steps),
                   scalars)
        ordered = self._read_only_any(read_only)
        _, _, count = self._slab_count(grid_shape, len(devices), scalars, note=False)
        if count != len(devices) or len(grid) != len(devices):
            raise UsageError(f"{len(grid)} slabs given for {len(devices)} devices; the grid "
                             f"takes at most {count} slabs (none thinner than the halo)")
        runner = self.multi_gpu(devices, env)
        runner.run(list(grid), env, ordered, overlap=self.overlaps(env, count, overlap))
        b = result_buffer(self.info, env)
        return [part[b] for part in grid]

    def _read_only_any(self, given: Mapping[str, Any]) -> tuple:
        for c in self.info.coefficients:
            if c.name not in given:
                raise UsageError(f"missing read-only array '{c.name}': pass {c.name}=ARRAY")
        return tuple(given[c.name] for c in self.info.coefficients)

    def multi_gpu(self, devices: Sequence[int], env: Mapping[str, int | float]):
        """The several-GPU runner of :meth:`run` (``devices``) for the sizes of ``env``:
        the module built once (:meth:`build`) and loaded on every device, NCCL
        communicators made once per process (:mod:`an5dpy.cuda.multi_gpu`). Uses fewer
        devices where the slabs would be thinner than the halo, saying so on stderr."""
        import sys
        from an5dpy.blocking.plan import grid_extents
        from an5dpy.blocking.slabs import slab_count, slab_halo
        from an5dpy.cuda.multi_gpu import check_devices, multi_gpu_runner
        devices = check_devices(devices)
        count, note = slab_count(len(devices), grid_extents(self.info, env)[0],
                                 slab_halo(self.info, self.plan))
        if note:
            print(note, file=sys.stderr)
        single = self.build()
        return multi_gpu_runner(self.info, self.plan, single.cubin, single.prefix,
                                single.signature, devices[:count])

    def simulate(self, arrays: Arrays, steps: int | None = None, **params: Value):
        """As :meth:`run`, on numpy arrays (read-only arrays too) with the CPU simulator of
        the emitted schedule (no GPU needed); in place. Returns the result buffer (a view)."""
        from an5dpy.check.simulate import simulate
        binding = self.bind(arrays, steps, params, "numpy")
        binding.grid[...] = simulate(self.info, self.plan, binding.grid, binding.env,
                                     self.translation.schedule, binding.read_only)
        return binding.grid[binding.result_buffer]

    def reference(self, arrays: Arrays, steps: int | None = None, **params: Value):
        """As :meth:`simulate`, with the C program's own loop nest compiled by gcc (the
        correctness oracle, without FMA contraction or fast math). Returns the result
        buffer (a view)."""
        from an5dpy.check.reference import build_reference
        binding = self.bind(arrays, steps, params, "numpy")
        build_reference(self.program).run(binding.grid, binding.env, binding.read_only)
        return binding.grid[binding.result_buffer]

    def bench(self, steps: int | None = None, *, repeats: int = 5, **params: Value
              ) -> "BenchResult":
        """Time :meth:`run` on the GPU on a random grid (CUDA events, one warm-up run,
        ``repeats`` timed runs): ``.seconds`` (the median), ``.gflops`` (interior cells x
        FLOP/cell x steps / time), ``.times``. Sizes come from ``params``; without any,
        a program with the benchmark harness' parameters runs at the paper's sizes (16384^2
        or 512^3 cells, 1000 steps, or ``steps``)."""
        from an5dpy.perf.bench import (HARNESS_SIZE, HARNESS_STEPS, PAPER_SIZE, PAPER_STEPS,
                                       BenchResult, device_grid, device_read_only_values,
                                       gflops, median, time_runs)
        names = set(self.params)
        given = dict(params)
        if {HARNESS_SIZE, HARNESS_STEPS} <= names:
            given.setdefault(HARNESS_SIZE, PAPER_SIZE[self.info.ndim])
            if steps is None:
                given.setdefault(HARNESS_STEPS, PAPER_STEPS)
        # no array: the extents from parameters
        env = bind(self.info, (self.info.time.buffers,), steps, given)
        runner = self.build()
        grid = device_grid(self.info, env, self.dtype)
        read_only = device_read_only_values(self.info, env)
        times = time_runs(lambda: runner.run(grid, env, read_only), repeats)
        kernels = runner.cubin.kernels("kernel")
        return BenchResult(self.plan.describe(), self.plan,
                           max((r.registers for r in kernels), default=None),
                           any(r.spills for r in kernels), times,
                           gflops(self.info, env, median(times)),
                           " ".join(self.build_options().flags()))

    # ------------------------------------------------------------------ the GPU module

    def build_options(self):
        """The nvcc options of :meth:`run`: the present GPU's architecture, fast math
        unless ``exact``."""
        from an5dpy.cuda.runtime import BuildOptions, device_arch
        return BuildOptions(arch=device_arch(), exact=self.exact)

    def build(self) -> "CupyRunner":
        """The kernels built for the present GPU and loaded (what :meth:`run` launches):
        kept in memory for this process and as a cubin in ``$AN5D_CACHE_DIR/modules``
        (default ``~/.cache/an5dpy/modules``), so nvcc runs once per kernel text, build
        flags, nvcc and generator version."""
        return self.load_module()[0]

    def load_module(self) -> tuple["CupyRunner", str]:
        """:meth:`build`, and where the module came from: ``"memory"``, ``"disk"`` or
        ``"built"`` (:func:`an5dpy.cuda.runtime.cached_runner`)."""
        from an5dpy.cuda.runtime import cached_runner
        from an5dpy.driver import Kernels
        t = self.translation
        options = self.build_options()
        kernels = Kernels(t.schedule, t.model, t.outputs[f"{t.model.stem}_kernel.cu"],
                          t.outputs[t.model.header])
        return cached_runner(self.info, self.plan, kernels, options,
                             self.module_key(options), module_cache_dir())

    def module_key(self, options) -> str:
        """The disk cache's key of the module built with ``options``: the source text,
        definitions, plan, register budget and generated kernels, the nvcc flags and
        version, and the generator's fingerprint."""
        from an5dpy.cuda.runtime import nvcc_version
        from an5dpy.perf.tune import generator_fingerprint
        from an5dpy.version import __version__
        t = self.translation
        parts = [self.source, list(map(list, t.options.defines)), t.plan.to_json(),
                 t.options.regs, t.options.smem_wrap, sorted(t.outputs.items()),
                 options.key(), nvcc_version(), generator_fingerprint(), __version__]
        return hashlib.sha256(json.dumps(parts, default=str).encode("utf-8", "surrogateescape")
                              ).hexdigest()


def module_cache_dir() -> Path:
    """Where built modules are kept (:mod:`an5dpy.cache`)."""
    from an5dpy.cache import cache_dir
    return cache_dir("modules")


_NUMPY_NAMES = {"float": "float32", "double": "float64"}
