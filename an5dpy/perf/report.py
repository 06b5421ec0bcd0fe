"""The model's prediction as text (``an5d model``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from an5dpy.perf.gpus import GpuSpec
from an5dpy.perf.model import Prediction

if TYPE_CHECKING:
    from an5dpy.perf.multi import SlabPrediction


def _fmt_bytes(n: float) -> str:
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= k:
            return f"{n / k:.2f} {unit}"
    return f"{n:.0f} B"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_fields(p: Prediction) -> list[str]:
    """The lines of a prediction for a time step of several statements (``an5d model``,
    ``an5d tune``): its fields, each with its share of the global traffic, plane
    registers and shared memory, and what a level op of each sub-step does."""
    plan = p.plan
    nfields = len(p.fields)
    per_field = (f"each {_fmt_bytes(p.field_gm_bytes)} of global traffic, "
                 f"{plan.registers_per_thread() // nfields} plane registers, "
                 f"{plan.smem_bytes // nfields} B shared")
    lines = [f"{_count(nfields, 'field')} ({', '.join(p.fields)}; {per_field}), "
             f"{_count(len(p.work), 'sub-step')} per time step (bt={plan.bt} steps = "
             f"{plan.depth} levels per launch):"]
    for k, w in enumerate(p.work):
        staged = ", ".join(w.staged) if w.staged else "none"
        lines.append(f"  sub-step {k + 1} (level {k + 1} of each step): computes "
                     f"{', '.join(w.writes)}; {w.flops} FLOP/cell (eff_ALU "
                     f"{w.mix.eff_alu:.3f}), {_count(w.smem_reads, 'shared read')} per "
                     f"computing thread; in shared memory: {staged} "
                     f"({_count(w.smem_planes, 'plane')})")
    return lines


def format_prediction(p: Prediction, gpu: GpuSpec | None = None) -> str:
    """A readable report of a prediction (``an5d model``)."""
    plan = p.plan
    lines = [f"plan {plan.describe()} on {p.gpu}"]
    degrees = ", ".join(f"{c.count} x degree {c.degree}" for c in p.launches) or "none"
    lines.append(f"{p.cells} interior cells, {p.steps} steps, {p.launch_count} launches "
                 f"({degrees})")
    if plan.coupled:
        lines += format_fields(p)
    lines.append(f"predicted {p.gflops:,.1f} GFLOP/s, {p.seconds * 1e3:.3f} ms, bottleneck: "
                 f"{p.bottleneck}")
    if p.time_issue:
        norm = p.launches[0].constants.norm
        lines.append(f"  (each launch takes the p-norm, p = {norm:g}, of its four times, not "
                     "the largest)")
    if p.efficiency != 1.0:
        kind = ", their computing threads loading the halo," if plan.halo_loaded else ""
        lines.append(f"  (kernels of {plan.coarsen} cells per thread{kind} reach "
                     f"{p.efficiency:.2f} of the speed these times give, as measured: "
                     "CELL_EFFICIENCY)")
    bw_sm = f" at {gpu.smem_gbs(plan.dtype):,.0f} GB/s" if gpu else ""
    bw_gm = f" at {gpu.gmem_gbs(plan.dtype):,.0f} GB/s" if gpu else ""
    peak = f" of {gpu.peak_gflops(plan.dtype):,.0f} GFLOP/s peak" if gpu else ""
    lines.append(f"  compute  {p.time_comp * 1e3:10.3f} ms  ({p.flops / 1e9:,.1f} GFLOP "
                 f"executed{peak}, eff_ALU {p.eff_alu:.3f})")
    lines.append(f"  shared   {p.time_sm * 1e3:10.3f} ms  ({_fmt_bytes(p.sm_bytes)}{bw_sm}, "
                 f"{p.smem_reads_per_thread} reads per computing thread"
                 f"{' and time step' if plan.coupled else ''})")
    lines.append(f"  global   {p.time_gm * 1e3:10.3f} ms  ({_fmt_bytes(p.gm_bytes)}{bw_gm})")
    coef_gm = sum(c.count * c.coef_gm_bytes for c in p.launches)
    coef_l1 = sum(c.count * c.coef_l1_bytes for c in p.launches)
    if coef_gm or coef_l1:
        lines.append(f"  (read-only arrays: {_fmt_bytes(coef_gm)} of the global bytes, "
                     f"{_fmt_bytes(coef_l1)} through L1 in the shared bytes)")
    if p.time_issue:
        instructions = sum(c.count * c.warp_instructions for c in p.launches)
        latency = f", step latency {gpu.step_latency_cycles:,.0f} cycles" if gpu else ""
        lines.append(f"  issue    {p.time_issue * 1e3:10.3f} ms  ({instructions / 1e9:,.2f} G "
                     f"warp-instructions{latency})")
    if p.registers is not None:
        lines.append(f"  register budget {p.registers} per thread")
    for c in p.launches:
        o = c.occupancy
        lines.append(f"  degree {c.degree}: {c.blocks} blocks, {o.blocks_per_sm} per SM "
                     f"(limited by {o.limited_by}; {o.regs_per_thread} registers, "
                     f"{o.smem_per_block} B shared), {c.waves:.2f} waves, "
                     f"eff_SM {c.eff_sm:.3f}, bottleneck {c.bottleneck}")
    t = p.threads
    if plan.halo_loaded:
        # the block's threads are its compute region: the slots are the tiles' cells
        lines.append("cells of the blocks' tiles (cell x level 1..bT x plane, all launches; "
                     f"a block's {plan.nthreads} threads hold its compute region and load "
                     "the halo):")
    else:
        lines.append("thread slots (thread x level 1..bT x plane, all launches):")
    for label, v in (("valid", t.valid), ("redundant", t.redundant),
                     ("boundary", t.boundary), ("out-of-bound", t.out_of_bound)):
        share = v / t.total if t.total else 0.0
        lines.append(f"  {label:<13}{v:>20,}  {share:6.1%}")
    return "\n".join(lines)


def format_slabs(sp: "SlabPrediction", one: Prediction) -> str:
    """The lines of a run over several GPUs (``an5d model --gpus N``), after ``one``, the
    prediction of the whole grid on one GPU."""
    d = sp.decomposition
    s = d.slabs[sp.slowest]
    computed = s.stream.upper - s.stream.lower + 1
    lines = [f"on {sp.gpus} GPUs: slabs of the streaming dimension (planes owned: "
             f"{', '.join(str(x.owned[1] - x.owned[0]) for x in d.slabs)}), halo "
             f"{d.halo.below} planes below and {d.halo.above} above, recomputed",
             f"  compute  {sp.compute.seconds * 1e3:10.3f} ms  (the slowest slab, "
             f"{computed} planes computed of which {s.owned[1] - s.owned[0]} owned: the "
             f"one-GPU model of its planes)"]
    exchange = sp.exchange_seconds
    if exchange is None:
        lines.append(f"  exchange        ?       ({sp.refreshes} halo refreshes of "
                     f"{_fmt_bytes(sp.exchange_bytes)} in all on the busiest GPU; this GPU's "
                     f"spec has no link bandwidth (link_gbs), so it is not modelled)")
    else:
        if sp.link_measured:
            link = (f"{sp.link_gbs:,.1f} GB/s per direction and {sp.link_latency_s * 1e6:,.1f} "
                    f"us per refresh, measured by an5d probe")
        else:
            link = f"{sp.link_gbs:,.0f} GB/s per direction, nominal"
            if sp.link_latency_s > 0:
                link += f", {sp.link_latency_s * 1e6:,.1f} us per refresh"
        lines.append(f"  exchange {exchange * 1e3:10.3f} ms  ({sp.refreshes} halo refreshes"
                     f", {_fmt_bytes(sp.exchange_bytes)} sent by the busiest GPU at "
                     f"{link})")
    if sp.overlap_seconds is not None:
        verdict = "overlapped (the model's choice)" if sp.overlap else "not overlapped: it does not pay"
        lines.append(f"  serial   {sp.serial_seconds * 1e3:10.3f} ms  (kernels, then each exchange)")
        lines.append(f"  overlap  {sp.overlap_seconds * 1e3:10.3f} ms  (each exchange under the "
                     f"next launch's interior windows, edge windows after it): {verdict}")
    strong = one.seconds / (sp.gpus * sp.seconds) if sp.seconds > 0 else 0.0
    lines.append(f"predicted {sp.gflops:,.1f} GFLOP/s, {sp.seconds * 1e3:.3f} ms on "
                 f"{sp.gpus} GPUs: strong-scaling efficiency {strong:.3f} (against the "
                 f"one-GPU prediction above)")
    return "\n".join(lines)
