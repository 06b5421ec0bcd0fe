"""scripts/profile_rows.py: the rows it chooses, its reading of ncu's CSV and its table."""

from __future__ import annotations

import json
import os

from script_support import load_script

rows_script = load_script("profile_rows")
variants_script = load_script("profile_variants")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def artifact_rows():
    with open(os.path.join(REPO, "artifact", "H200", "rows.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def folder_with(tmp_path, keys):
    rows = [r for r in artifact_rows() if (r["stencil"], r["dtype"]) in keys]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(tmp_path)


def test_rows_named_first_then_those_below_the_bar_once():
    rows = {("a", "float"): {"original_h200": 100, "best": {"gflops": 150}},
            ("b", "float"): {"original_h200": 100, "best": {"gflops": 110}},
            ("c", "double"): {"original_h200": 100, "best": {"gflops": 119}},
            ("d", "double"): {"original_h200": None, "best": {"gflops": 1}}}
    assert rows_script.chosen(rows, [("a", "float")], None) == [("a", "float")]
    assert rows_script.chosen(rows, [("b", "float")], 1.2) == [("b", "float"), ("c", "double")]


def test_numbers_as_ncu_writes_them():
    assert rows_script.number("1,234.5") == 1234.5
    assert rows_script.number("n/a") is None and rows_script.number(None) is None


def fake_csv(metric_list, bt, time_ns, warp_instructions, thread_instructions):
    names = metric_list.split(",")
    values = {"gpu__time_duration.sum": f"{time_ns:,}",
              "smsp__inst_executed.sum": f"{warp_instructions:,}",
              "smsp__thread_inst_executed.sum": f"{thread_instructions:,}",
              "launch__registers_per_thread": "40",
              variants_script.STALL_METRIC.format("long_scoreboard"): "2.5",
              variants_script.STALL_METRIC.format("barrier"): "1.5"}
    header = ",".join(f'"{c}"' for c in ("ID", "Kernel Name", *names))
    units = ",".join(f'"{c}"' for c in ("", "", *("ns" for _ in names)))
    row = ",".join(f'"{c}"' for c in ("0", f"an5d_x_kernel_d{bt}",
                                      *(values.get(n, "0") for n in names)))
    return "==PROF== connected\n" + "\n".join([header, units, row]) + "\n"


def test_a_profile_counts_per_interior_cell_and_level(tmp_path, monkeypatch):
    folder = folder_with(tmp_path, {("star3d1r", "float")})
    row = rows_script.load_rows(folder)[("star3d1r", "float")]
    bt = row["best"]["plan"]["bt"]
    cells = 512 ** 3 * bt
    asked = []

    def ncu(folder_, key, bt_, metric_list):
        asked.append((key, bt_, metric_list.count(",") + 1))
        return fake_csv(metric_list, bt_, 1_000_000, cells // 8, cells * 20)

    monkeypatch.setattr(rows_script, "ncu_csv", ncu)
    record = rows_script.profile(folder, ("star3d1r", "float"))
    assert asked == [(("star3d1r", "float"), bt,
                      len(variants_script.metrics().split(",")) + len(rows_script.EXTRA))]
    assert abs(record["thread_instructions_per_cell_level"] - 20) < 1e-9
    assert abs(record["warp_slots_per_cell_level"] - 4) < 1e-9
    assert abs(record["launch_gflops"] - cells * 13 / 1e-3 / 1e9) < 1e-6 * record["launch_gflops"]
    assert record["counters"]["launch__registers_per_thread"] == 40
    assert record["stalls"].startswith("long_scoreboard 2.50, barrier 1.50")
    assert record["plan_json"] == row["best"]["plan"] and record["gpu"] == row["gpu"]


def test_the_table_sets_the_model_of_the_launch_beside_the_profile(tmp_path, monkeypatch):
    """The checkout's model of the profiled launch: its time and warp instructions over
    the profiled ones (a profile that ran exactly as modelled reads 1.00 and 1.00)."""
    folder = folder_with(tmp_path, {("star3d1r", "float")})
    row = rows_script.load_rows(folder)[("star3d1r", "float")]
    record = {"stencil": "star3d1r", "dtype": "float", "gpu": "H200",
              "plan": row["best"]["describe"], "plan_json": row["best"]["plan"],
              "cap": row["best"]["cap"]}
    seconds, instructions = rows_script.model_view(record)
    assert seconds > 0 and instructions > 0
    record |= {"table_gflops": 6000, "original": 3720, "launch_gflops": 6000.0,
               "stalls": "barrier 1.00", "warp_slots_per_cell_level": 30.0,
               "counters": {"gpu__time_duration.sum": seconds * 1e9,
                            "smsp__inst_executed.sum": instructions / 2}}
    rows_script.put_record(folder, record)
    line = next(line for line in rows_script.render(folder).splitlines()
                if line.startswith("| star3d1r float"))
    assert "| 30.0 | 1.00 | 2.00 | barrier 1.00 |" in line
    assert rows_script.model_view({"stencil": "star3d1r", "dtype": "float"}) is None


def test_the_base_counters_alone_where_ncu_refuses_the_extra_ones(tmp_path, monkeypatch):
    folder = folder_with(tmp_path, {("star2d1r", "float")})
    bt = rows_script.load_rows(folder)[("star2d1r", "float")]["best"]["plan"]["bt"]
    sets = []

    def ncu(folder_, key, bt_, metric_list):
        sets.append(metric_list)
        if "launch__registers_per_thread" in metric_list:
            raise RuntimeError("unknown metric")
        return fake_csv(metric_list, bt_, 1_000_000, 16384 ** 2 * bt, 16384 ** 2 * bt * 30)

    monkeypatch.setattr(rows_script, "ncu_csv", ncu)
    record = rows_script.profile(folder, ("star2d1r", "float"))
    assert len(sets) == 2 and sets[1] == variants_script.metrics()
    assert "launch__registers_per_thread" not in record["counters"]
    assert abs(record["warp_slots_per_cell_level"] - 32) < 1e-9


def test_records_replace_their_row_and_the_table_lists_the_shortest_first(tmp_path):
    folder = str(tmp_path)
    common = {"plan": "bt=4", "cap": None, "launch_gflops": 1000.0, "stalls": "wait 1.00",
              "warp_slots_per_cell_level": 9.0, "counters": {"gpu__time_duration.sum": 2e6}}
    rows_script.put_record(folder, {"stencil": "a", "dtype": "float", "table_gflops": 150,
                                    "original": 100, **common})
    rows_script.put_record(folder, {"stencil": "b", "dtype": "float", "table_gflops": 150,
                                    "original": 100, **common})
    rows_script.put_record(folder, {"stencil": "a", "dtype": "float", "table_gflops": 105,
                                    "original": 100, **common})
    records = rows_script.read_records(folder)
    assert [(r["stencil"], r["table_gflops"]) for r in records] == [("a", 105), ("b", 150)]
    table = rows_script.render(folder).splitlines()
    body = [line for line in table if line.startswith("| a ") or line.startswith("| b ")]
    assert body[0].startswith("| a float | bt=4, regs none | 1.05 | 1,000 | 2,000 |")
    assert body[0].endswith("| 9.0 | | | wait 1.00 |")  # no plan JSON: no model columns
    assert body[1].startswith("| b float |")


def test_the_pipe_at_twice_the_original_is_the_element_types_pipe_scaled_to_that_speed():
    counters = {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 60.0,
                "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active": 40.0}
    record = {"dtype": "float", "original": 800, "launch_gflops": 1000.0,
              "counters": counters}
    assert rows_script.pipe_at_twice_original(record) == "96"  # 60 x 2 x 800 / 1000
    assert rows_script.pipe_at_twice_original(record | {"dtype": "double"}) == "64"
    # over 100: no kernel of the same arithmetic reaches twice the original
    assert rows_script.pipe_at_twice_original(record | {"launch_gflops": 900.0}) == "107"
    assert rows_script.pipe_at_twice_original(record | {"counters": {}}) == ""
