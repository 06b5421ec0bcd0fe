"""scripts/artifact.py without a GPU: what the table says about the model's top 5."""

from __future__ import annotations

import pytest
from script_support import fake_build, fake_gpu, load_script


@pytest.fixture(scope="module")
def artifact():
    return load_script("artifact")


def row(best, measured, top5):
    return {"best": {"describe": best, "gflops": dict(measured)[best]},
            "measured": [{"describe": d, "gflops": g} for d, g in measured],
            "model_top5": top5}


def test_top5_fraction_is_the_fastest_measured_plan_of_the_top5_over_the_tuned_one(artifact):
    # "b" was measured twice (two register budgets): its faster run counts
    measured = [("a", 100.0), ("b", 80.0), ("b", 90.0), ("c", 50.0)]
    assert artifact.model_top5_fraction(row("a", measured, ["b", "c", "x"])) == 0.9
    assert artifact.model_top5_fraction(row("a", measured, ["c", "a"])) == 1.0


def test_top5_fraction_is_unknown_where_no_plan_of_the_top5_was_measured(artifact):
    measured = [("a", 100.0)]
    assert artifact.model_top5_fraction(row("a", measured, ["x", "y"])) is None
    assert artifact.model_top5_fraction({"best": {"describe": "a", "gflops": 1.0},
                                         "measured": []}) is None


def measured_entry(plan, cap, gflops, final):
    return {"plan": plan.to_json(), "describe": plan.describe(), "cap": cap,
            "gflops": gflops, "final": final, "predicted": 0.0}


def test_rescore_redoes_the_model_fields_and_keeps_the_measurements(artifact):
    from an5dpy.perf.gpus import get_gpu
    gpu = get_gpu("H200")
    stub = {"stencil": "j2d5pt", "dtype": "float", "gpu": "H200"}
    info, env, model, space, ranked = artifact.row_context(stub, gpu)
    first, fifth, far = ranked[0].plan, ranked[4].plan, ranked[-1].plan
    sconf = measured_entry(far, None, 900.0, True)
    row = dict(stub, sconf=sconf, best=sconf, model_top5=[], best_in_model_top5=False,
               measured=[measured_entry(first, None, 1000.0, True),
                         measured_entry(fifth, 64, 1200.0, False),  # a screening run
                         measured_entry(far, 32, 1100.0, True)])
    out = artifact.rescore(row, model, ranked, space, gpu, env)
    # the tuned plan is the fastest reported run, here the far plan: not in the top 5
    assert out["best"]["describe"] == far.describe() and out["best"]["gflops"] == 1100.0
    assert out["model_top5"] == [p.plan.describe() for p in ranked[:5]]
    assert out["best_in_model_top5"] is False and len(out["paper_top5"]) == 5
    # every prediction is the model's at the build's budget; the runs are untouched
    assert out["measured"][1]["predicted"] == pytest.approx(model.predict(fifth, 64).gflops)
    assert [m["gflops"] for m in out["measured"]] == [1000.0, 1200.0, 1100.0]
    assert out["sconf"]["predicted"] == pytest.approx(model.predict(far, None).gflops)
    assert row["measured"][0]["predicted"] == 0.0  # the input row is left as it was


def test_rescore_without_a_gpu_rewrites_rows_and_table(artifact, tmp_path):
    import json
    import os
    src = os.path.join(os.path.dirname(artifact.HERE), "artifact", "H200", "rows.jsonl")
    rows = [json.loads(line) for line in open(src)][:2]
    rows[0]["best_in_model_top5"] = "stale"
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    artifact.supplement_rows(str(tmp_path), deadline=0.0, measure=False)
    out = [json.loads(line) for line in open(tmp_path / "rows.jsonl")]
    assert len(out) == 2 and isinstance(out[0]["best_in_model_top5"], bool)
    assert [len(r["measured"]) for r in out] == [len(r["measured"]) for r in rows]


def test_render_only_without_matplotlib_writes_the_tables_and_says_what_to_install(
        artifact, tmp_path, monkeypatch, capsys):
    import shutil
    import sys
    from paths import REPO
    measured = tmp_path / "H200"
    measured.mkdir()
    for name in ("rows.jsonl", "fig8.jsonl"):
        shutil.copy(f"{REPO}/artifact/H200/{name}", measured / name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    assert artifact.main(["--render-only", str(measured)]) == 2
    err = capsys.readouterr().err
    assert err == (f"artifact.py: error: the tables are written to {measured}; the plots need "
                   "matplotlib: pip install '.[plot]' (or pip install matplotlib)\n")
    assert (measured / "table5.md").read_text() == \
        open(f"{REPO}/artifact/H200/table5.md").read()
    assert (measured / "table5.csv").exists() and not (measured / "fig8.png").exists()


def test_render_only_of_a_directory_without_rows(artifact, tmp_path, capsys):
    assert artifact.main(["--render-only", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"artifact.py: error: {tmp_path}/rows.jsonl does not "
                                       "exist (measure first, or name a directory that holds "
                                       "rows.jsonl)\n")


def test_redo_keeps_the_other_rows_and_hands_on_the_earlier_tuned_plans(artifact):
    rows = [{"stencil": s, "dtype": d, "best": {"plan": {"bt": bt}}}
            for s, d, bt in (("j2d5pt", "float", 7), ("j2d5pt", "double", 6),
                             ("star3d1r", "float", 4))]
    both = ("float", "double")
    done, previous = artifact.split_redo(rows, {"j2d5pt"}, both)
    assert done == {("star3d1r", "float")}
    assert previous == {("j2d5pt", "float"): {"bt": 7}, ("j2d5pt", "double"): {"bt": 6}}
    assert artifact.split_redo(rows, set(), both) == (
        {("j2d5pt", "float"), ("j2d5pt", "double"), ("star3d1r", "float")}, {})
    # --redo j2d5pt --dtypes double: the float row is done, and kept
    done, previous = artifact.split_redo(rows, {"j2d5pt"}, ("double",))
    assert done == {("j2d5pt", "float"), ("star3d1r", "float")}
    assert previous == {("j2d5pt", "double"): {"bt": 6}}


def test_fig8_curves_are_replaced_only_by_a_whole_new_sweep(artifact):
    earlier = [{"stencil": s, "bt": bt, "gflops": g}
               for s, bt, g in (("a", 1, 1.0), ("a", 2, 2.0), ("b", 1, 3.0), ("c", 1, 4.0))]
    results = {("a", 1): 10.0, ("a", 2): 20.0, ("b", 1): 30.0, ("d", 1): 50.0}
    # b's sweep was cut: its earlier curve stays whole, its one new point is dropped
    assert artifact.merge_fig8(earlier, results, {"b"}) == [
        {"stencil": "b", "bt": 1, "gflops": 3.0}, {"stencil": "c", "bt": 1, "gflops": 4.0},
        {"stencil": "a", "bt": 1, "gflops": 10.0}, {"stencil": "a", "bt": 2, "gflops": 20.0},
        {"stencil": "d", "bt": 1, "gflops": 50.0}]
    assert artifact.merge_fig8(earlier, {}, set()) == earlier


def test_a_measured_row_replaces_the_earlier_row_of_its_pair_in_place(artifact, tmp_path):
    import json
    rows = [{"stencil": s, "dtype": d, "gflops": g}
            for s, d, g in (("a", "float", 1), ("a", "double", 2), ("b", "float", 3))]
    artifact.write_rows(str(tmp_path), rows)
    artifact.put_row(str(tmp_path), {"stencil": "a", "dtype": "double", "gflops": 20})
    artifact.put_row(str(tmp_path), {"stencil": "c", "dtype": "float", "gflops": 4})
    got = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [(r["stencil"], r["dtype"], r["gflops"]) for r in got] == [
        ("a", "float", 1), ("a", "double", 20), ("b", "float", 3), ("c", "float", 4)]
    artifact.put_row(str(tmp_path), {"stencil": "x", "dtype": "float", "gflops": 5}, "o.jsonl")
    assert json.loads((tmp_path / "o.jsonl").read_text()) == {
        "stencil": "x", "dtype": "float", "gflops": 5}
    assert not list(tmp_path.glob("*.tmp"))


def h200_rows() -> list[dict]:
    import json
    import os

    from paths import REPO
    with open(os.path.join(REPO, "artifact", "H200", "rows.jsonl")) as f:
        return [json.loads(line) for line in f]


def rendered_table5(artifact, folder, rows) -> str:
    """table5.md of ``rows`` (artifact/H200's fig8 beside them), rendered in ``folder``."""
    import json
    import os
    import shutil

    from paths import REPO
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copy(os.path.join(REPO, "artifact", "H200", "fig8.jsonl"), folder)
    try:
        artifact.render(str(folder))
    except artifact.ScriptError:  # the plots need matplotlib; the tables come first
        pass
    return (folder / "table5.md").read_text()


def test_rows_of_an_earlier_generation_of_kernels_are_listed(artifact, tmp_path):
    """Rows without ``kernels`` (generation 1), rows of generation 2 whose kernels
    generation 3 changed (a double division by a fixed divisor), and rows of generations 2
    and 3 whose kernels generation 4 changed (a plan that branches on the warp's level
    bits) are named in table5.md."""
    rows = h200_rows()
    assert artifact.KERNELS == 4 and any(r.get("kernels") == 4 for r in rows)
    # rows as earlier generations measured them: one without the field; of generation 2
    # one that divides in double and one that does neither; of generation 3 a 3D assoc
    # plan, a 2D assoc plan without idle warps and one that divides in double
    older = {("box2d4r", "float"): None, ("j2d9pt", "double"): 2, ("star2d1r", "double"): 2,
             ("box3d1r", "float"): 3, ("box2d4r", "double"): 3, ("j2d5pt", "double"): 3}
    for r in rows:
        if (r["stencil"], r["dtype"]) in older:
            r.pop("kernels", None)
            if older[r["stencil"], r["dtype"]] is not None:
                r["kernels"] = older[r["stencil"], r["dtype"]]
    text = rendered_table5(artifact, tmp_path, rows)
    line = next(l for l in text.splitlines() if "kernels of an earlier generation" in l)
    named = set(line.split(": ", 1)[1].split(", "))
    assert {"box2d4r float", "j2d9pt double", "box3d1r float"} <= named
    assert not named & {"star2d1r double", "box2d4r double", "j2d5pt double",
                        "j2d9pt float", "j3d27pt float"}


def test_a_tuned_plan_that_loads_its_halo_keeps_it_through_table5(artifact, tmp_path):
    """table5.csv names who loads each tuned plan's halo, and :func:`table_options` (the
    plans of scripts/snapshot.py, default_plans.py and regenerate.py) gives it back; a
    table without the column has a thread per halo cell."""
    import csv
    import os
    from an5dpy.blocking.plan import make_plan
    from an5dpy.driver import choose_plan, load
    from paths import C_INPUTS
    rows = h200_rows()
    row = next(r for r in rows if (r["stencil"], r["dtype"]) == ("star3d4r", "float"))
    info = load(os.path.join(C_INPUTS, "star3d4r.c"), (("SB_TYPE", "float"),))[1]
    plan = make_plan(info, 1, bs=(24, 72), sl=128, coarsen=4, halo="loaded")
    row["best"] = dict(row["best"], plan=plan.to_json(), describe=plan.describe(), cap=None)
    text = rendered_table5(artifact, tmp_path, rows)
    assert "| idle warps | halo | regs |" in text
    assert "| star3d4r | float | 1 | 72x24 | 128 | nondiag | 4 | level | skip | loaded | - |" \
        in text
    table = {(r["stencil"], r["dtype"]): r for r in csv.DictReader(open(tmp_path / "table5.csv"))}
    defines = (("SB_TYPE", "float"),)
    options = artifact.table_options(table[("star3d4r", "float")], defines)
    assert choose_plan(info, options).plan == plan
    assert artifact.table_options(table[("star3d1r", "float")], defines).halo == "threads"
    old = {k: v for k, v in table[("star3d4r", "float")].items() if k != "halo"}
    assert artifact.table_options(old, defines).halo == "threads"


def test_measure_rows_times_the_neighbours_of_the_fastest_plans_of_each_row(
        artifact, tmp_path, monkeypatch):
    """A row's run without a GPU (builds and runs faked): the candidates, then the
    neighbours of the two fastest shapes, then those of plans that became roots, then
    the fastest build's other stream lengths, the row's fastest plan among them all."""
    import json

    import an5dpy.perf.tune as tune

    def rate(plan):  # favours 2 cells per thread, bT 5, step barriers and long streams
        return 1000.0 + 300 * (plan.coarsen == 2) - 20 * abs(plan.bt - 5) + 7 * (
            plan.barriers.value == "step") + plan.sl / 1000

    def fake_time(self, info, plan, built, env, naive=False, repeats=2, min_run_s=0.2):
        return (100.0 if naive else rate(plan)), 0.2, 100, 40, False

    fake_gpu(monkeypatch, artifact, fake_time)
    rounds, roots = [], []
    submit = artifact.submit_jobs
    monkeypatch.setattr(artifact, "submit_jobs", lambda bench, info, plans, stem, pool=None,
                        model=None: (rounds.append((pool is None, list(plans), model))
                                     or submit(bench, info, plans, stem, pool, model)))
    neighbours = tune.neighbour_plans
    infos = []
    monkeypatch.setattr(tune, "neighbour_plans", lambda info, plan: (
        roots.append(plan) or infos.append(info) or neighbours(info, plan)))
    asked = []
    lengths_of = tune.balanced_stream_plans
    monkeypatch.setattr(tune, "balanced_stream_plans", lambda info, model, plan, cap: (
        asked.append((plan, cap)) or lengths_of(info, model, plan, cap)))
    artifact.measure_rows(str(tmp_path), ["star2d1r"], ["float"], 5, float("inf"), set())
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    (first, candidates, model), *later, (_, lengths, _) = rounds
    # after the rounds, the fastest build's other stream lengths, submitted once
    fastest = max(candidates + [p for _, plans, _ in later for p in plans], key=rate)
    assert [plan for plan, _ in asked] == [fastest] and lengths
    assert all(tune.plan_shape(p) == tune.plan_shape(fastest) and p.sl != fastest.sl
               for p in lengths)
    assert {m["describe"] for m in row["measured"] if m.get("balanced")} == {
        p.describe() for p in lengths}
    assert first and later and not any(pool_none for pool_none, _, _ in later)
    # every round builds the budget the row's model predicts fastest
    assert model is not None and model.info.dtype == "float"
    assert all(m is model for _, _, m in later)
    # the first roots are the fastest plans of the two fastest shapes (stream lengths
    # apart) among the candidates; their neighbours not measured yet were added
    shapes = {}
    for plan in sorted(dict.fromkeys(candidates), key=rate, reverse=True):
        if len(shapes) < 2:
            shapes.setdefault(tune.plan_shape(plan), plan)
    assert roots[:2] == list(shapes.values())
    assert later[0][1] == [n for n in dict.fromkeys(
        n for r in roots[:2] for n in neighbours(infos[0], r)) if n not in candidates]
    # later rounds take the neighbours of the plan that became the fastest, each shape once
    assert len({tune.plan_shape(r) for r in roots}) == len(roots)
    assert 1 <= row["neighbour_rounds"] == len(later) <= tune.NEIGHBOURHOOD_ROUNDS
    # two roots, then one a round at most (the last may have no new neighbour)
    assert len(later) + 1 <= len(roots) <= len(later) + 2
    added = [p for _, plans, _ in later for p in plans]
    assert len(added) == len(set(added)) and not set(added) & set(candidates)
    measured = {m["describe"] for m in row["measured"]}
    assert measured == {p.describe() for p in candidates + added + lengths}
    # each measured entry's round: the round that submitted its plan, the last one's for
    # the stream lengths
    round_of = {p.describe(): k for k, (_, plans, _) in enumerate(rounds[:-1]) for p in plans}
    round_of.update({p.describe(): len(later) for p in lengths})
    assert all(m["round"] == round_of[m["describe"]] for m in row["measured"])
    assert row["plans_measured"] == len(measured)
    assert row["neighbourhood"] == artifact.NEIGHBOURHOOD
    assert row["best"]["gflops"] == max(map(rate, candidates + added + lengths))
    assert row["wall_s"] >= 0
    # the faked builds and runs return at once: the split is there, and within the row's
    assert set(row["wall_parts"]) == {"builds", "runs"}
    assert 0 <= sum(row["wall_parts"].values()) <= row["wall_s"] + 0.2
    # and by phase of the search: the rounds this row had, Sconf and naive outside them
    assert list(row["wall_phases"]) == (["first round"]
                                        + [f"round {k}" for k in range(1, len(later) + 1)]
                                        + ["stream lengths", "finalists"])
    assert 0 <= sum(row["wall_phases"].values()) <= row["wall_s"] + 0.2


def test_measure_rows_gives_a_heavy_stencil_no_rounds_of_neighbours(artifact, tmp_path,
                                                                     monkeypatch):
    """A heavy row without a GPU (box3d2r, 249 FLOP per cell): the model's 3 best plans
    and the per-bS picks, no per-bT picks and no round of neighbours; its fastest build's
    other stream lengths are still measured, after the first round."""
    import json

    import an5dpy.perf.tune as tune

    def rate(plan):
        return 1000.0 + (plan.sl or 0) / 1000 - 10 * plan.bt

    fake_gpu(monkeypatch, artifact, lambda self, info, plan, *a, naive=False, **k: (
        100.0 if naive else rate(plan), 0.2, 100, 40, False))
    picks = []
    candidates_of = tune.tuning_candidates
    monkeypatch.setattr(tune, "tuning_candidates", lambda *a, **k: (
        picks.append((a[2], k)) or candidates_of(*a, **k)))
    monkeypatch.setattr(tune, "neighbour_plans", lambda info, plan: pytest.fail(
        "a heavy stencil's neighbours were asked for"))
    artifact.measure_rows(str(tmp_path), ["box3d2r"], ["float"], 5, float("inf"), set())
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    assert picks == [(tune.HEAVY_TOP, {"per_bt": False, "per_bs": True})]
    assert row["neighbour_rounds"] == 0
    assert all(m["round"] == 0 for m in row["measured"])
    assert list(row["wall_phases"])[0] == "first round"
    assert not any(phase.startswith("round") for phase in row["wall_phases"])
    assert row["neighbourhood"] == artifact.NEIGHBOURHOOD


def test_measure_rows_times_a_rows_first_round_while_the_row_before_builds_its_second(
        artifact, tmp_path, monkeypatch):
    """Two rows without a GPU (builds and runs faked): the GPU times row 2's first round
    before row 1's neighbours, whose builds run meanwhile; each row is written as a row
    measured alone would be, in order, its time the sum of its own waits and timings."""
    import concurrent.futures
    import json
    import threading

    timed = []
    released = threading.Event()  # the neighbours' builds finish once row 2 was timed

    def rate(plan):
        return 1000.0 + 300 * (plan.coarsen == 2) - 20 * abs(plan.bt - 5)

    def fake_time(self, info, plan, built_, env, naive=False, repeats=2, min_run_s=0.2):
        timed.append((stems[id(info)], plan.describe(), naive))
        return (100.0 if naive else rate(plan)), 0.2, 100, 40, False

    first_round, stems = {}, {}
    submit = artifact.submit_jobs

    def submit_jobs(bench, info, plans, stem, pool=None, model=None):
        if pool is None:  # a row's first round
            first_round[stem], stems[id(info)] = {p.describe() for p in plans}, stem
            return submit(bench, info, plans, stem, pool, model)
        jobs = submit(bench, info, plans, stem, pool, model)
        waiting = []
        for plan, cap, fut in jobs:  # the second round's builds end when row 2 was timed
            later = concurrent.futures.Future()

            def done(f, later=later):
                released.wait(5)
                later.set_result(f.result())
            threading.Thread(target=done, args=(fut,)).start()
            waiting.append((plan, cap, later))
        return waiting

    fake_gpu(monkeypatch, artifact, fake_time)
    monkeypatch.setattr(artifact, "submit_jobs", submit_jobs)
    original = artifact.start_screening

    def start_screening(bench, info, env, jobs, label, *args, **kwargs):
        screening = original(bench, info, env, jobs, label, *args, **kwargs)
        if label.startswith("j2d5pt"):
            released.set()
        return screening

    monkeypatch.setattr(artifact, "start_screening", start_screening)
    artifact.measure_rows(str(tmp_path), ["star2d1r", "j2d5pt"], ["float"], 5, float("inf"),
                          set())
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["stencil"] for r in rows] == ["star2d1r", "j2d5pt"]
    names = [name for name, _, _ in timed]
    # row 1's first round, row 2's first round, then row 1's neighbours and finalists
    first_j2d = names.index("j2d5pt")
    star_first = {d for n, d, _ in timed[:first_j2d] if n == "star2d1r"}
    assert star_first == first_round["star2d1r"]
    assert {d for n, d, _ in timed[first_j2d:] if n == "star2d1r"} - star_first
    assert names[first_j2d:].count("star2d1r") > 0 and names[-1] == "j2d5pt"
    for r in rows:
        assert r["best"]["gflops"] == max(m["gflops"] for m in r["measured"] if m["final"])
        assert r["neighbourhood"] == artifact.NEIGHBOURHOOD
        assert r["wall_s"] == pytest.approx(sum(r["wall_parts"].values()), abs=0.15)
        # the naive run last, once per row
        assert sum(1 for n, _, naive in timed if naive and n == r["stencil"]) == 1


def test_table5_sums_the_time_of_the_rows_that_recorded_it(artifact, tmp_path):
    """The full run's time is the sum of its rows' (``wall_s``); rows of earlier runs have
    none and are left out of it."""
    rows = h200_rows()[:4]
    for row, seconds in zip(rows, (30.0, 90.5, None, 60.0)):
        row.pop("wall_s", None)
        row.pop("wall_parts", None)
        row.pop("wall_phases", None)
        if seconds is not None:
            row["wall_s"] = seconds
    lines = rendered_table5(artifact, tmp_path, rows).splitlines()
    line = next(line for line in lines if line.startswith("- time of the rows"))
    assert "3 rows, 180 s, 60 s a row (from 30 to 90)" in line
    assert not any(line.startswith("- of the time of the") for line in lines)
    # rows that split their time: the waits for builds and the timed runs, summed
    rows[0]["wall_parts"] = {"builds": 12.0, "runs": 15.5}
    rows[1]["wall_parts"] = {"builds": 40.0, "runs": 45.0}
    lines = rendered_table5(artifact, tmp_path, rows).splitlines()
    assert ("- of the time of the 2 rows that split it: waiting for builds 52 s, timed runs "
            "60 s") in lines
    assert not any(line.startswith("- by phase") for line in lines)
    # rows that split it by phase: the rounds of neighbours as one, in the search's order
    rows[0]["wall_phases"] = {"first round": 10.0, "round 1": 8.0, "round 2": 4.5,
                              "stream lengths": 2.0, "finalists": 3.0}
    rows[1]["wall_phases"] = {"first round": 50.0, "round 1": 20.0, "finalists": 6.0}
    lines = rendered_table5(artifact, tmp_path, rows).splitlines()
    assert ("- by phase of the search, the 2 rows that recorded it: first round 60 s, "
            "neighbour rounds 32 s, stream lengths 2 s, finalists 9 s") in lines


def test_measure_fig8_replaces_a_curve_only_after_its_whole_sweep(artifact, tmp_path,
                                                                    monkeypatch, capsys):
    """Fig. 8 without a GPU (builds and runs faked): a whole sweep replaces the stencil's
    earlier points; a sweep cut by the deadline leaves them as they were."""
    import json
    import types

    fake_gpu(monkeypatch, artifact, lambda self, info, plan, *a, **k: (
        1000.0 + plan.bt, 0.2, 100, 40, False))
    best = {"plan": {"bt": 4, "bs": [256], "sl": 256, "opt": "nondiag", "coarsen": 1,
                     "barriers": "level"}}
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"stencil": "j2d5pt", "dtype": "float", "best": best}) + "\n")
    earlier = [{"stencil": "j2d5pt", "bt": 1, "gflops": 5.0},
               {"stencil": "star2d1r", "bt": 1, "gflops": 6.0}]
    (tmp_path / "fig8.jsonl").write_text("".join(json.dumps(d) + "\n" for d in earlier))

    def points():
        return [json.loads(line) for line in (tmp_path / "fig8.jsonl").read_text().splitlines()]

    clock = iter(range(10 ** 6))  # one tick per look at the clock: cut after three points
    monkeypatch.setattr(artifact, "time", types.SimpleNamespace(time=lambda: next(clock)))
    artifact.measure_fig8(str(tmp_path), 3, ["j2d5pt"])
    assert points() == earlier
    assert "j2d5pt: the deadline cut its sweep" in capsys.readouterr().out
    clock = iter(range(10 ** 6))
    artifact.measure_fig8(str(tmp_path), float("inf"), ["j2d5pt"])
    degrees = artifact.FIG8_DEGREES[2]
    assert points() == [earlier[1]] + [{"stencil": "j2d5pt", "bt": bt, "gflops": 1000.0 + bt}
                                       for bt in sorted(degrees)]


def test_measure_fig8_builds_nothing_past_its_deadline_and_drops_what_it_cut(
        artifact, tmp_path, monkeypatch, capsys):
    """A call of a split run (--resume) that reaches Fig. 8 after its deadline builds no
    point, and one whose deadline cuts the sweep drops the builds of the points left."""
    import json
    import types

    built, shutdowns = [], []

    def counting_build(info, plan, *a, **k):
        built.append(plan.bt)
        return fake_build(info, plan, *a, **k)

    fake_gpu(monkeypatch, artifact, lambda self, info, plan, *a, **k: (
        1000.0 + plan.bt, 0.2, 100, 40, False))
    import an5dpy.cuda.runtime as runtime
    monkeypatch.setattr(runtime, "build_kernels", counting_build)
    shutdown = artifact.Bench.shutdown
    monkeypatch.setattr(artifact.Bench, "shutdown",
                        lambda self: (shutdowns.append(1), shutdown(self)))
    best = {"plan": {"bt": 4, "bs": [256], "sl": 256, "opt": "nondiag", "coarsen": 1,
                     "barriers": "level"}}
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"stencil": "j2d5pt", "dtype": "float", "best": best}) + "\n")
    clock = iter(range(10, 10 ** 6))
    monkeypatch.setattr(artifact, "time", types.SimpleNamespace(time=lambda: next(clock)))
    artifact.measure_fig8(str(tmp_path), 5, ["j2d5pt"])
    assert built == [] and shutdowns == [] and not (tmp_path / "fig8.jsonl").exists()
    assert "the deadline has passed" in capsys.readouterr().out
    clock = iter(range(10 ** 6))
    artifact.measure_fig8(str(tmp_path), 3, ["j2d5pt"])
    assert shutdowns == [1] and "cut its sweep" in capsys.readouterr().out


def test_bench_times_runs_of_full_launches_only(artifact, monkeypatch):
    """Bench.time without a GPU (the runner and the clock stand in): the probe and the
    reported run are of step counts whose launches are all of the plan's full degree, the
    only kernel of the artifact's timing builds; the run stays within the program's steps."""
    import os
    import types

    import an5dpy.cuda.runtime as runtime
    import an5dpy.perf.bench as perf_bench
    from an5dpy.blocking.plan import make_plan, run_degrees
    from an5dpy.check.reference import resolve_params
    from an5dpy.driver import load
    from paths import C_INPUTS

    program, info = load(os.path.join(C_INPUTS, "j2d5pt.c"), (("SB_TYPE", "float"),))
    env = resolve_params(program, {"compsize": 16384, "timestep": 1000})
    ran = []

    class Runner:
        def __init__(self, info_, plan, cubin, prefix, signature):
            self.plan = plan

        def run(self, grid, env_, read_only):
            ran.append(info.time.steps(env_))

    monkeypatch.setattr(runtime, "CupyRunner", Runner)
    monkeypatch.setattr(perf_bench, "time_runs",
                        lambda run, repeats, warmup: [run() or 0.004 * ran[-1] / 1000]
                        * repeats)
    bench = artifact.Bench.__new__(artifact.Bench)
    bench.grid = lambda info_, env_, dtype: (None, ())
    cubin = types.SimpleNamespace(kernel=lambda name: None)
    for bt in (1, 3, 4, 14):
        plan = make_plan(info, bt=bt, bs=(256,), sl=256)
        ran.clear()
        # 0.004 s per 1000 steps: the reported run wants 0.2 s, far past the 1000 steps
        model = types.SimpleNamespace(prefix="an5d_j2d5pt", signature=())
        _, _, steps, _, _ = bench.time(info, plan, (model, cubin), env)
        assert ran[-1] == steps and steps <= 1000
        for count in ran:
            assert set(run_degrees(count, bt, plan.levels)) == {bt}, (bt, count)


@pytest.mark.parametrize("step_s, bt, probes, screened", [
    # a slow step (box3d4r double at bT 1): the warm-up and one timed step tell the step
    # time; the screening run is the 4 steps that make 0.05 s
    (0.015, 1, [1, 1], 4),
    # at bT 3 the fewest steps of full launches are 3: 45 ms, long enough
    (0.015, 3, [3, 3], 6),
    # a fast step (2D): the fewest steps are too short, PROBE_STEPS steps tell it
    (1e-4, 1, [1, 1, 20], 500),
])
def test_bench_takes_the_step_time_from_the_fewest_steps_where_they_are_long(
        artifact, monkeypatch, step_s, bt, probes, screened):
    """Bench.time without a GPU: a run's steps take ``step_s`` each. The warm-up and the
    timed run of the fewest steps of full launches come first; a probe of PROBE_STEPS
    steps only where those took under PROBE_S (perf/tune.probed_steps); the screening
    run (repeats=1, 0.05 s) follows without another warm-up."""
    import os
    import types

    import an5dpy.cuda.runtime as runtime
    import an5dpy.perf.bench as perf_bench
    from an5dpy.blocking.plan import make_plan
    from an5dpy.check.reference import resolve_params
    from an5dpy.driver import load
    from an5dpy.perf.tune import SCREEN_S
    from paths import C_INPUTS

    program, info = load(os.path.join(C_INPUTS, "star3d1r.c"), (("SB_TYPE", "double"),))
    env = resolve_params(program, {"compsize": 512, "timestep": 1000})
    ran = []

    class Runner:
        def __init__(self, info_, plan, cubin, prefix, signature):
            pass

        def run(self, grid, env_, read_only):
            ran.append(info.time.steps(env_))

    def time_runs(run, repeats, warmup):
        for _ in range(warmup):
            run()
        return [run() or step_s * ran[-1] for _ in range(repeats)]

    monkeypatch.setattr(runtime, "CupyRunner", Runner)
    monkeypatch.setattr(perf_bench, "time_runs", time_runs)
    bench = artifact.Bench.__new__(artifact.Bench)
    bench.grid = lambda info_, env_, dtype: (None, ())
    cubin = types.SimpleNamespace(kernel=lambda name: None)
    plan = make_plan(info, bt=bt, bs=(32, 32), sl=128)
    model = types.SimpleNamespace(prefix="an5d_star3d1r", signature=())
    g, seconds, steps, _, _ = bench.time(info, plan, (model, cubin), env, repeats=1,
                                         min_run_s=SCREEN_S)
    assert ran == probes + [screened] and steps == screened
    assert seconds == pytest.approx(step_s * screened)


def test_stencils_are_dealt_whole_heaviest_first_to_the_least_loaded_gpu(artifact):
    weight = {"a": 300.0, "b": 200.0, "c": 150.0, "d": 100.0, "e": 60.0}
    dealt = artifact.deal_stencils(list("abcde"), weight, 2)
    # a to the first, b, c to the second (350 s), d to the first (400 s), e to the second
    assert dealt == [["a", "d"], ["b", "c", "e"]]
    assert sorted(sum(dealt, [])) == list("abcde")
    # more GPUs than stencils: no empty part
    assert artifact.deal_stencils(["a", "b"], weight, 4) == [["a"], ["b"]]


def test_a_stencils_weight_is_its_rows_earlier_time_or_the_tables_or_a_guess(artifact,
                                                                             tmp_path):
    rows = [{"stencil": "a", "dtype": "float", "wall_s": 40.0},
            {"stencil": "a", "dtype": "double"}]
    reference = [{"stencil": "a", "dtype": "float", "wall_s": 10.0},
                 {"stencil": "b", "dtype": "double", "wall_s": 300.0}]
    weight = artifact.stencil_weights(["a", "b"], ["float", "double"], rows, reference)
    assert weight == {"a": 40.0 + artifact.ROW_SECONDS_GUESS,
                      "b": artifact.ROW_SECONDS_GUESS + 300.0}
    # the repository's table of the GPU a folder is named after
    table = artifact.reference_rows(str(tmp_path / "H200"))
    assert len(table) == 42 and all(r.get("wall_s") for r in table)
    assert artifact.reference_rows(str(tmp_path / "Some-GPU")) == []


def test_run_parts_deals_gpus_and_cpus_and_merges_rows_and_fig8(artifact, tmp_path,
                                                                monkeypatch, capsys):
    """Several GPUs without a GPU (the processes faked): each part gets its own GPU and
    CPUs and the rows already there; the parts' rows and their stencils' Fig. 8 points
    are merged, the other rows and points stay."""
    import argparse
    import json
    import os
    import subprocess

    import an5dpy.cuda.runtime as runtime
    monkeypatch.setattr(runtime, "device_count", lambda: 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    out = tmp_path / "H200"
    out.mkdir()
    kept = {"stencil": "star3d1r", "dtype": "float", "best": {}, "wall_s": 10.0}
    (out / "rows.jsonl").write_text(json.dumps(kept) + "\n")
    (out / "fig8.jsonl").write_text(json.dumps({"stencil": "star3d1r", "bt": 1,
                                                "gflops": 1.0}) + "\n")
    started = []

    class FakePart:
        """A part: the rows of its stencils measured (float and double), a Fig. 8
        point for each of its --fig8-stencils."""

        def __init__(self, argv, env, stdout, stderr, preexec_fn):
            def value(flag):
                return argv[argv.index(flag) + 1] if flag in argv else None
            part_dir = os.path.join(value("--out"), "H200")
            seeded = [json.loads(line) for line in open(os.path.join(part_dir, "rows.jsonl"))]
            assert seeded == [kept] and "--resume" in argv
            with open(os.path.join(value("--out"), "seed.jsonl")) as f:
                assert [json.loads(line) for line in f] == seeded
            started.append((value("--stencils"), env["CUDA_VISIBLE_DEVICES"],
                            value("--fig8-stencils"), "--no-fig8" in argv, preexec_fn))
            rows = seeded + [{"stencil": s, "dtype": d, "best": {}, "wall_s": 5.0}
                             for s in value("--stencils").split(",")
                             for d in ("float", "double")]
            artifact.write_rows(part_dir, rows)
            points = [{"stencil": s, "bt": 2, "gflops": 9.0}
                      for s in (value("--fig8-stencils") or "").split(",") if s]
            artifact.write_rows(part_dir, points, "fig8.jsonl")
            self.returncode = 0

        def wait(self):
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", FakePart)
    monkeypatch.setattr(artifact, "reference_rows", lambda out_dir: [])  # the guess alone
    args = argparse.Namespace(resume=True, no_rows=False, stencils="star2d1r,box2d1r,j2d5pt",
                              dtypes="float,double", redo=None, fig8_stencils=None,
                              no_fig8=False, top=5, minutes=30.0, narrow=False)
    artifact.run_parts(args, str(out), 2)
    # with no earlier times, 180 s each: the first two stencils to one GPU, the third alone
    assert [(s, gpu, fig8, off) for s, gpu, fig8, off, _ in started] == [
        ("star2d1r,j2d5pt", "0", "star2d1r,j2d5pt", False),
        ("box2d1r", "1", "box2d1r", False)]
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert [(r["stencil"], r["dtype"]) for r in rows] == [("star3d1r", "float")] + [
        (s, d) for s in ("star2d1r", "j2d5pt", "box2d1r") for d in ("float", "double")]
    points = [json.loads(line) for line in (out / "fig8.jsonl").read_text().splitlines()]
    assert {p["stencil"]: p["bt"] for p in points} == {
        "star3d1r": 1, "star2d1r": 2, "j2d5pt": 2, "box2d1r": 2}
    assert "2 parts" in capsys.readouterr().out
    # each part's CPUs: its half of the eight
    shares = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: shares.append(cpus),
                        raising=False)
    for *_, preexec_fn in started:
        preexec_fn()
    assert shares == [set(range(4)), set(range(4, 8))]
    # a host of fewer GPUs: refused in a line
    with pytest.raises(artifact.ScriptError, match="has 2 GPU"):
        artifact.run_parts(args, str(out), 3)


def test_a_run_on_several_gpus_stopped_by_sigterm_stops_its_parts_and_merges_their_rows(
        artifact, tmp_path, monkeypatch):
    """SIGTERM (a ``timeout``) while the parts run: each part is terminated, the rows they
    finished are in the folder's rows.jsonl, and the run ends in one line."""
    import argparse
    import json
    import os
    import signal
    import subprocess

    import an5dpy.cuda.runtime as runtime
    monkeypatch.setattr(runtime, "device_count", lambda: 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    out = tmp_path / "H200"
    out.mkdir()
    parts = []

    class FakePart:
        """A part that finished its float row and is still measuring the double one when
        the run is told to stop."""

        def __init__(self, argv, env, stdout, stderr, preexec_fn):
            part_dir = os.path.join(argv[argv.index("--out") + 1], "H200")
            stencil = argv[argv.index("--stencils") + 1]
            artifact.write_rows(part_dir, [{"stencil": stencil, "dtype": "float",
                                            "best": {}, "wall_s": 5.0}])
            self.terminated = False
            parts.append(self)

        def wait(self):
            if not self.terminated:  # the run's own SIGTERM handler, as the signal calls it
                handler = signal.getsignal(signal.SIGTERM)
                assert callable(handler), "the run does not handle SIGTERM"
                handler(signal.SIGTERM, None)
            return -15

        def terminate(self):
            self.terminated = True

    monkeypatch.setattr(subprocess, "Popen", FakePart)
    monkeypatch.setattr(artifact, "reference_rows", lambda out_dir: [])
    args = argparse.Namespace(resume=True, no_rows=False, stencils="star2d1r,box2d1r",
                              dtypes="float,double", redo=None, fig8_stencils=None,
                              no_fig8=True, top=5, minutes=30.0, narrow=False)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(artifact.ScriptError, match="stopped; the rows the parts finished"):
            artifact.run_parts(args, str(out), 2)
    except KeyboardInterrupt:
        pytest.fail("the stop reached the caller: the parts were neither stopped nor merged")
    assert len(parts) == 2 and all(p.terminated for p in parts)
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sorted((r["stencil"], r["dtype"]) for r in rows) == [
        ("box2d1r", "float"), ("star2d1r", "float")]
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the run's alone


def test_rows_of_parts_a_stopped_run_left_are_merged_by_the_next(artifact, tmp_path):
    """A part's rows that differ from those it started with are merged, and its Fig. 8
    curves that differ from those it started with; its other rows are not, though the
    folder's rows changed since (a later run measured them again). A part is merged once."""
    import json
    out = tmp_path / "H200"
    out.mkdir()
    seeded = {"stencil": "star2d1r", "dtype": "float", "best": {"gflops": 1.0}}
    later = dict(seeded, best={"gflops": 4.0})  # measured since the parts started
    artifact.write_rows(str(out), [later])
    curve = [{"stencil": "star2d1r", "bt": 1, "gflops": 5.0}]
    artifact.write_rows(str(out), curve, "fig8.jsonl")
    measured = {"stencil": "box2d1r", "dtype": "float", "best": {"gflops": 2.0}}
    again = {"stencil": "j2d5pt", "dtype": "float", "best": {"gflops": 3.0}}
    swept = [{"stencil": "j2d5pt", "bt": bt, "gflops": 6.0 + bt} for bt in (1, 2)]
    for k, (part_rows, points) in enumerate((([seeded, measured], curve),
                                             ([seeded, again], curve + swept))):
        part = out / "parts" / str(k)
        (part / "H200").mkdir(parents=True)
        artifact.write_rows(str(part), [seeded], "seed.jsonl")
        artifact.write_rows(str(part), curve, "seed_fig8.jsonl")
        artifact.write_rows(str(part / "H200"), part_rows)
        artifact.write_rows(str(part / "H200"), points, "fig8.jsonl")

    def read(name):
        return [json.loads(line) for line in (out / name).read_text().splitlines()]

    artifact.merge_parts_left(str(out))
    assert read("rows.jsonl") == [later, measured, again]
    assert read("fig8.jsonl") == curve + swept
    assert not list(out.glob("parts/*/seed*.jsonl"))
    artifact.write_rows(str(out), [dict(later, best={"gflops": 7.0})])  # measured again
    artifact.merge_parts_left(str(out))  # nothing left to merge
    assert read("rows.jsonl") == [dict(later, best={"gflops": 7.0})]
