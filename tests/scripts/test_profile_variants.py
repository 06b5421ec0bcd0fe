"""scripts/profile_variants.py: the kernel variants it profiles and its report of ncu's CSV."""

from __future__ import annotations

from script_support import load_script

profile = load_script("profile_variants")


def test_only_the_bound_loses_the_level_ops_barriers():
    text = "#define CALC1(a) do { \\\n    x = a; \\\n    __syncthreads(); \\\n    y = a; \\\n  } while (0)\n"
    assert profile.variant_kernel(text, "level") == text
    assert profile.variant_kernel(text, "step") == text
    bound = profile.variant_kernel(text, "unsynchronised")
    assert "__syncthreads" not in bound and "x = a;" in bound and "y = a;" in bound


def test_rows_name_the_plan():
    assert profile.parse_row("star3d1r:float:4:32x32:off:none") == (
        "star3d1r", "float", 4, "32x32", None, None)
    assert profile.parse_row("j2d5pt:double:6:256:128:64")[4:] == (128, 64)


def test_the_report_keeps_each_kernels_first_launch_and_its_largest_stalls(tmp_path):
    names = [*profile.SUMMARY, *(profile.STALL_METRIC.format(s) for s in profile.STALLS)]
    header = ",".join(f'"{c}"' for c in ("ID", "Kernel Name", *names))
    stalls = {s: 0.0 for s in profile.STALLS} | {"barrier": 3.5, "wait": 1.25}

    def row(i, name, time):
        values = {"gpu__time_duration.sum": time, "smsp__inst_executed.sum": "1,000"}
        cells = [values.get(m, "1") for m in profile.SUMMARY] + [str(v) for v in stalls.values()]
        return ",".join(f'"{c}"' for c in (str(i), name, *cells))

    path = tmp_path / "ncu.csv"
    path.write_text("==PROF== noise\n" + "\n".join(
        [header, row(0, "an5d_x_level_kernel_d4", "100"), row(1, "an5d_x_level_kernel_d4", "999"),
         row(2, "an5d_x_step_kernel_d4", "90")]) + "\n")
    table = profile.report(str(path)).splitlines()
    assert len(table) == 4 and "| x_level_kernel_d4 | 100 | 1,000 |" in table[2]
    assert "barrier 3.50, wait 1.25" in table[2] and "(all 4.8)" in table[2]
    assert table[3].startswith("| x_step_kernel_d4 | 90 |")
