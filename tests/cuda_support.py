"""Test support for the CUDA stage: translate a benchmark of ``c_inputs/`` or a test form."""

from __future__ import annotations

import os

from an5dpy.driver import Options, translate
from an5dpy.ir import is_floating

from paths import C_INPUTS, DATA

FORMS = os.path.join(DATA, "forms")


def bench(name: str, dtype: str = "float", **kw):
    return translate(os.path.join(C_INPUTS, name + ".c"),
                     Options(defines=(("SB_TYPE", dtype),), **kw))


def small_block(info, bt: int, sides: tuple[int, ...]) -> tuple[int, ...]:
    """``sides`` (one per in-plane dimension, contiguous first), each widened where the
    halo of ``bt`` levels at the stencil's radius would leave fewer than 3 cells: a small
    block for any test form."""
    radii = tuple(reversed(info.radius[1:]))
    return tuple(max(side, 2 * bt * r + 3) for side, r in zip(sides, radii))


def form_params(program, size: int, steps: int, coefficient: float = 0.3) -> dict[str, str]:
    """A value for every parameter a test form leaves to ``-P``: the time loop's bounds
    ``steps``, other integers ``size``, coefficients distinct values from
    ``coefficient`` up (0.01 apart)."""
    time_names = {name for bound in (program.time_loop.lower, program.time_loop.upper)
                  for name, _ in bound.terms}
    params = {}
    for k, p in enumerate(program.params):
        if p.value is not None or p.definition is not None:
            continue
        if is_floating(p.ctype):
            params[p.name] = f"{coefficient + 0.01 * k:.2f}"
        else:
            params[p.name] = str(steps if p.name in time_names else size)
    return params


def compile_kernels(kernels, out: str, stem: str) -> tuple[int, str]:
    """Write ``kernels``' files (:class:`an5dpy.cuda.kernels.Kernels`, stem ``stem``) into
    the new folder ``out`` and compile the kernel file to a cubin with nvcc (fast math,
    ptxas' report): its return code and log."""
    import subprocess
    from an5dpy.cuda.runtime import nvcc_path
    os.makedirs(out)
    for fname, text in kernels.files().items():
        with open(os.path.join(out, fname), "w") as f:
            f.write(text)
    proc = subprocess.run([nvcc_path(), "-arch=sm_90", "-cubin", "-O3", "--use_fast_math",
                           "-Xptxas", "-v", "-o", os.path.join(out, f"{stem}.cubin"),
                           os.path.join(out, f"{stem}_kernel.cu")], capture_output=True,
                          text=True)
    return proc.returncode, proc.stdout + proc.stderr


def compile_host(translation, out, include_dirs=()) -> tuple[int, str]:
    """Write an ``an5d-translate`` result (:func:`an5dpy.driver.translate`) into ``out`` and
    compile its host file with nvcc: as C where the user's function takes a
    variable-length array, C++ otherwise. Its return code and log."""
    import subprocess
    from an5dpy.cuda.render import has_vla_parameter
    from an5dpy.cuda.runtime import nvcc_path
    from an5dpy.driver import write_outputs
    write_outputs(translation.outputs, out)
    host = os.path.join(str(out), f"{translation.stem}_host.cu")
    language = ["-x", "c"] if has_vla_parameter(translation.program) else ["-arch=sm_90"]
    includes = [arg for d in include_dirs for arg in ("-I", d)]
    proc = subprocess.run([nvcc_path(), *language, *includes, "-c", host,
                           "-o", os.path.join(str(out), "h.o")], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr
