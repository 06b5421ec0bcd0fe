"""Differential verification: a backend against the gcc oracle on random data.

Every time buffer (both of a double-buffered array, all ``k`` of a rotation through ``k``),
boundaries included, gets independent random values in [0.5, 1.5). The oracle (the user's
loop nest compiled by gcc, :mod:`an5dpy.check.reference`) and the backend run the same step
count; the buffer where the C program leaves its result is compared cell by cell. (The
other buffers hold earlier time levels; which ones depends on the launch plan.)
The simulator runs the schedule of the emitted code (:func:`an5dpy.driver.emitted_schedule`,
the one ``an5d-translate`` prints), compact kernels of remainder degrees included.

Results must be bit-identical in modes ``nondiag`` and ``none``, on the simulator or a GPU
build without fast math and with ``-fmad=false``, as long as the update uses only + - * /,
casts and correctly rounded math functions (sqrt, fabs, ...). Bit-identical means
identical bits except that any NaN equals any NaN: C leaves the sign and payload of a NaN
open (x86 keeps one operand's NaN, and gcc and numpy order operands differently); the
output says "(NaNs compared as NaN)" where both results hold NaNs.

Otherwise (mode ``assoc`` reorders sums, fast math rounds differently) a relative tolerance
applies, ``tol = 8 u k T A``: ``u`` the unit roundoff of the narrowest floating type the
update computes in, ``k`` the operations per cell, ``T`` the step count, and ``A`` the
problem's own sensitivity (:func:`amplification`). The rule: each step rounds each of its
``k`` operations differently (or reorders a sum of up to ``k`` terms), which moves a cell by
at most a few ulp of its terms, about what ``k`` one-ulp changes of the inputs can do; a
change made at one step reaches the result amplified as a change of the inputs is over
the rest of the run, at most (where changes grow at all, they grow with the steps) as over
the whole run, and the ``T`` steps add up. ``A`` is measured by running gcc's loop
nest twice more on the same data with every input cell moved by one ulp (random
directions, then the opposite ones): the largest relative move of gcc's own result, in
units of ``u`` (at least 1). For an averaging stencil ``A`` is a few units, the classic
``8 u k T`` bound times a few; an update that divides by a neighbour, cancels terms or grows gets
the tolerance its own conditioning needs, so a FAIL always means a result further from
gcc's than rounding can explain. The error of a cell is relative to its value, or to the
mean magnitude of the grid where the value is smaller (where terms cancel).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from an5dpy.errors import UsageError
from an5dpy.check.evaluate import is_exact
from an5dpy.check.reference import describe_values
from an5dpy.ir import StencilInfo, WORD_BYTES, array_shape
from an5dpy.blocking.plan import BlockingPlan, Mode

UNIT_ROUNDOFF = {"float": 2.0 ** -24, "double": 2.0 ** -53}
#: sim: the numpy simulator of the schedule; cuda: the generated code on the GPU; isl: the
#: proof that the launches store every interior cell exactly once.
BACKENDS = ("sim", "cuda", "isl")


def must_be_identical(info: StencilInfo, plan: BlockingPlan, exact_build: bool) -> bool:
    return exact_build and plan.mode is not Mode.ASSOC and all(is_exact(u) for u in info.updates)


def tolerance(info: StencilInfo, plan: BlockingPlan, steps: int,
              amplification: float = 1.0) -> float:
    """``8 u k T A`` with u the unit roundoff of the narrowest floating type the update
    computes in (a double stencil calling sqrtf rounds like float there) and ``A`` the
    problem's amplification of rounding-size changes (at least 1; :func:`amplification`)."""
    from an5dpy.ir import walk
    types = {n.ctype for u in info.updates for n in walk(u) if n.ctype in UNIT_ROUNDOFF}
    types |= {plan.dtype}
    u = max(UNIT_ROUNDOFF[t] for t in types)
    ops = max(1, info.flops_per_cell)
    return 8.0 * u * ops * max(1, steps) * max(1.0, amplification)


@dataclass(frozen=True)
class Comparison:
    passed: bool
    bit_identical: bool  # identical bits, except that any NaN equals any NaN
    max_abs: float
    max_rel: float
    tolerance: float | None  # None: bit-identical results were required
    cells: int
    nan_cells: int = 0  # cells that are NaN in both results
    amplification: float = 1.0  # the factor A of the tolerance

    def lines(self) -> list[str]:
        if self.tolerance is None:
            need = "bit-identical results"
        else:
            need = f"relative error <= {self.tolerance:.3g}"
            if self.amplification > 1.0:
                need += (f" (8 u k T x {self.amplification:.3g}: gcc's own result moves "
                         f"{self.amplification:.3g} u for 1-ulp changes of the inputs)")
        nans = " (NaNs compared as NaN)" if self.nan_cells else ""
        return [
            "PASS" if self.passed else "FAIL",
            f"max abs error: {self.max_abs:.6g}",
            f"max rel error: {self.max_rel:.6g}",
            f"bit-identical: {'yes' if self.bit_identical else 'no'}{nans}",
            f"required: {need} ({self.cells} cells compared)",
        ]


def same_values(result: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per cell: identical bits, or NaN in both. C leaves NaN payloads and signs open (x86
    keeps one operand's NaN, and gcc and numpy order operands differently), so any NaN
    equals any NaN."""
    bits = np.dtype(f"u{result.dtype.itemsize}")
    with np.errstate(invalid="ignore"):
        return (result.view(bits) == reference.view(bits)) | (np.isnan(result)
                                                              & np.isnan(reference))


def relative_errors(result: np.ndarray, reference: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per cell: the absolute and the relative difference of ``result`` from ``reference``.

    Relative to the cell's value, or to the grid's mean magnitude where the value is
    smaller: rounding errors scale with the terms summed, and a cell whose terms cancel (a
    Laplacian, c*A - A) is near zero while its error is not. Equal infinities and NaN in
    both agree (a stencil that overflows does so in both); a finite value against a
    non-finite one, or inf against -inf, is infinitely wrong."""
    with np.errstate(all="ignore"):
        got, want = result.astype(np.float64), reference.astype(np.float64)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.where(same, 0.0, np.abs(got - want))
        magnitude = np.abs(want)
        finite_values = magnitude[np.isfinite(magnitude)]
        top = float(finite_values.max()) if finite_values.size else 0.0
        floor = top * float(np.mean(finite_values / top)) if top > 0 else 0.0
        rel = diff / np.maximum(np.maximum(magnitude, floor), np.finfo(np.float64).tiny)
        rel[~same & ~(np.isfinite(got) & np.isfinite(want))] = np.inf
    return diff, rel


def compare(result: np.ndarray, reference: np.ndarray, tol: float | None,
            amplification: float = 1.0) -> Comparison:
    """``result`` against the oracle's ``reference``: bit-identical (NaNs compared as NaN)
    where ``tol`` is None, else within the relative tolerance ``tol``."""
    result = np.asarray(result)
    reference = np.asarray(reference)
    comparable = result.dtype == reference.dtype and result.shape == reference.shape
    identical = comparable and bool(same_values(result, reference).all())
    nan_cells = int((np.isnan(result) & np.isnan(reference)).sum()) if comparable else 0
    diff, rel = relative_errors(result, reference)
    finite = bool((np.isfinite(result) == np.isfinite(reference)).all())
    max_abs = float(np.nanmax(diff)) if diff.size else 0.0
    max_rel = float(np.nanmax(rel)) if rel.size else 0.0
    if np.isnan(diff).any() and not identical:
        max_abs = max_rel = float("nan")
    if tol is None:
        passed = identical
    else:
        passed = identical or (finite and max_rel <= tol)
    return Comparison(passed, identical, max_abs, max_rel, tol, int(result.size), nan_cells,
                      amplification)


def amplification(run_oracle: Callable, state, reference: np.ndarray, dtype: str,
                  seed: int = 0) -> float:
    """How far the oracle's own result moves, in units of u of ``dtype`` (relative as
    :func:`compare` measures), when every input cell (every time buffer of the grid, or of
    every field of ``state``, a list of them; boundaries included) moves by one ulp: up or
    down at random, then each the other way; the larger of the two. ``run_oracle(moved)``
    runs gcc's loop nest on a moved copy of ``state`` and returns the values compared;
    ``reference``: those of ``state`` itself. About 1 for an averaging stencil; large where
    the update divides by a neighbour, cancels, or the problem grows."""
    u = UNIT_ROUNDOFF[dtype]
    arrays = state if isinstance(state, list) else [state]
    rng = np.random.default_rng([seed, 1])
    ups = [rng.random(a.shape) < 0.5 for a in arrays]
    worst = 0.0
    for flip in (False, True):
        moved = [np.where(up != flip, np.nextafter(a, np.array(np.inf, a.dtype)),
                          np.nextafter(a, np.array(-np.inf, a.dtype)))
                 for a, up in zip(arrays, ups)]
        _, rel = relative_errors(run_oracle(moved if isinstance(state, list) else moved[0]),
                                 reference)
        worst = max(worst, float(np.nanmax(rel)) if rel.size else 0.0)
    return worst / u


def random_grid(shape: tuple[int, ...], dtype: str, seed: int | tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.random(shape, dtype=np.float64) + 0.5
    return values.astype(np.float32 if WORD_BYTES[dtype] == 4 else np.float64)


def random_read_only(program, env: Mapping[str, int], seed: int) -> tuple[np.ndarray, ...]:
    """Random values for each read-only array of ``program`` (``program.arrays`` order),
    each from a seed of its own, in the range of the grid's values."""
    return tuple(random_grid(array_shape(a.extents, env), a.elem_type, (seed, k))
                 for k, a in enumerate(program.arrays) if a.read_only)


def random_state(info: StencilInfo, env: Mapping[str, int], seed: int):
    """Random values for everything a run advances: every field's buffers
    (:func:`random_fields`) or the grid's time buffers."""
    if info.coupled:
        return random_fields(info, env, seed)
    from an5dpy.blocking.plan import grid_extents
    shape = (info.time.buffers, *(d.size for d in grid_extents(info, env)))
    return random_grid(shape, info.dtype, seed)


def random_fields(info: StencilInfo, env: Mapping[str, int], seed: int
                  ) -> list[np.ndarray]:
    """Random values for every buffer of every field of a time step of several statements
    (:func:`an5dpy.check.simulate.field_shapes`), each field from a seed of its own."""
    from an5dpy.check.simulate import field_shapes
    return [random_grid(shape, info.dtype, (seed, 1000 + k))
            for k, shape in enumerate(field_shapes(info, env))]


def field_results(info: StencilInfo, env: Mapping[str, int], fields) -> np.ndarray:
    """The buffers where the C program leaves each field's result, joined into one array
    (a field in place has one; a double-buffered one leaves it in :func:`result_buffer`)."""
    b = result_buffer(info, env)
    return np.stack([np.asarray(values[0] if f.in_place else values[b])
                     for f, values in zip(info.fields, fields)])


def result_buffer(info: StencilInfo, env: Mapping[str, int]) -> int:
    """The buffer where the C program leaves its result: each step writes the buffer after
    the one it reads its newest level from (``(t + c) % k`` advances with ``t``), so after
    ``steps`` steps the newest level is ``steps`` buffers on from the first one read."""
    return (info.time.start_buffer(env) + info.time.steps(env)) % info.time.buffers


# --------------------------------------------------------------------------- whole runs


@dataclass(frozen=True)
class VerifyReport:
    info: StencilInfo
    plan: BlockingPlan
    backend: str
    env: dict
    comparison: Comparison
    device: str | None = None
    build: str | None = None
    choice: object = None  # the driver's PlanChoice: how the plan was chosen

    @property
    def passed(self) -> bool:
        return self.comparison.passed

    def lines(self) -> list[str]:
        sizes = describe_values(self.env)
        config = [f"config: {self.plan.describe()}, backend {self.backend}"
                  + (f" on {self.device}" if self.device else "")
                  + (f" ({self.build})" if self.build else ""),
                  f"parameters: {sizes}"]
        return self.comparison.lines() + config


#: Largest grid (all time buffers) ``an5d verify`` allocates; the oracle needs a copy (two
#: where a tolerance is measured).
MAX_GRID_BYTES = 16 * 2 ** 30


def _check_extents(info: StencilInfo, shape: tuple[int, ...], env) -> None:
    """Parameter values that give no grid to verify on are the user's (exit 2), not ours."""
    if any(n < 0 for n in shape):
        sizes = ", ".join(f"{d.var}: {n}" for d, n in zip(info.dims, shape[1:]))
        given = describe_values(env)
        raise UsageError(f"the parameters ({given}) give a negative array extent ({sizes})")


def _check_grid(info: StencilInfo, shape: tuple[int, ...], dtype: str, env) -> None:
    """A grid the run can allocate (with the oracle's copy)."""
    _check_extents(info, shape, env)
    nbytes = WORD_BYTES[dtype] * int(np.prod(shape, dtype=object))
    if nbytes > MAX_GRID_BYTES:
        sizes = ", ".join(f"{d.var}: {n}" for d, n in zip(info.dims, shape[1:]))
        given = describe_values(env)
        raise UsageError(f"the parameters ({given}) give a grid of {nbytes / 2 ** 30:.3g} GiB "
                         f"({sizes}, {shape[0]} time buffers); verification allocates at most "
                         f"{MAX_GRID_BYTES / 2 ** 30:.3g} GiB: give smaller sizes with -P")


# --------------------------------------------------------------------------- coverage (isl)


@dataclass(frozen=True)
class CoverageReport:
    """``an5d verify --backend isl``: the isl proof, for one grid, that every launch of the
    launch plan stores each interior cell exactly once (:mod:`an5dpy.check.coverage`)."""

    info: StencilInfo
    plan: BlockingPlan
    env: dict
    launches: tuple[tuple[int, int], ...]  # (degree, number of launches of that degree)
    proofs: tuple  # one CoverageProof per degree, in the order of ``launches``
    backend: str = "isl"
    choice: object = None  # the driver's PlanChoice: how the plan was chosen

    @property
    def passed(self) -> bool:
        return all(p.holds for p in self.proofs)

    def lines(self) -> list[str]:
        sizes = ", ".join(f"{k}={v}" for k, v in self.env.items())
        found = [f"degree {d} ({n} launch{'es' if n > 1 else ''}): {p.verdict()}"
                 for (d, n), p in zip(self.launches, self.proofs)]
        return (["PASS" if self.passed else "FAIL"]
                + (found or ["no launch (0 time steps): nothing is stored"])
                + [f"config: {self.plan.describe()}, backend isl (stores of the launch plan "
                   "proven for these sizes)", f"parameters: {sizes}"])


def prove_file(path: str, options, params: Mapping[str, str],
               announce: Callable | None = None, loaded=None) -> CoverageReport:
    """``an5d verify --backend isl``: prove the plan's launches for the given sizes (the
    plan chosen for them where options are open; ``announce(choice)`` is called with the
    driver's choice before the proof; ``loaded``: :func:`an5dpy.driver.load`'s result for
    ``path`` where the caller has it)."""
    from an5dpy import driver
    from an5dpy.blocking.plan import grid_extents, run_degrees
    from an5dpy.check.coverage import prove_coverage
    from an5dpy.check.reference import resolve_params

    program, info = loaded or driver.load(path, options.defines, options.include_dirs)
    env = resolve_params(program, params)
    choice = driver.choose_plan(info, options, env)
    plan = choice.plan
    dims = grid_extents(info, env)
    _check_extents(info, (info.time.buffers, *(d.size for d in dims)), env)
    if announce is not None:  # the sizes hold a grid: the proof runs
        announce(choice)
    counts: dict[int, int] = {}
    for degree in run_degrees(info.time.steps(env), plan.bt, plan.levels):
        degree = plan.kernel_degree(degree)
        counts[degree] = counts.get(degree, 0) + 1
    proofs = tuple(prove_coverage(plan, d, dims) for d in counts)
    return CoverageReport(info, plan, dict(env), tuple(counts.items()), proofs, choice=choice)


# --------------------------------------------------------------------------- whole runs


def _run_cuda(path, info: StencilInfo, plan: BlockingPlan, options, choice, arch, exact: bool,
              state, env, read_only):
    """Build the plan's kernels for this GPU (the exact build where ``exact``) and run them
    on a copy of ``state`` (the grid, or the fields' arrays); returns the result, the
    device's name and the build flags."""
    from an5dpy.cuda.runtime import BuildOptions, cuda_runner, device_arch, device_name
    opts = BuildOptions(arch=arch or device_arch(), exact=exact)
    runner = cuda_runner(info, plan, Path(path).stem, opts, options.smem_wrap,
                         regs=choice.regs)
    return runner.run_numpy(state, env, read_only), device_name(), " ".join(opts.flags())


def verify_file(path: str, options, backend: str, params: Mapping[str, str],
                exact: bool = False, seed: int = 0, arch: str | None = None,
                announce: Callable | None = None, loaded=None
                ) -> VerifyReport | CoverageReport:
    """``an5d verify``: run ``backend`` ('sim' or 'cuda') and the gcc oracle on random data
    (a :class:`VerifyReport`), or with 'isl' prove the launches' stores for these sizes
    (a :class:`CoverageReport`, :func:`prove_file`). Options left open are chosen for
    these sizes (:func:`an5dpy.driver.choose_plan`; ``announce(choice)`` is called with
    the choice before anything runs), and the CUDA build gets its register budget.
    ``loaded``: :func:`an5dpy.driver.load`'s result for ``path`` where the caller has it."""
    from an5dpy import driver
    from an5dpy.blocking.plan import grid_extents
    from an5dpy.check.reference import build_reference, resolve_params

    if backend not in BACKENDS:
        raise UsageError(f"--backend {backend!r}: choose {', '.join(BACKENDS)}")
    if backend == "isl":
        return prove_file(path, options, params, announce, loaded)
    program, info = loaded or driver.load(path, options.defines, options.include_dirs)
    env = resolve_params(program, params)
    choice = driver.choose_plan(info, options, env)
    plan = choice.plan
    if backend == "cuda":
        from an5dpy.cuda.runtime import cupy_available
        usable, why = cupy_available()
        if not usable:  # the machine lacks a GPU or cupy: not our bug, not the input's
            raise UsageError(f"--backend cuda needs a CUDA GPU and cupy: {why} "
                             "(--backend sim runs the schedule on the CPU)")
    shape = (info.time.buffers, *(d.size for d in grid_extents(info, env)))
    if info.coupled:  # every field's buffers
        shape = (2 * len(info.fields), *shape[1:])
    _check_grid(info, shape, plan.dtype, env)
    if announce is not None:  # the backend and the grid are there: the run starts
        announce(choice)
    read_only = random_read_only(program, env, seed)
    oracle = build_reference(program)
    if info.coupled:  # random values in every buffer of every field; each field's result
        state = random_fields(info, env, seed)

        def copied(values):
            return [v.copy() for v in values]

        def compared(values):
            return field_results(info, env, values)
    else:
        state = random_grid(shape, plan.dtype, seed)
        # every time buffer of a rotating program holds a level the C program leaves
        # there; a double-buffered run leaves a plan-dependent earlier level in the other
        buffers = (list(range(info.time.buffers)) if plan.levels.rotating
                   else [result_buffer(info, env)])

        def copied(values):
            return values.copy()

        def compared(values):
            return values[buffers]
    reference = copied(state)
    oracle.run(reference, env, read_only)
    device = build = None
    if backend == "sim":
        from an5dpy.check.simulate import simulate
        # the schedule of the code an5d-translate emits (compact kernels included)
        result = simulate(info, plan, state, env, driver.emitted_schedule(info, plan),
                          read_only)
        exact_build = True
    else:
        result, device, build = _run_cuda(path, info, plan, options, choice, arch, exact,
                                          state, env, read_only)
        exact_build = exact
    got, want = compared(result), compared(reference)
    if must_be_identical(info, plan, exact_build):
        comparison = compare(got, want, None)
    else:
        def oracle_result(moved):
            moved = copied(moved)
            oracle.run(moved, env, read_only)
            return compared(moved)
        amp = amplification(oracle_result, state, want, plan.dtype, seed)
        comparison = compare(got, want, tolerance(info, plan, info.time.steps(env), amp), amp)
    return VerifyReport(info, plan, backend, dict(env), comparison, device, build, choice)
