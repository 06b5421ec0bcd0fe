"""scripts/fuzz.py: the random differential tester (issue 12).

A bounded campaign runs in the default suite (valid programs against gcc on the simulator,
malformed ones through an5d-translate) and must find nothing; the unit tests check that
the generator produces every language feature it claims, that every mutation kind is
refused as the README says, and that a finding shrinks to a small program. The same for
time steps of several statements (coupled programs, issue 16): the generator's forms, the
analysis agreeing with what it drew, random programs and plans bit-identical to gcc on the
simulator, and each refused form refused at the read it adds.
"""

from __future__ import annotations


import os
import re
import signal
from collections import Counter
from dataclasses import asdict, replace

import pytest
from hypothesis import HealthCheck, given, seed, settings
from paths import DATA
from script_support import load_script

fz = load_script("fuzz")

QUICK = dict(database=None, deadline=None, suppress_health_check=list(HealthCheck))


def _features(p) -> set[str]:
    """The language features one generated program uses (what the generator promises)."""
    text = fz.render(p).text
    out = {f"{p.ndim}d", p.dtype, f"form:{p.form}"}
    offsets = p.offsets()
    radius = [max(abs(o[d]) for o in offsets) for d in range(p.ndim)]
    reach_lo = [max([0] + [-o[d] for o in offsets]) for d in range(p.ndim)]
    reach_hi = [max([0] + [o[d] for o in offsets]) for d in range(p.ndim)]
    if any(r == 4 for r in radius):
        out.add("radius 4")
    if any(r == 0 for r in radius):
        out.add("radius 0")
    if reach_lo != reach_hi:
        out.add("asymmetric")
    if all(sum(1 for c in o if c) <= 1 for o in offsets):
        out.add("star")
    elif len(offsets) == len(set(offsets)) and len(offsets) == \
            __import__("math").prod(a + b + 1 for a, b in zip(reach_lo, reach_hi)):
        out.add("box")
    else:
        out.add("sparse")
    if len(offsets) >= 25:
        out.add("25+ points")
    if re.search(r"0x[0-9a-f.]+p[-+]?\d+", text):
        out.add("hex float")
    if re.search(r"\d[fF]\b", text):
        out.add("float suffix")
    if re.search(r"\d[eE][-+]?\d", text):
        out.add("exponent literal")
    if re.search(r"\((float|double|SB_TYPE)\)", text):
        out.add("cast")
    if re.search(r"(?<![\w)\]])-\s*[A-Z(]", text.split("#pragma scop")[1]):
        out.add("unary minus")
    if "/" in text.split("#pragma scop")[1]:
        out.add("division")
    for f in ("sqrt", "fabs", "exp", "fmax", "pow", "log"):
        if re.search(rf"\b{f}f?\(", text):
            out.add(f"call {f}")
    if p.scalars:
        out.add("scalar parameter")
    if any(s.ctype == "int" for s in p.scalars):
        out.add("int parameter")
    if p.time_start > 0:
        out.add("time start > 0")
    if p.time_inclusive or any(d.inclusive for d in p.dims):
        out.add("<= bound")
    if any(d.lower > lo for d, lo in zip(p.dims, reach_lo)):
        out.add("lower bound beyond the reach")
    if min(p.interior()) == 1:
        out.add("1 interior cell")
    if p.steps == 0:
        out.add("0 steps")
    if p.steps >= 20:
        out.add("20+ steps")
    if p.derived:
        out.add("derived size")
    if p.loop_order != tuple(range(p.ndim)):
        out.add("permuted loops")
    if p.write_shift != 1 or fz.reads_of(p.update)[0].shift != 0:
        out.add("other time subscripts")
    if p.dtype_macro:
        out.add("-D SB_TYPE")
    if not p.steps_param:
        out.add("constant steps")
    return out | _level_features(p, text) | _coefficient_features(p, text)


def _level_features(p, text: str) -> set[str]:
    """Time levels: a rotation through 3 buffers, level t-1 read at the cell."""
    out = set()
    scop = text.split("#pragma scop")[1]
    if p.buffers == 3:
        assert re.search(r"A\[\(?[^\]]*\)?\s*%\s*3\]", scop)
        out.add("3 buffers")
    if p.history() == 2:
        out.add("leapfrog" if p.buffers == 2 else "3 levels")
    if p.commuted and re.search(rf"\(\d+ ?\+ ?{p.time_var}\)", scop):
        out.add("commuted time subscript")
    return out


def _coefficient_features(p, text: str) -> set[str]:
    """Read-only arrays: how many, their ranks, subscript and declaration forms."""
    out = set()
    reads = fz.coef_reads_of(p.update)
    if p.coefs:
        out.add(f"{len(p.coefs)} read-only array{'s' * (len(p.coefs) > 1)}")
    for c in p.coefs:
        assert re.search(rf"\b{c.name}\[", text.split("#pragma scop")[1]), c.name
        out.add(f"coef form:{c.form}")
        out.add("coef rank 1" if c.rank == 1 else
                "coef full rank" if c.rank == p.ndim else "coef partial rank")
        if None in c.dims:
            out.add("coef constant subscript")
        followed = [d for d in c.dims if d is not None]
        if followed != sorted(followed):
            out.add("coef transposed")
        if c.dtype != p.dtype:
            out.add("coef of the other type")
        if len({r.subscripts for r in reads if r.array == c.name}) > 1:
            out.add("coef read at two offsets")
    if any(d is not None and o for r in reads for d, o in r.subscripts):
        out.add("coef offset")
    return out


EXPECTED_FEATURES = {
    "2d", "3d", "float", "double", *(f"form:{f}" for f in fz.FORMS), "radius 4", "radius 0",
    "asymmetric", "star", "box", "sparse", "25+ points", "hex float", "float suffix",
    "exponent literal", "cast", "unary minus", "division", "call sqrt", "call fabs",
    "call exp", "call fmax", "call pow", "call log", "scalar parameter", "int parameter",
    "time start > 0", "<= bound", "lower bound beyond the reach", "1 interior cell",
    "0 steps", "20+ steps", "derived size", "permuted loops", "other time subscripts",
    "-D SB_TYPE", "constant steps",
    "3 buffers", "leapfrog", "3 levels", "commuted time subscript",
    "1 read-only array", "2 read-only arrays", "3 read-only arrays",
    *(f"coef form:{f}" for f in fz.COEF_FORMS), "coef rank 1", "coef full rank",
    "coef partial rank", "coef constant subscript", "coef transposed",
    "coef of the other type", "coef read at two offsets", "coef offset",
}


def test_generator_covers_the_accepted_language():
    """Every feature in a sample of 300 programs, drawn as two runs of their own:
    hypothesis draws a run's examples alike, so one long run can miss a combination."""
    seen: Counter = Counter()

    @settings(max_examples=150, **QUICK)
    @given(fz.programs())
    def collect(p):
        seen.update(_features(p))
    for s in (1, 2):
        seed(s)(collect)()
    missing = EXPECTED_FEATURES - set(seen)
    assert not missing, f"the generator never produced: {sorted(missing)}"


#: How the frontend names each declaration form of a read-only array
#: (``CoefArray.form``): parameters adjusted to pointers count as VLA pointers.
COEF_FORM_SEEN_AS = {"parameter": "parameter", "open_parameter": "parameter",
                     "pointer_parameter": "vla_pointer", "vla_pointer": "vla_pointer",
                     "global": "global", "local": "local"}


def test_the_analysis_sees_the_levels_and_read_only_arrays_generated(tmp_path):
    """Each new form is generated (in a fixed sample: read-only arrays, 3 buffers, leapfrog
    and three-level updates), and an5dpy's analysis of the rendered program agrees with
    the generator: time buffers, history, newest-level offsets, and per read-only array
    its rank, element type, declaration form and the subscripts it is read at."""
    from an5dpy import driver
    seen: Counter = Counter()

    @seed(31)
    @settings(max_examples=80, **QUICK)
    @given(fz.programs())
    def check(p):
        path = tmp_path / "case.c"
        path.write_text(fz.render(p).text)
        _, info = driver.load(str(path), p.defines)
        assert info.time.buffers == p.buffers
        assert info.history == p.history()
        assert sorted(info.offsets) == p.offsets()
        assert sorted(c.name for c in info.coefficients) == sorted(c.name for c in p.coefs)
        for c in p.coefs:
            got = info.coefficient(c.name)
            assert (got.rank, got.elem_type, got.form) == \
                (c.rank, c.dtype, COEF_FORM_SEEN_AS[c.form])
            want = {r.subscripts for r in fz.coef_reads_of(p.update) if r.array == c.name}
            assert {tuple((i.dim, i.offset) for i in index) for index in got.reads} == want
        seen.update({"read-only": bool(p.coefs), "3 buffers": p.buffers == 3,
                     "leapfrog": p.buffers == 2 and p.history() == 2,
                     "3 levels": p.buffers == 3 and p.history() == 2})
    check()
    # about 30% each (3 levels: 9%); at least a few in 80 programs
    assert seen["read-only"] >= 10 and seen["3 buffers"] >= 10, seen
    assert seen["leapfrog"] >= 5 and seen["3 levels"] >= 2, seen


def test_generated_programs_are_accepted_and_plans_resolve(tmp_path):
    from an5dpy import driver
    from an5dpy.blocking.plan import make_plan, parse_block_size

    @seed(5)
    @settings(max_examples=25, **QUICK)
    @given(fz.programs(), fz.plan_draws())
    def check(p, draw):
        path = tmp_path / "case.c"
        path.write_text(fz.render(p).text)
        _, info = driver.load(str(path), p.defines)  # raises if refused
        plan = fz.resolve_plan(draw, info)
        assert plan.opt is None or plan.opt in fz.legal_modes(info)
        make_plan(info, bt=plan.bt, bs=parse_block_size(plan.bs, info.ndim), sl=plan.sl,
                  opt=plan.opt, coarsen=plan.coarsen)
    check()


@pytest.mark.parametrize("kind", sorted(fz.MUTATIONS))
def test_each_mutation_is_refused_with_a_coordinate(kind):
    results = []

    @seed(7)
    @settings(max_examples=3, **QUICK)
    @given(fz.malformed_cases((kind,)))
    def check(case):
        results.append(fz.run_malformed(case))
    check()
    assert results
    for r in results:
        assert r.outcome == fz.REFUSED, (r.outcome, r.detail, r.source)
        assert re.match(r"case\.c:\d+:\d+: error: ", r.detail)


@pytest.mark.parametrize("buffers", [2, 3, 4])
def test_every_bad_time_subscript_is_refused_whatever_the_buffers(buffers):
    """With 4 time buffers, ``A[(t + 1) % 4]`` is a time level like any other (found by the
    fuzzer: such a program was translated, and rightly): the mutation draws only subscripts
    that name no level of the program's rotation, each of them refused."""
    program = next(p for p in fz.examples(fz.programs(), 60, seed=5) if p.buffers == buffers)
    subscripts = fz.bad_time_subscripts(program)
    assert (f"({program.time_var} + 1) % 4" in subscripts) == (buffers != 4)
    for bad in subscripts:
        layout = fz.layout_of(program)
        layout.value += f" + A[{bad}]" + "".join(f"[{x}]" for x in fz._vars(program))
        case = fz.MalformedCase(program, "time_subscript", layout.render().text, None)
        result = fz.run_malformed(case)
        assert result.outcome == fz.REFUSED, (bad, result.outcome, result.source)


def test_a_program_whose_own_run_traps_is_undefined_and_no_finding(monkeypatch):
    """A wild program whose gcc build traps (an integer division by zero) is reported by
    an5dpy as undefined behaviour (exit 2 at the scop): the fuzzer counts it, and it is
    not a refused valid program."""
    import an5dpy.check.verify as verify
    from an5dpy.errors import UndefinedBehaviour

    case = fz.examples(fz.valid_cases(wild=True), 1, seed=3)[0]

    def trapping(*args, **kwargs):
        raise UndefinedBehaviour("the loop nest ... was stopped by SIGFPE", None)

    monkeypatch.setattr(verify, "verify_file", trapping)
    result = fz.run_valid(case)
    assert result.outcome == fz.UNDEFINED and not result.is_finding
    assert "SIGFPE" in result.detail
    assert fz.UNDEFINED in fz.OUTCOMES and fz.UNDEFINED not in fz.FINDINGS


def _nodes(expr):
    yield expr
    for name in ("operand", "lhs", "rhs"):
        if hasattr(expr, name):
            yield from _nodes(getattr(expr, name))
    for arg in getattr(expr, "args", ()):
        yield from _nodes(arg)


def test_wild_updates_divide_by_no_integer():
    """An integer divisor may be 0, undefined in C (found by the fuzzer: gcc folded
    ``(int)x / (int)x`` to 1 where the simulator divided 0 by 0): a wild update's divisions
    are in floating point."""
    assert fz.integer_typed(fz.Cast("int", fz.Lit("0.5")))
    assert fz.integer_typed(fz.Bin("-", fz.Cast("int", fz.Lit("0.5")), fz.Lit("2")))
    assert not fz.integer_typed(fz.Bin("-", fz.Cast("int", fz.Lit("0.5")), fz.Lit("2.0")))
    assert not fz.integer_typed(fz.Cast("double", fz.Cast("int", fz.Lit("0.5"))))
    assert fz.integer_divisor(fz.Cast("int", fz.Lit("0.5"))) and fz.integer_divisor(fz.Lit("0"))
    assert not fz.integer_divisor(fz.Lit("41"))  # an integer weights' sum
    reads = [fz.Read((0, 0), 0), fz.Read((0, 1), 0)]
    divisions = floating = 0
    for dtype in ("float", "double"):
        for expr in fz.examples(fz.wild_factor(reads, dtype), 300, seed=17):
            for node in _nodes(expr):
                if isinstance(node, fz.Bin) and node.op == "/":
                    divisions += 1
                    assert not fz.integer_divisor(node.rhs), expr
                    # the divisor of an integer-typed expression's own, cast to the dtype
                    floating += node.rhs == fz.Cast(dtype, getattr(node.rhs, "operand", None))
    assert divisions > 50 and floating > 0


def test_a_finding_shrinks_to_a_small_program(monkeypatch):
    """A stand-in runner that 'fails' on 3 or more distinct reads: the shrunk finding has
    exactly 3, and is no longer than the case first found."""
    def fake(case, *args, **kwargs):
        p = case.program
        failing = len(p.offsets()) >= 3
        return fz.Result("valid", fz.FAIL if failing else fz.PASS, "", 0.0,
                         fz.render(p).text, ("an5d verify case.c",), 1)
    monkeypatch.setattr(fz, "run_valid", fake)
    report = fz.run_stream(fz.StreamConfig("valid", 20, seed=3, shrink_seconds=10,
                                           max_findings=1))
    assert report.findings
    first, shrunk = report.findings[0]
    assert shrunk.outcome == fz.FAIL
    assert len(shrunk.source) <= len(first.source)
    assert len(set(re.findall(r"A\[[^=]*?\](?=\s*[-+*/);,]|$)", shrunk.source))) >= 3
    assert shrunk.source.count("\n") <= first.source.count("\n")


def test_a_candidate_stopped_by_the_end_of_the_shrinking_time_is_no_finding(monkeypatch):
    """Shrinking a FAIL, the candidates run for the shrinking time left: one stopped by it
    timed out through no fault of its own, and the finding stays the FAIL (it was reported
    as a TIMEOUT of a program that runs in half a second)."""
    config = fz.StreamConfig("valid", 20, seed=3, shrink_seconds=10, max_findings=1)

    def fake(case, backend, exact, timeout):
        reads = len(case.program.offsets())
        outcome = (fz.PASS if reads < 3 else
                   fz.TIMEOUT if reads == 3 and timeout < config.timeout else fz.FAIL)
        return fz.Result("valid", outcome, "", 0.0, fz.render(case.program).text,
                         ("an5d verify case.c",), 1)
    monkeypatch.setattr(fz, "run_valid", fake)
    report = fz.run_stream(config)
    assert report.findings
    first, shrunk = report.findings[0]
    assert first.outcome == shrunk.outcome == fz.FAIL
    assert len(set(re.findall(r"A\[[^=]*?\](?=\s*[-+*/);,]|$)", shrunk.source))) >= 4


def test_wild_updates_read_no_nan_sign_and_tame_ones_do():
    """copysign turns a NaN's sign, which C leaves open, into a number: only tame updates
    (no NaN) have it."""
    assert "copysign" not in fz.BINARY_MATH and "copysign" in fz.TAME_BINARY
    assert {"pow", "atan2", "fmod"} <= set(fz.BINARY_MATH)


def _stream_or_die(config):
    """run_stream's stand-in for the campaign test below: the chunk of seed 2 kills its
    worker process, the others report their cases passed."""
    if config.seed == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return fz.StreamReport(results=[fz.Result(config.kind, fz.PASS, "", 0.0, "")
                                    for _ in range(config.count)])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the campaign's workers are forked here")
def test_a_worker_that_dies_is_a_crash_finding_and_the_campaign_goes_on(monkeypatch):
    monkeypatch.setattr(fz, "run_stream", _stream_or_die)  # forked workers inherit it
    configs = [fz.StreamConfig("valid", 3, seed) for seed in range(6)]
    report = fz.run_campaign(configs, jobs=2)
    crashes = [r for r in report.results if r.outcome == fz.CRASH]
    assert len(crashes) >= 1 and all("chunk seed" in r.detail for r in crashes)
    assert any("chunk seed 2 (" in r.detail for r in crashes)
    assert [first.outcome for first, _ in report.findings] == [fz.CRASH] * len(crashes)
    # the chunks the broken pool did not take down ran to the end
    passed = sum(r.outcome == fz.PASS for r in report.results)
    assert passed + 3 * len(crashes) == 18


@pytest.mark.parametrize("kind", ["valid", "coupled", "malformed"])
def test_chunks_of_one_case_each_draw_a_case_of_their_own(kind):
    """Hypothesis draws a strategy's simplest value first whatever the seed; the streams and
    examples() leave it out, or a campaign of one-case chunks (the GPU's --chunk 1) would
    run one program and plan over and over (it did: 400 identical coupled cases)."""
    sources = {fz.run_stream(fz.StreamConfig(kind, 1, seed)).results[0].source
               for seed in range(5)}
    assert len(sources) == 5
    strategy = fz.coupled_cases() if kind == "coupled" else fz.valid_cases()
    drawn = [repr(fz.examples(strategy, 1, seed)) for seed in range(5)]
    assert len(set(drawn)) == 5


def test_bounded_campaign_finds_nothing(tmp_path, capsys, monkeypatch):
    """The default suite's campaign: every outcome a PASS (valid) or a REFUSED (malformed);
    the summary table is printed last. Its valid programs include the newer forms (read-only
    arrays, 3 time buffers, level t-1 read at the cell), and so do its malformed ones."""
    ran, run_valid, run_malformed = [], fz.run_valid, fz.run_malformed

    def recording_valid(case, *args, **kwargs):
        ran.append(case.program)
        return run_valid(case, *args, **kwargs)

    def recording_malformed(case, *args, **kwargs):
        ran.append(case.kind)
        return run_malformed(case, *args, **kwargs)
    monkeypatch.setattr(fz, "run_valid", recording_valid)  # --jobs 1: in this process
    monkeypatch.setattr(fz, "run_malformed", recording_malformed)
    status = fz.main(["--valid", "24", "--malformed", "40", "--seed", "20",
                      "--chunk", "12", "--out", str(tmp_path), "--shrink-seconds", "20"])
    out = capsys.readouterr().out
    table = out[out.index("kind  cases"):]
    assert status == 0, out
    programs = [p for p in ran if isinstance(p, fz.Program)]
    assert any(p.coefs for p in programs)
    assert any(p.buffers == 3 for p in programs)
    assert any(p.history() == 2 for p in programs)
    new_kinds = {"coef_out_of_bounds", "coef_indirect", "coef_subscript", "too_many_levels"}
    assert new_kinds & set(ran)
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:3]}
    header = table.splitlines()[0].split()
    for kind, good, total in (("valid", "PASS", 24), ("malformed", "REFUSED", 40)):
        row = dict(zip(header, rows[kind]))
        assert int(row["cases"]) == total
        assert int(row[good]) == total, table
    assert "0 finding(s)" in out


def test_a_passing_case_records_the_plans_it_verified_and_the_summary_counts_them(tmp_path):
    """Each verified plan's options go to the result (and the --log), so a campaign can say
    which plan dimensions it reached; the summary counts them by option value."""
    case = fz.examples(fz.valid_cases(), 1, seed=11)[0]
    result = fz.run_valid(case)
    assert result.outcome == fz.PASS, result.detail
    assert len(result.plans) == result.checks == len(case.plans)
    assert all(p.startswith("--bt ") and " --bs " in p for p in result.plans)
    made = [fz.Result("valid", fz.PASS, "", 0.1, "", (), 2,
                      plans=("--bt 2 --bs 64 --coarsen 2 --idle compute",
                             "--bt 1 --bs 64 --opt none --coarsen 4")),
            fz.Result("coupled", fz.PASS, "", 0.1, "", (), 1,
                      plans=("--bt 3 --bs 40 --opt nondiag --coarsen 2 --barriers step",))]
    assert fz.plan_dimensions(made) == [
        ("opt=nondiag", 1), ("opt=none", 1), ("coarsen=2", 2), ("coarsen=4", 1),
        ("barriers=step", 1), ("idle=compute", 1)]
    text = fz.summary(fz.StreamReport(made, []), 1.0, [])
    assert "plans verified with: opt=nondiag 1, opt=none 1, coarsen=2 2" in text
    # a log written before results carried plans still reads
    entry = {k: v for k, v in asdict(made[0]).items() if k != "plans"}
    assert fz._result_of(entry).plans == ()


def test_findings_are_written_with_their_commands(tmp_path):
    shrunk = fz.Result("valid", fz.FAIL, "FAIL | max abs error: 1", 0.1, "int x;\n",
                       ("an5d verify case.c --backend sim --bt 2",))
    report = fz.StreamReport([shrunk], [(shrunk, shrunk)])
    written = fz.write_findings(report, tmp_path)
    text = fz.summary(report, 1.0, written)
    c_file = tmp_path / "00_fail.c"
    assert c_file.read_text() == "int x;\n"
    assert f"an5d verify {c_file} --backend sim --bt 2" in text
    assert "FAIL" in (tmp_path / "00_fail.sh").read_text()


def test_plan_falls_back_to_the_smallest_block_when_the_drawn_one_does_not_fit():
    # Seen in a long run: radius 4 in 3D, double, mode none; the drawn 14x73 block needs
    # 256,608 bytes of shared memory, but the smallest bT 1 block (9x9) fits.
    from an5dpy import driver
    from an5dpy.blocking.plan import make_plan, parse_block_size
    from paths import C_INPUTS
    _, info = driver.load(os.path.join(C_INPUTS, "box3d4r.c"), (("SB_TYPE", "double"),))
    draw = fz.PlanDraw(bt=1, bs_extra=(5, 64), sl=None, mode=1)
    plan = fz.resolve_plan(draw, info)
    assert (plan.bt, plan.bs, plan.opt) == (1, "9x9", "none")
    make_plan(info, bt=1, bs=parse_block_size(plan.bs, 3), sl=None, opt="none")


def test_a_logged_campaign_resumes_where_it_stopped(tmp_path, capsys, monkeypatch):
    log = tmp_path / "log.jsonl"
    args = ["--valid", "0", "--malformed", "6", "--seed", "3", "--chunk", "3",
            "--out", str(tmp_path), "--log", str(log)]
    assert fz.main(args) == 0
    first = capsys.readouterr().out
    assert len(log.read_text().splitlines()) == 2  # one line per finished chunk
    ran = []
    monkeypatch.setattr(fz, "run_stream", lambda config: ran.append(config))
    assert fz.main(args) == 0  # every chunk is in the log: nothing runs again
    again = capsys.readouterr().out
    assert ran == []
    assert first[first.index("kind  cases"):].splitlines()[:2] == \
        again[again.index("kind  cases"):].splitlines()[:2]


# --------------------------------------------------------------------------- coupled programs


def _coupled_features(p) -> set[str]:
    """The forms one generated time step of several statements uses."""
    out = {f"{p.ndim}d", p.dtype, f"{len(p.fields)} fields",
           "one nest" if len(p.nests) == 1 else "several nests"}
    out |= {f"field form:{f.form}" for f in p.fields}
    if len({tuple((d.lower, d.margin) for d in n.dims) for n in p.nests}) > 1:
        out.add("nests with their own bounds")
    if any(len(n.body) > 1 for n in p.nests) and len(p.nests) > 1:
        out.add("several nests, one of several statements")
    buffered = {f.buffered for f in p.fields}
    out.add("buffered and in place" if len(buffered) == 2 else
            "all double-buffered" if True in buffered else "all in place")
    out.add(f"{min(len(p.substeps()), 3)} sub-steps")
    statements = p.assignments()
    writer = {a.field: k for k, (_, a) in enumerate(statements)}
    for s, (n, a) in enumerate(statements):
        for r in fz.leaves_of(a.update):
            if not isinstance(r, fz.FieldRead):
                continue
            w = writer[r.field]
            wn = statements[w][0]
            if r.new and wn < n and any(r.offset):
                out.add("new value at an offset, from an earlier nest")
            if r.new and wn == n:
                out.add("new value in the same nest, before the cell" if any(r.offset)
                        else "new value in the same nest, at the cell")
            if not r.new and w > s:
                out.add("old value of a later statement")
            if not r.new and w < s:
                out.add("old value of an earlier statement of the sub-step")
            if not r.new and w == s and any(r.offset):
                out.add("own old value at an offset")
            if 2 in map(abs, r.offset):
                out.add("radius 2")
            if sum(1 for c in r.offset if c) > 1:
                out.add("diagonal offset")
            if r.shift is not None and r.shift not in (p.write_shift, p.write_shift - 1):
                out.add("other time subscript constant")
    if p.coefs:
        out.add("read-only arrays")
    if p.scalars:
        out.add("scalar parameter")
    if all(d.extent_param is None for d in p.dims):
        out.add("constant sizes")
    values = dict(p.size_values)
    extents = [(values[d.extent_param] if d.extent_param else 0) + d.extent_const
               for d in p.dims]
    if min(extents) <= 2:
        out.add("tiny grid")
    if any(e % 2 for e in extents):
        out.add("odd extent")
    out.add("0 steps" if p.steps == 0 else "7 steps" if p.steps == 7 else "1-6 steps")
    if p.time_start:
        out.add("time start > 0")
    text = fz.render(p).text
    if re.search(r"\b(ex|ey|hz|u|v|w|p|q)\[[^=;]*\] = \1\[[^;]*\] - [\d.]+ \* \(", text):
        out.add("difference form")
    return out


EXPECTED_COUPLED_FEATURES = {
    "2d", "3d", "float", "double", "2 fields", "3 fields", "4 fields", "one nest",
    "several nests", *(f"field form:{f}" for f in fz.FIELD_FORMS),
    "nests with their own bounds", "several nests, one of several statements",
    "buffered and in place", "all double-buffered", "all in place",
    "1 sub-steps", "2 sub-steps", "3 sub-steps",
    "new value at an offset, from an earlier nest", "new value in the same nest, before the cell",
    "new value in the same nest, at the cell", "old value of a later statement",
    "old value of an earlier statement of the sub-step", "own old value at an offset",
    "radius 2", "diagonal offset", "other time subscript constant", "read-only arrays",
    "scalar parameter", "constant sizes", "tiny grid", "odd extent", "0 steps", "7 steps",
    "1-6 steps", "time start > 0", "difference form",
}


def test_coupled_generator_covers_its_forms():
    seen: Counter = Counter()

    @settings(max_examples=150, **QUICK)
    @given(fz.coupled_programs())
    def collect(p):
        seen.update(_coupled_features(p))
    for s in (1, 2):
        seed(s)(collect)()
    missing = EXPECTED_COUPLED_FEATURES - set(seen)
    assert not missing, f"the coupled generator never produced: {sorted(missing)}"


def test_the_analysis_agrees_with_the_coupled_generator(tmp_path):
    """an5dpy's analysis of each rendered program accepts it and sees what the generator
    drew: the fields and which are in place, the sub-steps (so every read takes the value,
    this step's or the previous one's, the generator meant), the offsets read and the
    read-only arrays."""
    from an5dpy import driver

    @seed(41)
    @settings(max_examples=40, **QUICK)
    @given(fz.coupled_programs())
    def check(p):
        path = tmp_path / "case.c"
        path.write_text(fz.render(p).text)
        _, info = driver.load(str(path))
        assert {f.name: f.in_place for f in info.fields} == \
            {f.name: not f.buffered for f in p.fields}
        assert tuple(sub.statements for sub in info.substeps) == p.substeps()
        assert sorted(info.offsets) == p.offsets()
        assert sorted(c.name for c in info.coefficients) == sorted(c.name for c in p.coefs)
    check()


def test_coupled_programs_verify_bit_identical_on_the_simulator():
    """Random time steps of several statements, each with 1-3 random plans, against gcc:
    every plan bit-identical on the simulator (run_valid requires it in modes nondiag and
    none), double-buffered fields whose nests stop short of the box around all nests
    included (each buffer keeps its own values at the cells such a field never writes)."""
    results = []

    @seed(17)
    @settings(max_examples=80, **QUICK)
    @given(fz.coupled_cases())
    def check(case):
        r = fz.run_valid(case)
        results.append(r)
        assert r.outcome == fz.PASS, (r.detail, r.source, r.commands)
        assert r.checks == len(case.plans)
    check()
    assert len(results) >= 60 and sum(r.checks for r in results) >= 100


@pytest.mark.parametrize("kind", sorted(fz.COUPLED_MUTATIONS))
def test_each_coupled_mutation_is_refused_at_the_read(kind):
    """an5d analyze refuses the added read with exit 2, at its line, saying why."""
    results = []

    @seed(7)
    @settings(max_examples=10, **QUICK)
    @given(fz.coupled_malformed_cases((kind,)))
    def check(case):
        r = fz.run_malformed(case)
        results.append(r)
        assert r.outcome == fz.REFUSED, (r.outcome, r.detail, r.source)
        assert re.match(rf"case\.c:{case.mutated_line}:\d+: error: ", r.detail), \
            (case.mutated_line, r.detail, r.source)
        assert fz.COUPLED_MUTATIONS[kind].phrase in r.detail, r.detail
    check()
    assert results


def test_plans_of_coupled_programs_keep_the_drawn_block():
    """A drawn block is kept with the largest bT whose halo (2 bT s r per side, s
    sub-steps) leaves it a compute region; only a block too small even for bT 1 gives way
    to the smallest block."""
    from an5dpy import driver
    from paths import REPO
    _, info = driver.load(os.path.join(REPO, "tests", "data", "multi", "fdtd_2d.c"))
    assert len(info.substeps) == 2 and info.radius[1:] == (1,)
    plan = fz.resolve_plan(fz.PlanDraw(3, (0,), None, 0, bs=(12,)), info)
    assert (plan.bt, plan.bs) == (2, "12")  # 2*3*2*1 = 12 leaves nothing; 2*2*2 = 8 does
    plan = fz.resolve_plan(fz.PlanDraw(3, (0,), None, 0, bs=(4,)), info)
    assert (plan.bt, plan.bs) == (3, "13")  # no bT fits 4 threads: bT 3's smallest block


def test_drawn_cells_per_thread_round_the_block_or_give_way():
    """A plan drawn with several cells per thread rounds the outermost block size up to a
    multiple, and so does a time step of several statements."""
    from an5dpy import driver
    from paths import C_INPUTS, REPO
    _, star = driver.load(os.path.join(C_INPUTS, "star3d1r.c"), (("SB_TYPE", "float"),))
    plan = fz.resolve_plan(fz.PlanDraw(2, (3, 5), None, 0, coarsen=4), star)
    assert plan.coarsen == 4 and plan.bs == "10x8"  # 2*2*1+1 + (3, 5): 8 (a multiple), 10
    plan = fz.resolve_plan(fz.PlanDraw(2, (4, 5), None, 0, coarsen=4), star)
    assert plan.bs == "10x12"  # 9 rounded up to 12
    assert plan.flags()[-2:] == ["--coarsen", "4"] and plan.options().coarsen == 4
    _, fdtd = driver.load(os.path.join(REPO, "tests", "data", "multi", "fdtd_2d.c"))
    plan = fz.resolve_plan(fz.PlanDraw(2, (0,), None, 0, coarsen=2), fdtd)
    assert plan.coarsen == 2 and int(plan.bs) % 2 == 0


def test_coupled_plans_draw_one_barrier_per_step_where_the_mode_takes_it():
    """A coupled case's plans draw one barrier per step now and then; resolve_plan keeps it
    in mode nondiag and falls back to one barrier per level in mode none."""
    from an5dpy import driver
    from paths import REPO
    _, fdtd = driver.load(os.path.join(REPO, "tests", "data", "multi", "fdtd_2d.c"))
    stepped = fz.resolve_plan(fz.PlanDraw(2, (0,), None, 0, bs=(16,), step=True), fdtd)
    assert (stepped.opt, stepped.barriers) == ("nondiag", "step")
    assert stepped.flags()[-2:] == ["--barriers", "step"]
    none = fz.resolve_plan(fz.PlanDraw(2, (0,), None, 1, bs=(16,), step=True), fdtd)
    assert (none.opt, none.barriers) == ("none", "level")
    drawn = set()

    @seed(3)
    @settings(max_examples=40, **QUICK)
    @given(fz.coupled_plan_draws(2))
    def check(draw):
        drawn.add(draw.step)
    check()
    assert drawn == {False, True}


def test_bounded_coupled_campaign_finds_nothing(tmp_path, capsys):
    status = fz.main(["--valid", "0", "--malformed", "0", "--coupled", "6",
                      "--coupled-malformed", "8", "--seed", "4", "--chunk", "4",
                      "--no-short-buffered", "--out", str(tmp_path),
                      "--shrink-seconds", "20"])
    out = capsys.readouterr().out
    table = out[out.index("kind  cases"):]
    assert status == 0, out
    header = table.splitlines()[0].split()
    rows = {line.split()[0]: dict(zip(header, line.split())) for line in table.splitlines()[1:3]}
    assert rows["coupled"]["PASS"] == rows["coupled"]["cases"] == "6", table
    assert rows["coupled-malformed"]["REFUSED"] == rows["coupled-malformed"]["cases"] == "8"
    assert "0 finding(s)" in out


def test_examples_are_the_same_for_the_same_seed():
    first = fz.examples(fz.coupled_cases(), 4, seed=3)
    assert len(first) == 4 and first == fz.examples(fz.coupled_cases(), 4, seed=3)
    assert first != fz.examples(fz.coupled_cases(), 4, seed=4)


def test_a_timeout_inside_the_parser_stays_a_timeout(monkeypatch):
    """The parser turns pycparser's own failures (any Exception) into syntax errors; the
    alarm of a case's time limit must pass through it as the timeout it is."""
    from pycparser import c_parser

    def slow(*args, **kwargs):
        raise fz.CaseTimeout("over 0.1 s")

    monkeypatch.setattr(c_parser.CParser, "parse", slow)
    from an5dpy.frontend import read_program_text
    with pytest.raises(fz.CaseTimeout):
        read_program_text("int main(void) { return 0; }\n", "x.c", (), ())


def test_drawn_warp_shuffles_take_a_one_warp_block_where_the_plan_allows_them():
    from an5dpy import driver
    from paths import C_INPUTS
    _, star = driver.load(os.path.join(C_INPUTS, "star2d2r.c"), (("SB_TYPE", "float"),))
    plan = fz.resolve_plan(fz.PlanDraw(17, (0,), None, 0, coarsen=1, shuffle=True), star)
    # 2 cells per thread where one was drawn: 64 cells, so bT 17 and 16 leave no compute
    # region (2 bT r >= 64) and bT 15 is the largest that fits
    assert (plan.bt, plan.bs, plan.coarsen, plan.barriers) == (15, "64", 2, "shuffle")
    assert plan.flags()[-2:] == ["--barriers", "shuffle"]
    _, box = driver.load(os.path.join(C_INPUTS, "box2d1r.c"), (("SB_TYPE", "float"),))
    # mode assoc (the first legal mode): no shuffles, one barrier per level
    assert fz.resolve_plan(fz.PlanDraw(2, (0,), None, 0, shuffle=True), box).barriers == "level"


def test_a_drawn_loaded_halo_takes_bt_1_and_a_compute_region_of_the_extra_threads():
    from an5dpy import driver
    from paths import C_INPUTS
    _, star = driver.load(os.path.join(C_INPUTS, "star3d2r.c"), (("SB_TYPE", "float"),))
    plan = fz.resolve_plan(fz.PlanDraw(5, (4, 30), 3, 0, coarsen=2, load_halo=True), star)
    # compute region 6 (5 rounded up to 2 cells) x 31, the tile adding the radius 2 each side
    assert (plan.bt, plan.bs, plan.coarsen, plan.halo, plan.sl) == (1, "35x10", 2, "loaded", 3)
    assert plan.flags()[-2:] == ["--halo", "loaded"]
    assert plan.options().halo == "loaded"
    # 2D, or mode none: the plan as it would be without the draw
    _, star2 = driver.load(os.path.join(C_INPUTS, "star2d1r.c"), (("SB_TYPE", "float"),))
    drawn = fz.PlanDraw(2, (0,), None, 0, load_halo=True)
    assert fz.resolve_plan(drawn, star2) == fz.resolve_plan(replace(drawn, load_halo=False),
                                                             star2)
    _, box = driver.load(os.path.join(C_INPUTS, "box3d1r.c"), (("SB_TYPE", "float"),))
    assert fz.legal_modes(box) == ["assoc", "none"]
    assert fz.resolve_plan(fz.PlanDraw(2, (0, 0), None, 1, load_halo=True), box).halo == \
        "threads"
    # mode assoc takes it (its sums in the kernel that loads the halo)
    summed = fz.resolve_plan(fz.PlanDraw(2, (6, 62), None, 0, load_halo=True), box)
    assert (summed.bt, summed.bs, summed.opt, summed.halo) == (1, "65x9", "assoc", "loaded")


def test_the_build_backend_builds_the_kernels_verify_would_run(tmp_path):
    """--backend build: a plan's kernels through nvcc as verify --backend cuda chooses and
    builds them (skipped without nvcc); the flat box's loaded kernel in mode assoc is the
    build nvcc once refused (an5d_p0 undeclared), found this way."""
    from an5dpy.cuda.runtime import nvcc_path
    from an5dpy.driver import Options
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    path = os.path.join(DATA, "forms", "flat_box3d.c")
    fz.build_kernels_of(path, Options(bt=1, bs="12x12", sl="5", opt="assoc", coarsen=2,
                                      halo="loaded"), {"n": "20", "T": "3"}, True)


def test_a_kernel_nvcc_refuses_is_a_crash_of_the_build_backend(monkeypatch):
    from an5dpy.errors import CudaCompileError
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise CudaCompileError("nvcc failed (exit 1): case_kernel.cu(207): error")
    monkeypatch.setattr(fz, "build_kernels_of", refuse)
    case = fz.examples(fz.valid_cases(), 1, seed=5)[0]
    r = fz.run_valid(case, fz.BUILD, True)
    if calls:  # the program was accepted: its first plan's build failed
        assert r.outcome == fz.CRASH and "build: CudaCompileError" in r.detail
