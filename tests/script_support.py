"""Test support: the scripts of scripts/ as modules (they are not a package), and their GPU
paths without a GPU."""

from __future__ import annotations

import importlib.util
import os
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")


def load_script(name: str):
    """scripts/<name>.py, imported as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(SCRIPTS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def fake_build(info, plan, stem, options, smem_wrap=True, directory=None, regs=None,
               degrees=None):
    """an5dpy.cuda.runtime.build_kernels without nvcc: ptxas' report of the plan's kernel
    (40 registers, or the budget); the artifact's builds are timing builds, of the plan's
    full degree alone."""
    assert degrees == (plan.depth,)
    from an5dpy.cuda.runtime import Cubin, parse_ptxas_report
    log = (f"ptxas info    : Compiling entry function 'an5d_{stem}_kernel_d{plan.depth}' "
           f"for 'sm_90'\nptxas info    : Used {regs or 40} registers, used 1 barriers\n")
    return "model", Cubin("k.cubin", parse_ptxas_report(log), log)


def fake_gpu(monkeypatch, artifact, time):
    """scripts/artifact.py's GPU paths without a GPU: nvcc as :func:`fake_build`, an H200
    (sm_90) present, and ``time`` in place of its Bench.time."""
    import an5dpy.cuda.runtime as runtime
    monkeypatch.setattr(runtime, "build_kernels", fake_build)
    monkeypatch.setattr(runtime, "device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(runtime, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(artifact.Bench, "time", time)
