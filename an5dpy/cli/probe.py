"""``an5d probe``: measure the present GPU's memory and shared-memory bandwidth, and where two
GPUs are visible the NCCL link between devices 0 and 1, and write a GPU spec for ``an5d
model/tune --gpu SPEC.json`` (:func:`an5dpy.perf.gpus.probe`)."""

from __future__ import annotations

import argparse
import json

from an5dpy.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "probe", help="measure the present GPU (memory and shared-memory bandwidth, and the "
                      "link to a second GPU) for the model",
        description="Measures device-memory bandwidth (a large device-to-device copy) and "
                    "shared-memory bandwidth (a read kernel) with cupy and, where two or more "
                    "GPUs are visible, the bandwidth and latency of NCCL send/recv between "
                    "devices 0 and 1 (both directions at once, as a halo exchange; with one "
                    "GPU the known entry's nominal link bandwidth is kept), and writes a GPU "
                    "spec for 'an5d model/tune --gpu SPEC.json'.")
    p.add_argument("-o", dest="output", metavar="SPEC.json", help="write the spec here")
    p.add_argument("--json", action="store_true",
                   help="print the spec (the JSON that -o writes) instead of a summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from an5dpy.perf.gpus import probe

    spec = probe()
    text = json.dumps(spec.to_json(), indent=2)
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            raise UsageError(f"cannot write '{args.output}': {e.strerror}") from None
    if args.json:
        print(text)
        return 0
    print(format_spec(spec))
    if args.output:
        print(f"wrote {args.output} (use it as --gpu {args.output})")
    return 0


def format_spec(spec) -> str:
    """The measured and queried figures of a spec, one line each."""
    return "\n".join([
        f"{spec.name}: {spec.sm_count} SMs at {spec.clock_mhz:,.0f} MHz",
        f"  device memory: {spec.gmem_gbs_float:,.0f} GB/s (float), "
        f"{spec.gmem_gbs_double:,.0f} GB/s (double)",
        f"  shared memory: {spec.smem_gbs_float:,.0f} GB/s (float), "
        f"{spec.smem_gbs_double:,.0f} GB/s (double)",
        f"  peak FLOP/s: {spec.fp32_gflops:,.0f} GFLOP/s (float), "
        f"{spec.fp64_gflops:,.0f} GFLOP/s (double)",
        f"  link to a peer: {format_link(spec)}"])


def format_link(spec) -> str:
    """The link figures of a spec and where they come from."""
    if spec.link_measured:
        return (f"{spec.link_gbs:,.1f} GB/s per direction, {spec.link_latency_us:,.1f} us per "
                f"exchange (NCCL send/recv between devices 0 and 1, measured)")
    if spec.link_gbs > 0:
        return (f"{spec.link_gbs:,.0f} GB/s per direction, nominal (not measured: an5d probe "
                f"measures it where two GPUs are visible)")
    return "not known (not measured: an5d probe measures it where two GPUs are visible)"
