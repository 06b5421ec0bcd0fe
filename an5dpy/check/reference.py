"""The gcc oracle: the user's own loop nest, compiled by the host C compiler.

Every backend is checked against this. The scop's preprocessed text is pasted verbatim into
a function that receives one buffer per field (all ``k`` time buffers of a time-buffered
field, ``k`` the modulus of its time subscripts; the one array of a field updated in
place), one per read-only array, and the parameters; gcc compiles it without FMA
contraction or fast-math, so each operation rounds exactly as C's abstract machine says.

    kernel = build_reference(program)
    params = resolve_params(program, {"compsize": "64", "timestep": "10"})
    kernel.run(grid, params)            # grid: numpy array of shape (k, *extents)
    kernel.run(grid, params, (f,))      # and the read-only arrays, in program.arrays order
    kernel.run((u, v), params)          # several fields: one array each, in program.fields
                                        # order, of the shapes kernel.field_shapes(params)
"""

from __future__ import annotations

import ctypes
import faulthandler
import hashlib
import math
import mmap
import numbers
import os
import signal
import subprocess
import tempfile
from typing import Mapping, Sequence

import numpy as np

from an5dpy import ir
from an5dpy.errors import InternalError, UndefinedBehaviour, UsageError
from an5dpy.frontend.literals import int_range, round_to_float32
from an5dpy.ir import Affine, StencilProgram

#: Flags that make gcc evaluate exactly what C says: no FMA contraction, no fast-math.
REFERENCE_CFLAGS = ("-O2", "-std=gnu99", "-ffp-contract=off", "-fno-fast-math", "-fPIC",
                    "-shared")

#: The ctypes type of each C scalar type the oracle's functions take or return.
CTYPES = {
    "float": ctypes.c_float, "double": ctypes.c_double,
    "int": ctypes.c_int, "unsigned int": ctypes.c_uint,
    "long": ctypes.c_long, "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong,
    "char": ctypes.c_byte,  # signed on x86-64
    "signed char": ctypes.c_byte, "unsigned char": ctypes.c_ubyte,
    "short": ctypes.c_short, "unsigned short": ctypes.c_ushort,
    "_Bool": ctypes.c_bool, "bool": ctypes.c_bool,
}

_NUMPY_DTYPES = {"float": np.float32, "double": np.float64}

_ENTRY = "an5d_reference"
_BUFFER = "an5d_buf"


# --------------------------------------------------------------------------- parameters


def _parse_value(param: ir.Param, text: str | int | float) -> int | float:
    """A -P value as the C parameter will hold it (floats rounded to the C type)."""
    name, ctype = param.name, param.ctype
    if ir.is_floating(ctype):
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise UsageError(f"parameter '{name}' is a {ctype}; '{text}' is not a number") \
                from None
        return round_to_float32(value) if ctype == "float" and math.isfinite(value) else value
    value: int | None = None
    if isinstance(text, numbers.Integral):  # int, bool, numpy integers
        value = int(text)
    elif isinstance(text, numbers.Real) and float(text).is_integer():
        value = int(text)
    elif isinstance(text, str):
        for base in (10, 0):
            try:
                value = int(text.strip(), base)
                break
            except ValueError:
                continue
    if value is None:
        raise UsageError(f"parameter '{name}' is an {ctype}; '{text}' is not an integer")
    low, high = int_range(ctype)
    if not low <= value <= high:
        raise UsageError(f"parameter '{name}' = {value} does not fit its C type {ctype} "
                         f"([{low}, {high}])")
    return value


def resolve_params(program: StencilProgram,
                   given: Mapping[str, str | int | float]) -> dict[str, int | float]:
    """Values of every parameter: the given ones (``-P``), declared constants, and those
    derived from definitions (``int dimsize = compsize + 2;``)."""
    known = {p.name: p for p in program.params}
    unknown = [name for name in given if name not in known]
    if unknown:
        names = ", ".join(known) or "none"
        raise UsageError(f"unknown parameter '{unknown[0]}' (the program's parameters are: "
                         f"{names})")
    values: dict[str, int | float] = {n: _parse_value(known[n], v) for n, v in given.items()}
    for p in program.params:
        if p.value is None:
            continue
        constant = _parse_value(p, p.value)
        if p.name in values and values[p.name] != constant:
            raise UsageError(f"parameter '{p.name}' is a constant ({constant}) in the program; "
                             f"-P {p.name}={given[p.name]} contradicts it")
        values[p.name] = constant
    _derive(program, values)
    given_derived = [p for p in program.params if p.definition is not None and p.name in given]
    for p in given_derived:
        expected = _evaluate_definition(p, values)
        if expected is not None and expected != values[p.name]:
            raise UsageError(f"parameter '{p.name}' is defined as {p.definition} = {expected} "
                             f"but -P gives {values[p.name]}")
    for p in program.params:
        if p.name not in values:
            missing = _first_missing(program, p, values)
            raise UsageError(f"missing value for parameter '{missing}' (give -P "
                             f"{missing}=VALUE; the program's parameters: "
                             f"{describe_params(program)})")
    return {p.name: values[p.name] for p in program.params}


def describe_params(program: StencilProgram) -> str:
    """The parameters ``-P`` may give, as an error lists them: ``timestep, dimsize =
    compsize + 2, compsize`` (constants need no value)."""
    parts = [p.name if p.definition is None else f"{p.name} = {p.definition}"
             for p in program.params if p.value is None]
    return ", ".join(parts) or "none"


def _evaluate_definition(param: ir.Param, values: Mapping[str, int | float]) -> int | None:
    try:
        return param.definition.evaluate({k: int(v) for k, v in values.items()
                                           if k in param.definition.variables})
    except KeyError:
        return None


def _derive(program: StencilProgram, values: dict[str, int | float]) -> None:
    """Fill ``values`` from the definitions, forwards (``dimsize = compsize + 2`` from
    compsize) and backwards (compsize from dimsize, where the definition leaves one
    variable unknown): any variable of a chain determines the others."""
    known = {p.name: p for p in program.params}
    while True:  # definitions may chain (n = m + 1, m = k * 2): iterate to a fixed point
        _derive_forwards(program, values)
        # backwards only where forwards is stuck, so given values meet their definitions
        # in resolve_params' check rather than in a solution
        for p in program.params:
            solved = _solve_definition(p, values) if p.definition is not None \
                and p.name in values else None
            if solved is not None and solved[0] in known:
                values[solved[0]] = _parse_value(known[solved[0]], solved[1])
                break
        else:
            return


def _derive_forwards(program: StencilProgram, values: dict[str, int | float]) -> None:
    changed = True
    while changed:
        changed = False
        for p in program.params:
            if p.name in values or p.definition is None:
                continue
            value = _evaluate_definition(p, values)
            if value is not None:
                values[p.name] = _parse_value(p, value)
                changed = True


def _solve_definition(param: ir.Param, values: Mapping[str, int | float]
                      ) -> tuple[str, int] | None:
    """The one unknown variable of ``param``'s definition, solved from ``param``'s value
    (``dimsize = compsize + 2`` with dimsize 45 gives compsize 43); None where more than one
    is unknown. A value the definition cannot produce (dimsize 45 of ``2 * n``) is refused."""
    definition = param.definition
    unknown = [n for n in definition.variables if n not in values]
    if len(unknown) != 1:
        return None
    name = unknown[0]
    rest = definition - Affine.var(name).scale(definition.coeff(name))
    remainder = int(values[param.name]) - rest.evaluate({k: int(values[k])
                                                         for k in rest.variables})
    value, leftover = divmod(remainder, definition.coeff(name))
    if leftover:
        raise UsageError(f"parameter '{param.name}' is defined as {definition} in the "
                         f"program; no integer {name} gives {values[param.name]}")
    return name, value


def _first_missing(program: StencilProgram, param: ir.Param,
                   values: Mapping[str, int | float], seen: frozenset[str] = frozenset()) -> str:
    """The parameter to ask for: ``param`` itself, or what its definition needs."""
    if param.definition is None or param.name in seen:
        return param.name
    known = {p.name: p for p in program.params}
    for name in param.definition.variables:
        if name not in values:
            if name not in known:
                return name
            return _first_missing(program, known[name], values, seen | {param.name})
    return param.name


# --------------------------------------------------------------------------- C source


def _field_buffer(k: int) -> str:
    """The parameter of field ``k`` (``program.fields`` order)."""
    return _BUFFER if k == 0 else f"{_BUFFER}{k}"


def _read_only_buffer(k: int) -> str:
    return f"an5d_ro{k}"


def _pointer_declaration(array: ir.ArrayDecl, inner: tuple[Affine, ...], buffer: str) -> str:
    """``T (*name)[e1][e2] = (T (*)[e1][e2]) buffer;`` (``T *name = (T *) buffer;`` without
    inner extents): every declaration form of the user's file reads the same through it."""
    dims = "".join(f"[{extent.c_str()}]" for extent in inner)
    if not dims:
        return f"  {array.elem_type} *{array.name} = ({array.elem_type} *){buffer};"
    return (f"  {array.elem_type} (*{array.name}){dims} = "
            f"({array.elem_type} (*){dims}){buffer};")


def _field_declaration(array: ir.ArrayDecl, buffer: str) -> str:
    """A time-buffered field points to its spatial arrays (``A[(t+1)%2][i][j]``), one
    updated in place to its rows (``ey[i][j]``), as a read-only array does."""
    inner = array.extents[1:] if array.in_place else array.extents
    return _pointer_declaration(array, inner, buffer)


def _read_only_arrays(program: StencilProgram) -> tuple[ir.ArrayDecl, ...]:
    """The read-only arrays, in ``program.arrays`` order (after the fields)."""
    return tuple(a for a in program.arrays if a.read_only)


def _all_loops(program: StencilProgram) -> tuple[ir.Loop, ...]:
    """The time loop and every nest's loops, in source order."""
    return (program.time_loop,) + tuple(loop for nest in program.nests for loop in nest.loops)


def reference_source(program: StencilProgram) -> str:
    """The C file that wraps the scop: one function taking a buffer per field (in
    ``program.fields`` order), one per read-only array (in ``program.arrays`` order) and
    the parameters."""
    fields = program.fields
    read_only = _read_only_arrays(program)
    buffers = "".join(f", void *{_field_buffer(k)}" for k in range(1, len(fields))) \
        + "".join(f", void *{_read_only_buffer(k)}" for k in range(len(read_only)))
    params = "".join(f", {p.ctype} {p.name}" for p in program.params)
    # a variable that some loop declares in its header and another does not is declared
    # here too: the header's declaration shadows it
    undeclared = list(dict.fromkeys(loop.var for loop in _all_loops(program)
                                    if not loop.declared_in_init))
    lines = [
        "#include <math.h>",
        "#include <stdbool.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <sys/types.h>",
        "",
        f"void {_ENTRY}(void *{_field_buffer(0)}{buffers}{params})",
        "{",
        *(_field_declaration(a, _field_buffer(k)) for k, a in enumerate(fields)),
        *(_pointer_declaration(a, a.extents[1:], _read_only_buffer(k))
          for k, a in enumerate(read_only)),
    ]
    if undeclared:
        lines.append(f"  int {', '.join(undeclared)};")
    lines.append(f"#line {program.scop.pragma_start.line + 1} "
                 f"\"{_c_string(program.scop.pragma_start.file)}\"")
    lines.append(program.scop.preprocessed_text.rstrip("\n"))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


# --------------------------------------------------------------------------- the compiler


def compile_library(source: str, directory: str, name: str, what: str, cc: str = "gcc") -> str:
    """``source`` compiled by ``cc`` with the oracle's flags (and libm) into the shared
    library ``directory/NAME.so``; its path. Everything an5dpy compiles for the CPU is C it
    wrote itself, so a failure is our bug: InternalError with gcc's message and the source."""
    c_file = os.path.join(directory, f"{name}.c")
    lib_file = os.path.join(directory, f"{name}.so")
    with open(c_file, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(source)
    command = [cc, *REFERENCE_CFLAGS, "-o", lib_file, c_file, "-lm"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InternalError(f"cannot run the reference compiler '{cc}': {exc}") from None
    if done.returncode != 0:
        raise InternalError(f"gcc failed to compile {what} ({' '.join(command)}):\n"
                            f"{done.stderr}\n--- source ---\n{source}")
    return lib_file


def compiler_version(cc: str = "gcc") -> str:
    """``cc --version``'s text: what decides, with the source and the flags, the code
    :func:`compile_library` produces (a key for libraries cached across processes)."""
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InternalError(f"cannot run the reference compiler '{cc}': {exc}") from None
    if done.returncode != 0:
        raise InternalError(f"'{cc} --version' failed:\n{done.stderr}")
    return done.stdout


# --------------------------------------------------------------------------- the kernel


class ReferenceKernel:
    """The scop compiled as a shared library; :meth:`run` advances a grid in place."""

    def __init__(self, program: StencilProgram, cc: str = "gcc", workdir: str | None = None):
        self.program = program
        self.source = reference_source(program)
        # The directory lives as long as the kernel: the loaded library is mapped from it.
        self._tmp = tempfile.TemporaryDirectory(prefix="an5d-ref-", dir=workdir)
        # The user's file compiled before it reached us, so a failure is our bug.
        lib_file = compile_library(self.source, self._tmp.name, "reference",
                                   "the reference kernel", cc)
        self._lib = ctypes.CDLL(lib_file)
        self._function = getattr(self._lib, _ENTRY)
        self._function.restype = None
        self._function.argtypes = [ctypes.c_void_p] * len(program.arrays) + [
            CTYPES[p.ctype] for p in program.params]

    def field_shapes(self, params: Mapping[str, int | float]) -> tuple[tuple[int, ...], ...]:
        """``(k, *extents)`` of each field, in ``program.fields`` order: its ``k`` time
        buffers (:meth:`StencilProgram.field_buffers`), 1 for a field updated in place."""
        return tuple((self.program.field_buffers(field.name),)
                     + ir.array_shape(field.extents, params) for field in self.program.fields)

    def grid_shape(self, params: Mapping[str, int | float]) -> tuple[int, ...]:
        """``(k, *extents)`` of the first field (the stencil array of a one-statement
        program): :meth:`field_shapes`' first."""
        return self.field_shapes(params)[0]

    def run(self, grid: np.ndarray | Sequence[np.ndarray], params: Mapping[str, int | float],
            read_only: tuple[np.ndarray, ...] = ()) -> None:
        """Run the loop nest on the fields, updating them in place: ``grid`` is the one
        field's array (every time buffer) or a sequence of one array per field, in
        ``program.fields`` order, each of its :meth:`field_shapes` shape; ``read_only``:
        the read-only arrays' values, in ``program.arrays`` order.

        The user's code runs in a child process where the system can fork (on copies of
        the fields in memory shared with it): a program that traps (an integer division by
        zero, SIGFPE; a wild access, SIGSEGV) raises :class:`UndefinedBehaviour` at the
        scop instead of taking this process down."""
        values = resolve_params(self.program, params)
        buffers = self._read_only_buffers(read_only, values)
        fields = self._field_arrays(grid, values)
        args = [CTYPES[p.ctype](values[p.name]) for p in self.program.params]

        def run_on(arrays) -> None:
            self._function(*(ctypes.c_void_p(a.ctypes.data) for a in arrays), *buffers, *args)
        if not hasattr(os, "fork"):
            run_on(fields)
            return
        shared = [_shared_copy(a) for a in fields]
        stopped_by = _run_in_child(lambda: run_on(copy for _, copy in shared))
        if stopped_by is not None:
            raise UndefinedBehaviour(
                f"the loop nest, compiled by gcc and run with "
                f"{describe_values(values) or 'no parameters'}, "
                f"was stopped by {stopped_by}: its behaviour is undefined, so there is "
                f"nothing to check against", self.program.scop.pragma_start)
        for array, (_, copy) in zip(fields, shared):
            array[...] = copy

    def _field_arrays(self, grid: np.ndarray | Sequence[np.ndarray],
                      values: Mapping[str, int | float]) -> list[np.ndarray]:
        fields = self.program.fields
        if isinstance(grid, np.ndarray):
            if len(fields) != 1:
                raise UsageError(self._field_count_message("one array is given"))
            grids = [grid]
        elif isinstance(grid, (list, tuple)):
            if len(grid) != len(fields):
                raise UsageError(self._field_count_message(f"{len(grid)} arrays are given"))
            grids = list(grid)
        else:
            raise UsageError(f"the grid must be a numpy array, not {type(grid).__name__}")
        for array, field, shape in zip(grids, fields, self.field_shapes(values)):
            what = "the grid" if len(fields) == 1 else f"the grid of '{field.name}'"
            _check_field_array(array, field, shape, what)
        return grids

    def _field_count_message(self, given: str) -> str:
        names = ", ".join(f"'{f.name}'" for f in self.program.fields)
        count = len(self.program.fields)
        return (f"{given}; the program writes {count} field{'s' * (count != 1)} ({names}): "
                f"give one numpy array per field, in this order")

    def _read_only_buffers(self, arrays: tuple[np.ndarray, ...],
                           values: Mapping[str, int | float]) -> list[ctypes.c_void_p]:
        expected = _read_only_arrays(self.program)
        if len(arrays) != len(expected):
            names = ", ".join(f"'{a.name}'" for a in expected) or "none"
            raise UsageError(f"{len(arrays)} read-only arrays given; the program reads "
                             f"{len(expected)} ({names})")
        buffers = []
        for array, decl in zip(arrays, expected):
            dtype = np.dtype(_NUMPY_DTYPES[decl.elem_type])
            shape = ir.array_shape(decl.extents, values)
            if not isinstance(array, np.ndarray) or array.dtype != dtype \
                    or tuple(array.shape) != shape or not array.flags.c_contiguous:
                raise UsageError(f"read-only array '{decl.name}' must be a C-contiguous numpy "
                                 f"array of {decl.elem_type} ({dtype}) and shape {shape}")
            buffers.append(ctypes.c_void_p(array.ctypes.data))
        return buffers


def describe_values(values: Mapping[str, int | float]) -> str:
    """``T=5, N=64``: the parameters a run took (empty for none)."""
    return ", ".join(f"{name}={value}" for name, value in values.items())


def _shared_copy(array: np.ndarray) -> tuple[mmap.mmap, np.ndarray]:
    """A copy of ``array`` in anonymous shared memory (a forked child's writes reach it),
    and the mapping that holds it."""
    memory = mmap.mmap(-1, max(array.nbytes, 1))
    copy = np.frombuffer(memory, dtype=array.dtype, count=array.size).reshape(array.shape)
    copy[...] = array
    return memory, copy


#: What a signal that stops the user's code says about the program.
_SIGNAL_CAUSES = {
    signal.SIGFPE: "an arithmetic trap (an integer division by zero or overflow)",
    signal.SIGSEGV: "a wild memory access",
    signal.SIGBUS: "a wild memory access",
    signal.SIGILL: "an illegal instruction",
    signal.SIGABRT: "an abort",
}


def _run_in_child(call) -> str | None:
    """Run ``call`` in a forked child that leaves at once (no Python clean-up: only the
    user's compiled code runs there). Returns None when it returned, else what stopped
    it (``SIGFPE, an arithmetic trap (...)``)."""
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            # the signal ends the child as it is: no handler of the parent's (faulthandler's
            # dump) runs in its place
            faulthandler.disable()
            for number in _SIGNAL_CAUSES:
                signal.signal(number, signal.SIG_DFL)
            call()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name
        cause = _SIGNAL_CAUSES.get(number)
        return f"{name}, {cause}" if cause else name
    if os.WEXITSTATUS(status) != 0:
        raise InternalError("the reference kernel's child process failed without a signal")
    return None


def _check_field_array(grid: object, field: ir.ArrayDecl, shape: tuple[int, ...],
                       what: str) -> None:
    """A field's array as :meth:`ReferenceKernel.run` needs it: numpy, of the field's
    type and ``shape``, writeable and C-contiguous. ``what`` names it in the messages."""
    dtype = np.dtype(_NUMPY_DTYPES[field.elem_type])
    if not isinstance(grid, np.ndarray):
        raise UsageError(f"{what} must be a numpy array, not {type(grid).__name__}")
    if grid.dtype != dtype:
        raise UsageError(f"{what} has dtype {grid.dtype}; '{field.name}' holds "
                         f"{field.elem_type} ({dtype})")
    if tuple(grid.shape) != shape:
        layout = ("one buffer x extents: it is updated in place" if field.in_place
                  else f"{shape[0]} time buffers x extents")
        raise UsageError(f"{what} has shape {tuple(grid.shape)}; with these parameters "
                         f"'{field.name}' needs {shape} ({layout})")
    if not grid.flags.c_contiguous or not grid.flags.writeable:
        raise UsageError(f"{what} must be a writeable C-contiguous numpy array")


_CACHE: dict[str, ReferenceKernel] = {}


def _cache_key(program: StencilProgram, cc: str) -> str:
    parts = [cc, program.scop.preprocessed_text, program.scop.pragma_start.file,
             str(program.scop.pragma_start.line),
             repr([(f.name, f.elem_type, f.extents, f.in_place, program.field_buffers(f.name))
                   for f in program.fields]),
             repr([(a.name, a.elem_type, a.extents) for a in _read_only_arrays(program)]),
             repr([(p.name, p.ctype) for p in program.params]),
             repr([(loop.var, loop.declared_in_init) for loop in _all_loops(program)])]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def build_reference(program: StencilProgram, cc: str = "gcc") -> ReferenceKernel:
    """The (per-process cached) reference kernel of ``program``."""
    key = _cache_key(program, cc)
    kernel = _CACHE.get(key)
    if kernel is None:
        kernel = _CACHE[key] = ReferenceKernel(program, cc)
    return kernel
