"""scripts/hand_edits.py without a GPU: its edits of real generated kernels (written through
its --write, of a 3D case, a coarsened 2D one and a coarsened double one): every inner
loop's level-0 loads and nothing else changed, the queues of the kernel's element type, the
shared-memory queue's copies, waits and reads run as cp.async may run them, the persistent
blocks' loop around each kernel's body, the edited files built by nvcc; the refusal of
texts the edits do not fit, the folders and manifest --write leaves, the bit-for-bit
comparison, the table and the command line; on a GPU (marker gpu), a tiny --run."""

from __future__ import annotations

import concurrent.futures
import json
import os
import re

import numpy as np
import pytest

from script_support import load_script

hand_edits = load_script("hand_edits")
ab_compare = load_script("ab_compare")

CASE_3D = "star3d1r float bt=4 bs=32x32 sl=128"
CASE_2D = "star2d1r float bt=4 bs=256 sl=64 coarsen=2"
CASE_DOUBLE = "star3d1r double bt=2 bs=32x32 sl=64 coarsen=2 regs=64"
CASES = (CASE_3D, CASE_2D, CASE_DOUBLE)
EDITS = ("prefetch-registers:1", "prefetch-registers:3", "prefetch-l2:2")
#: The shared-memory queue's edits and the persistent blocks' (of every case too; the
#: table's test keeps to EDITS).
ASYNC_EDITS = ("prefetch-async:1", "prefetch-async:2")
PERSISTENT_EDITS = ("persistent:2",)
MORE_EDITS = ASYNC_EDITS + PERSISTENT_EDITS

#: A level-0 load of the inner phase (the prologue's take constant planes, the head's and
#: tail's are G_LOADs).
PLAIN_LEVEL0_LOAD = re.compile(r"(?<!G_)LOAD\(an5d_reg_0_\w+, an5d_step \+ \d+\)")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The cases' kernels and each edit's copy, as --write leaves them."""
    out = str(tmp_path_factory.mktemp("hand_edits"))
    assert hand_edits.main(["--write", out,
                            *(a for e in EDITS + MORE_EDITS for a in ("--edit", e)),
                            *CASES]) == 0
    return out


def kernel_text(out: str, folder: str, case: str) -> str:
    with open(hand_edits.kernel_file(os.path.join(out, folder), case)) as f:
        return f.read()


def undo_prefetch_registers(text: str, depth: int) -> tuple[str, int]:
    """The edited text with every served load and every queue block taken back, and how
    many loads were served (each from the queue's head, its tail loading ``depth`` ahead)."""
    def load_again(m: re.Match) -> str:
        assert m.group("moves").count(" = ") == depth - 1  # the queue shifts by one
        plane = int(m.group("ahead")) - depth
        load = f"LOAD({m.group('reg')}, an5d_step + {plane})"
        return f"{m.group('macro') or ''}{load}{m.group('close')};"
    served = re.compile(
        r"(?P<macro>AN5D_CELL\d+\()?(?P<reg>an5d_reg_0_\w+) = an5d_prefetch_0\w*; "
        r"(?P<moves>(?:an5d_prefetch_\w+ = an5d_prefetch_\w+; )*)"
        rf"LOAD\(an5d_prefetch_{depth - 1}\w*, min\(an5d_step \+ (?P<ahead>\d+), "
        r"an5d_last_load\)\)(?P<close>\)?);")
    text, loads = served.subn(load_again, text)
    block = re.compile(r"\{\n([ \t]*)/\* hand edit prefetch-registers:\d+: [^\n]*\*/\n"
                       r"(?:\1[^\n]*an5d_prefetch_[^\n]*\n)+\1(for \(; an5d_step .*?\n\1\})\n\1\}",
                       re.S)
    return block.sub(r"\2", text), loads


def undo_prefetch_l2(text: str, depth: int) -> tuple[str, int]:
    """The edited text without its L2 prefetches, and how many there were (each of the plane
    ``depth`` ahead of the load it follows)."""
    def load_alone(m: re.Match) -> str:
        assert int(m.group(3)) == int(m.group(2)) + depth
        return f"LOAD({m.group(1)}, an5d_step + {m.group(2)})"
    prefetched = re.compile(
        r"LOAD\((an5d_reg_0_\w+), an5d_step \+ (\d+)\); if \(an5d_in_array\) asm volatile\("
        r"\"prefetch\.global\.L2 \[%0\];\" :: \"l\"\(an5d_p_ld \+ AN5D_PLANE\("
        r"min\(an5d_step \+ (\d+), an5d_last_load\)\)\)\)")
    return prefetched.subn(load_alone, text)


@pytest.mark.parametrize("case", CASES)
def test_the_register_queues_serve_every_inner_loop_load_and_change_nothing_else(
        written, case):
    base = kernel_text(written, "base", case)
    loads = len(PLAIN_LEVEL0_LOAD.findall(base))
    loops = len(hand_edits.INNER_LOOP.findall(base))
    assert loads > 0 and loops > 0
    cells = 2 if "coarsen=2" in case else 1
    element = "double" if " double " in case else "float"
    for depth in (1, 3):
        edited = kernel_text(written, f"prefetch-registers-{depth}", case)
        assert PLAIN_LEVEL0_LOAD.findall(edited) == []  # none left unserved
        undone, served = undo_prefetch_registers(edited, depth)
        assert (served, undone) == (loads, base)
        # a queue of `depth` registers per cell in every loop, of the kernel's element type,
        # each filled before the loop (clamped, like every load ahead)
        declared = re.findall(r"(\w+) an5d_prefetch_\d+(?:_x\d+)?;", edited)
        assert declared == [element] * (depth * cells * loops)
        fills = re.findall(
            r"LOAD\(an5d_prefetch_\w+, min\(an5d_step \+ \d+, an5d_last_load\)\)\)?;\n", edited)
        assert len(fills) == depth * cells * loops + loads


@pytest.mark.parametrize("case", CASES)
def test_the_l2_prefetch_follows_every_inner_loop_load_and_changes_nothing_else(written, case):
    base = kernel_text(written, "base", case)
    edited = kernel_text(written, "prefetch-l2-2", case)
    loads = len(PLAIN_LEVEL0_LOAD.findall(base))
    assert len(PLAIN_LEVEL0_LOAD.findall(edited)) == loads
    assert edited.count("prefetch.global.L2") == loads
    assert undo_prefetch_l2(edited, 2) == (base, loads)


def test_the_l2_prefetch_of_a_coupled_kernel_covers_each_field(tmp_path):
    """A time step of several statements loads each field through its own pointer
    (``an5d_p_ld_f<k>``): each inner-loop load is followed by one prefetch per field, of
    the plane ``depth`` ahead, and nothing else changes."""
    case = "acousticvp3d float bt=1 bs=64x16 sl=64"
    out = str(tmp_path)
    assert hand_edits.main(["--write", out, "--edit", "prefetch-l2:3", case]) == 0
    base, edited = kernel_text(out, "base", case), kernel_text(out, "prefetch-l2-3", case)
    loads = len(PLAIN_LEVEL0_LOAD.findall(base))
    fields = sorted(set(re.findall(r"an5d_p_ld_f\d+", base)))
    assert loads > 0 and fields == [f"an5d_p_ld_f{k}" for k in range(4)]
    prefetch = re.compile(
        r"; if \(an5d_in_array\) asm volatile\(\"prefetch\.global\.L2 \[%0\];\" :: "
        r"\"l\"\((an5d_p_ld_f\d+) \+ AN5D_PLANE\(min\(an5d_step \+ (\d+), "
        r"an5d_last_load\)\)\)\)")
    found = prefetch.findall(edited)
    assert len(found) == loads * len(fields)
    assert sorted({f for f, _ in found}) == fields
    offsets = [int(o) for o in re.findall(r"(?<!G_)LOAD\(an5d_reg_0_\w+, an5d_step \+ (\d+)\)",
                                          edited)]
    assert [int(a) for _, a in found] == [o + 3 for o in offsets for _ in fields]
    assert prefetch.sub("", edited) == base


#: The shared-memory queue's statements in an edited text, in their order: a wait, a read
#: of a slot into a level-0 register, a copy of a plane into a slot, a commit.
ASYNC_EVENT = re.compile(
    r"__pipeline_wait_prior\((?P<wait>\d+)\);"
    r"|(?P<reg>an5d_reg_0_\w+) = an5d_aq\[\(unsigned\)\(an5d_step \+ (?P<read>\d+)\) "
    r"% (?P<rslots>\d+)u\]\[(?P<rcell>\d+)\]\[an5d_tid\];"
    r"|__pipeline_memcpy_async\(&an5d_aq\[\(unsigned\)\(an5d_step \+ (?P<copy>\d+)\) "
    r"% (?P<cslots>\d+)u\]\[(?P<ccell>\d+)\]\[an5d_tid\], an5d_p_ld \+ AN5D_PLANE\("
    r"min\(an5d_step \+ (?P<source>\d+), an5d_last_load\)\)"
    r"|(?P<commit>__pipeline_commit\(\))")
ASYNC_BLOCK = re.compile(
    r"\{\n([ \t]*)/\* hand edit prefetch-async:(\d+): [^\n]*\*/\n((?:\1[^\n]*\n)*?)"
    r"\1(for \(; an5d_step \+ (\d+) .*?\n\1\})\n"
    r"\1__pipeline_wait_prior\(0\);\n\1\}", re.S)


def simulate_async_queue(fill: str, loop: str, stride: int, iterations: int) -> int:
    """Run the queue's statements (the fill, then the loop's body ``iterations`` times,
    an5d_step growing by ``stride``) the way cp.async may, and check each read: a copy's
    bytes may land at any time from its issue until a wait covers its group, so a read is
    right only if its slot's last copy is of the plane it wants and its group is waited
    for, and a copy may only go to a slot whose plane has been read (or was never
    needed: copied before the loop's first plane). Returns the reads checked."""
    slots, groups, done, reads = {}, 0, 0, 0
    for t, text in [(None, fill)] + [(t, loop) for t in range(iterations)]:
        step = 0 if t is None else t * stride
        for m in ASYNC_EVENT.finditer(text):
            if m.group("wait") is not None:
                done = max(done, groups - int(m.group("wait")))
            elif m.group("read") is not None:
                plane, key = step + int(m.group("read")), (int(m.group("rcell")),
                                                           int(m.group("rslots")))
                last = slots[key + (plane % key[1],)]
                assert last["plane"] == plane and last["group"] < done, (t, m.group(0))
                last["read"] = True
                reads += 1
            elif m.group("copy") is not None:
                assert m.group("copy") == m.group("source")
                plane, n = step + int(m.group("copy")), int(m.group("cslots"))
                key = (int(m.group("ccell")), n, plane % n)
                # the slot's plane before must have been read, unless the loop never reads
                # it (a plane before the first the loop wants)
                assert key not in slots or slots[key]["read"], (t, m.group(0))
                slots[key] = {"plane": plane, "group": groups, "read": False}
            else:
                groups += 1
    return reads


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("edit", ASYNC_EDITS)
def test_the_shared_memory_queue_serves_every_inner_loop_load_in_time_and_changes_nothing_else(
        written, case, edit):
    base = kernel_text(written, "base", case)
    depth = hand_edits.Edit.parse(edit).depth
    edited = kernel_text(written, hand_edits.Edit.parse(edit).folder, case)
    loads = len(PLAIN_LEVEL0_LOAD.findall(base))
    assert PLAIN_LEVEL0_LOAD.findall(edited) == []  # none left unserved
    cells = 2 if "coarsen=2" in case else 1
    element = "double" if " double " in case else "float"
    blocks = list(ASYNC_BLOCK.finditer(edited))
    assert len(blocks) == len(hand_edits.INNER_LOOP.findall(base)) > 0
    served = 0
    for block in blocks:
        assert int(block.group(2)) == depth
        # a queue of depth + 1 slots per cell and thread of the block, of the element type
        threads = hand_edits.block_threads(edited, block.start())
        assert f"__shared__ {element} an5d_aq[{depth + 1}][{cells}][{threads}];" in block.group(3)
        for iterations in (1, 2, 5):
            reads = simulate_async_queue(block.group(3), block.group(4), int(block.group(5)),
                                         iterations)
            assert reads == iterations * len(ASYNC_EVENT.findall(block.group(4))) // 4
        served += len(re.findall(r"an5d_reg_0_\w+ = an5d_aq", block.group(4)))
    assert served == loads
    # each served load back to the LOAD it was, each block back to its loop: the base
    take = re.compile(
        r"__pipeline_wait_prior\(\d+\); "
        r"(an5d_reg_0_\w+) = an5d_aq\[\(unsigned\)\(an5d_step \+ (\d+)\) % \d+u\]"
        r"\[\d+\]\[an5d_tid\]; __pipeline_memcpy_async\([^\n]*?\); __pipeline_commit\(\)")
    include = "#include <cuda_pipeline.h>\n"
    assert edited.startswith(include)
    undone = take.sub(r"LOAD(\1, an5d_step + \2)",
                      ASYNC_BLOCK.sub(r"\4", edited[len(include):]))
    assert undone == base


def test_the_shared_memory_queue_is_refused_where_the_block_size_is_unknown(written):
    base = kernel_text(written, "base", CASE_3D)
    unbounded = re.sub(r"__launch_bounds__\(\d+\) ", "", base)
    with pytest.raises(hand_edits.EditError, match="no __launch_bounds__"):
        hand_edits.Edit.parse("prefetch-async:1").apply(unbounded)


#: What the persistent edit wraps each blocked kernel's body in (its head and its tail).
PERSISTENT_HEAD = re.compile(
    r"  /\* hand edit persistent:(\d+): [^\n]*\*/\n  unsigned an5d_sms;\n"
    r'  asm\("mov\.u32 %0, %%nsmid;" : "=r"\(an5d_sms\)\);\n'
    r"  const unsigned an5d_resident = (\d+)u \* an5d_sms;\n"
    r"  if \(blockIdx\.x >= an5d_resident\) return;\n"
    r"  for \(unsigned an5d_pb = blockIdx\.x; an5d_pb < gridDim\.x; "
    r"an5d_pb \+= an5d_resident\) \{\n")
PERSISTENT_TAIL = "  __syncthreads();\n  }\n}"


@pytest.mark.parametrize("case", CASES)
def test_persistent_blocks_take_the_launch_blocks_in_turn_and_change_nothing_else(written, case):
    base = kernel_text(written, "base", case)
    edited = kernel_text(written, "persistent-2", case)
    kernels = len(hand_edits.BLOCKED_KERNEL.findall(base))
    heads = PERSISTENT_HEAD.findall(edited)
    assert kernels > 1 and heads == [("2", "2")] * kernels
    # every block index read from the loop's, each kernel's body closed by a barrier
    assert edited.count("int an5d_bid = (int)an5d_pb;") == kernels
    assert hand_edits.BLOCK_INDEX not in edited
    assert edited.count(PERSISTENT_TAIL) == kernels
    undone = PERSISTENT_HEAD.sub("", edited).replace(PERSISTENT_TAIL, "}").replace(
        "int an5d_bid = (int)an5d_pb;", hand_edits.BLOCK_INDEX)
    assert undone == base


def test_persistent_blocks_are_refused_where_the_body_leaves_early_or_reads_no_block(written):
    base = kernel_text(written, "base", CASE_3D)
    edit = hand_edits.Edit.parse("persistent:1")
    early = base.replace(hand_edits.BLOCK_INDEX,
                         hand_edits.BLOCK_INDEX + " if (an5d_bid < 0) return;", 1)
    with pytest.raises(hand_edits.EditError, match="a return in its body"):
        edit.apply(early)
    without = base.replace(hand_edits.BLOCK_INDEX, "int an5d_bid = 0;", 1)
    with pytest.raises(hand_edits.EditError, match="an5d_star3d1r_kernel_d1: not one"):
        edit.apply(without)
    with pytest.raises(hand_edits.EditError, match="no blocked kernel"):
        edit.apply('extern "C" __global__ void f(float *a) { a[0] = 1; }\n')


def test_the_edited_kernels_build(written, tmp_path):
    from an5dpy.cuda.runtime import BuildOptions, compile_cubin, nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    paths = [hand_edits.kernel_file(os.path.join(written, hand_edits.Edit.parse(e).folder), c)
             for e in EDITS + MORE_EDITS for c in CASES]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        cubins = list(pool.map(lambda p: compile_cubin(p, BuildOptions(arch="sm_90"), tmp_path),
                               paths))
    for cubin in cubins:
        assert os.path.exists(cubin.path)
        assert cubin.kernels("_kernel_d")  # ptxas reported the blocked kernels


def test_write_leaves_base_and_each_edit_in_folders_of_their_own_and_the_manifest(written):
    slug = ab_compare.slug(CASE_DOUBLE)
    assert slug == "star3d1r_double_bt_2_bs_32x32_sl_64_coarsen_2_regs_64"
    for folder in ("base", "prefetch-registers-1", "prefetch-registers-3", "prefetch-l2-2",
                   "prefetch-async-1", "prefetch-async-2", "persistent-2"):
        assert sorted(os.listdir(os.path.join(written, folder, slug))) == [
            "star3d1r_host.cu", "star3d1r_kernel.cu", "star3d1r_kernel.hu"]
    with open(os.path.join(written, hand_edits.MANIFEST)) as f:
        assert json.load(f) == {"cases": list(CASES), "edits": list(EDITS + MORE_EDITS)}
    assert hand_edits.read_manifest(written) == (
        list(CASES), [hand_edits.Edit.parse(e) for e in EDITS + MORE_EDITS])
    # the base is what this checkout's driver generates for the case (the launches --run
    # makes are of its render model)
    from an5dpy.driver import generate
    _, info, plan, regs = ab_compare.plan_of(CASE_DOUBLE)
    assert generate(info, plan, "star3d1r", regs=regs).files()["star3d1r_kernel.cu"] == (
        kernel_text(written, "base", CASE_DOUBLE))


def test_an_edit_is_named_by_its_kind_and_depth():
    edit = hand_edits.Edit.parse("prefetch-registers:2")
    assert (edit.kind, edit.depth, edit.name, edit.folder) == (
        "prefetch-registers", 2, "prefetch-registers:2", "prefetch-registers-2")
    assert hand_edits.Edit.parse("prefetch-l2:4").folder == "prefetch-l2-4"
    for bad, why in (("prefetch-l3:1", "unknown edit"), ("prefetch-l2", "at least 1"),
                     ("prefetch-l2:0", "at least 1"), ("prefetch-l2:-1", "at least 1"),
                     ("prefetch-l2:x", "at least 1")):
        with pytest.raises(ValueError, match=why):
            hand_edits.Edit.parse(bad)


def test_a_text_the_edits_do_not_fit_is_refused(written):
    for name in ("prefetch-registers:1", "prefetch-l2:1"):
        edit = hand_edits.Edit.parse(name)
        with pytest.raises(hand_edits.EditError, match="no inner-phase loop"):
            edit.apply('extern "C" __global__ void f(float *a) { a[0] = 1; }\n')
    base = kernel_text(written, "base", CASE_3D)
    # a blocked kernel without an inner loop, the others with theirs
    first = base.index("an5d_plain_end; an5d_step += ")
    no_loop = base[:first] + "an5d_other_end; an5d_step += " + base[first + 29:]
    with pytest.raises(hand_edits.EditError,
                       match="kernel an5d_star3d1r_kernel_d1: no inner-phase loop"):
        hand_edits.Edit.parse("prefetch-l2:1").apply(no_loop)
    # a level-0 load of a shape the edits do not know
    inner_load = re.compile(r"(?<!G_)LOAD\(an5d_reg_0_1, an5d_step \+ 1\);")
    odd = inner_load.sub("LOAD(an5d_reg_0_1, an5d_step);", base, count=1)
    with pytest.raises(hand_edits.EditError, match="shape the edits do not know"):
        hand_edits.Edit.parse("prefetch-l2:1").apply(odd)
    # loads a queue cannot serve: not the planes in turn
    swapped = inner_load.sub("LOAD(an5d_reg_0_1, an5d_step + 2);", base, count=1)
    with pytest.raises(hand_edits.EditError, match="a queue of registers cannot serve them"):
        hand_edits.Edit.parse("prefetch-registers:1").apply(swapped)


def test_results_are_compared_bit_for_bit():
    a = np.array([1.0, np.nan, -0.0], dtype=np.float32)
    assert hand_edits.same_bits(a, a.copy())  # equal NaNs are equal
    assert not hand_edits.same_bits(a, np.array([1.0, np.nan, 0.0], dtype=np.float32))
    payload = a.copy()
    payload.view(np.uint32)[1] += 1  # another NaN
    assert np.isnan(payload[1]) and not hand_edits.same_bits(a, payload)
    assert not hand_edits.same_bits(a, a.astype(np.float64))
    assert not hand_edits.same_bits(a, a[:2])


def test_the_table_gives_the_base_and_each_edit_over_it():
    edits = [hand_edits.Edit.parse(e) for e in EDITS]
    row = {"case": CASE_3D,
           "gflops": {"base": [100.0, 200.0], "prefetch-registers:1": [210.0, 220.0],
                      "prefetch-registers:3": [150.0, 190.0]},
           "same": {"prefetch-registers:1": True, "prefetch-registers:3": False},
           "registers": {"base": [32, False], "prefetch-registers:1": [40, False],
                         "prefetch-registers:3": [64, True]},
           "failed": {"prefetch-l2:2": "nvcc failed (exit 1)"}}
    lines = hand_edits.render([row], edits).splitlines()
    assert lines[0] == ("| case | base GFLOP/s (registers) "
                        "| prefetch-registers:1 / base (registers) "
                        "| prefetch-registers:3 / base (registers) "
                        "| prefetch-l2:2 / base (registers) |")
    assert lines[-1] == (f"| {CASE_3D} | 200 (32) | 1.100 (40) | 0.950 WRONG (64s) | "
                         "does not build |")
    unbuilt = {"case": CASE_2D, "gflops": {}, "same": {}, "registers": {},
               "failed": {"base": "nvcc failed"}}
    assert hand_edits.render([unbuilt], edits).splitlines()[-1] == (
        f"| {CASE_2D} | does not build | - | - | - |")


@pytest.mark.parametrize("argv, message", [
    ([], "one of the arguments --write --run is required"),
    (["--write", "D", "--run", "D"], "not allowed with"),
    (["--write", "D", CASE_3D], "--write needs at least one --edit"),
    (["--write", "D", "--edit", "prefetch-l2:1"], "--write needs at least one CASE"),
    (["--write", "D", "--edit", "prefetch-l2:0", CASE_3D], "at least 1"),
    (["--write", "D", "--edit", "prefetch-l9:1", CASE_3D], "unknown edit"),
    (["--write", "D", "--edit", "prefetch-l2:1", "--edit", "prefetch-l2:1", CASE_3D],
     "an edit is given twice"),
    (["--write", "D", "--edit", "prefetch-l2:1", "star3d1r float cells=2"], "unknown settings"),
    (["--write", "D", "--edit", "prefetch-l2:1", "star3d1r"], "case 'star3d1r'"),
    (["--run", "D", CASE_3D], "--run takes its cases and edits from DIR/hand_edits.json"),
    (["--run", "D", "--edit", "prefetch-l2:1"], "--run takes its cases"),
    (["--run", "D", "--repeats", "0"], "is not an integer of at least 1"),
])
def test_the_command_line_refuses_what_it_cannot_do(argv, message, capsys):
    with pytest.raises(SystemExit) as exit:
        hand_edits.main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_run_wants_a_folder_that_write_has_written(tmp_path):
    with pytest.raises(SystemExit, match="hand_edits.json not found: write DIR with --write"):
        hand_edits.main(["--run", str(tmp_path)])


def test_run_builds_checks_and_times_every_variant_of_a_case_with_a_fake_gpu(
        tmp_path, monkeypatch, capsys):
    """--run's own work without a GPU: the kernels built by nvcc for real, the runner and
    the timing faked (the L2 edit's result made to differ in one bit), the rows and table
    it makes of them."""
    import an5dpy.cuda.runtime as runtime
    if runtime.nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    artifact = load_script("artifact")  # the module --run imports

    class FakeRunner:
        def __init__(self, info, plan, cubin, prefix, signature):
            self.cubin = cubin

        def run(self, grid, env, read_only):
            grid += 1
            if "prefetch-l2" in self.cubin.path:
                grid.view(np.uint32)[0, 0, 0] ^= 1

    def fake_time(bench, info, plan, built, env):
        return (110.0 if "prefetch" in built[1].path else 100.0), 0.1, 20, 32, False

    monkeypatch.setattr(runtime, "CupyRunner", FakeRunner)
    monkeypatch.setattr(runtime, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(runtime, "device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(artifact.Bench, "grid",
                        lambda bench, info, env, dtype: (np.ones((2, 4, 4), np.float32), ()))
    monkeypatch.setattr(artifact.Bench, "time", fake_time)
    out, jsonl = str(tmp_path / "kernels"), str(tmp_path / "rows.jsonl")
    case = "star2d1r float bt=2 bs=256 sl=64"
    assert hand_edits.main(["--write", out, "--edit", "prefetch-registers:1",
                            "--edit", "prefetch-l2:1", case]) == 0
    capsys.readouterr()
    assert hand_edits.main(["--run", out, "--repeats", "2", "--out", jsonl]) == 1  # WRONG
    printed = capsys.readouterr()
    assert printed.err == ""  # DIR's base is what this checkout generates
    with open(jsonl) as f:
        (row,) = [json.loads(line) for line in f]
    assert row == {"case": case,
                   "gflops": {"base": [100.0] * 2, "prefetch-registers:1": [110.0] * 2,
                              "prefetch-l2:1": [110.0] * 2},
                   "same": {"prefetch-registers:1": True, "prefetch-l2:1": False},
                   "registers": {name: [32, False]
                                 for name in ("base", "prefetch-registers:1", "prefetch-l2:1")},
                   "failed": {}}
    assert printed.out.splitlines()[0] == json.dumps(row)
    assert "NVIDIA H200" in printed.out
    assert printed.out.rstrip().splitlines()[-1] == (
        f"| {case} | 100 (32) | 1.100 (32) | 1.100 WRONG (32) |")


@pytest.mark.gpu
def test_run_checks_and_times_a_case_and_its_edit_on_the_gpu(tmp_path, capsys):
    out, jsonl = str(tmp_path / "kernels"), str(tmp_path / "rows.jsonl")
    case = "star2d1r float bt=2 bs=256 sl=64"
    edits = ("prefetch-registers:1", "prefetch-async:2", "persistent:1")
    assert hand_edits.main(["--write", out, *(a for e in edits for a in ("--edit", e)),
                            case]) == 0
    assert hand_edits.main(["--run", out, "--repeats", "1", "--out", jsonl]) == 0
    text = capsys.readouterr().out
    assert ("| case | base GFLOP/s (registers) | "
            + " | ".join(f"{e} / base (registers)" for e in edits) + " |") in text
    assert f"| {case} | " in text and "WRONG" not in text
    with open(jsonl) as f:
        (row,) = [json.loads(line) for line in f]
    assert row["same"] == {e: True for e in edits} and row["failed"] == {}
    assert [len(row["gflops"][name]) for name in ("base", *edits)] == [1, 1, 1, 1]


# --------------------------------------------------------------------------- shared-steps:2

#: Plans with one barrier per step that a pair of steps per barrier fits: one level of a
#: radius 3 (coarsened, as star3d3r's tuned plan), and three levels of a radius 2, whose
#: inner loop has an odd number of steps (so a closing barrier) in its degree-1 kernel.
SHARED_CASES = ("star3d3r float bt=1 bs=32x16 sl=off coarsen=2 barriers=step regs=32",
                "star2d2r double bt=3 bs=128 sl=64 barriers=step")
SLAB_LINE = re.compile(r"^#(?:undef AN5D_SLAB|define AN5D_SLAB \d)\n", re.M)


@pytest.fixture(scope="module")
def shared_written(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("shared_steps"))
    assert hand_edits.main(["--write", out, "--edit", "shared-steps:2", *SHARED_CASES]) == 0
    return out


def paired(steps: list) -> list[str]:
    """A loop's steps as the edit orders them: each pair's shares, one barrier, its ops."""
    lines = []
    for i in range(0, len(steps), 2):
        pair = steps[i:i + 2]
        lines += [line for shares, _ in pair for line in shares]
        lines.append("SYNC();")
        lines += [line for _, ops in pair for line in ops]
    if len(steps) % 4 in (1, 2):  # an odd number of pairs: a closing barrier
        lines.append("SYNC();  /* the next iteration's first pair uses slab 0 */")
    return [line.strip() for line in lines]


@pytest.mark.parametrize("case", SHARED_CASES)
def test_shared_steps_pairs_each_inner_loops_steps_behind_one_barrier_and_changes_nothing_else(
        shared_written, case):
    base = kernel_text(shared_written, "base", case)
    edited = kernel_text(shared_written, "shared-steps-2", case)
    base_loops = [loop for loop in hand_edits.inner_loops(base) if loop.loads]
    # every access of the planes goes through the slab of the step's pair
    assert edited.startswith("#define AN5D_SLAB 0\n")
    assert not re.search(r"(?<!\w)an5d_sm\[", edited)
    assert edited.count("an5d_sm_slabs[AN5D_SLAB][") == base.count("an5d_sm[") - len(
        hand_edits.BLOCKED_KERNEL.findall(base))
    declarations = re.findall(r"__shared__ \w+ an5d_sm_slabs\[2\]\[\d+\]", edited)
    assert len(declarations) == len(hand_edits.BLOCKED_KERNEL.findall(base))
    plain = edited[len("#define AN5D_SLAB 0\n"):]
    plain = re.sub(r"an5d_sm_slabs\[AN5D_SLAB\]\[", "an5d_sm[", plain)
    plain = re.sub(r"an5d_sm_slabs\[2\]\[", "an5d_sm[", plain)
    edited_loops = [loop for loop in hand_edits.inner_loops(plain) if loop.loads]
    assert len(edited_loops) == len(base_loops) >= 1
    odd = 0
    for old, new in zip(base_loops, edited_loops):
        steps, _ = hand_edits.loop_steps(base[old.body:old.end], "base")
        assert len(steps) == old.stride
        body = SLAB_LINE.sub("", plain[new.body:new.end]).rstrip("\n").split("\n")[:-1]
        assert [line.strip() for line in body] == paired(steps)
        # slabs alternate pair by pair from 0
        slabs = re.findall(r"#define AN5D_SLAB (\d)", plain[new.body:new.end])
        assert slabs == [str(g % 2) for g in range((old.stride + 1) // 2)]
        # a barrier before the loop and after it keeps the heads and tails apart
        assert plain[:new.start].rstrip().endswith(
            "__syncthreads();  /* hand edit shared-steps:2 */")
        assert re.match(r"\n#undef AN5D_SLAB\n#define AN5D_SLAB 0\n[ \t]*__syncthreads\(\);\n",
                        plain[new.end:])
        odd += old.stride % 2
    assert "star2d2r" not in case or odd  # the closing barrier's case is covered
    # the text outside the loops is the base's, but for the barriers around them
    undone = re.sub(r"__syncthreads\(\);  /\* hand edit shared-steps:2 \*/\n[ \t]*", "",
                    SLAB_LINE.sub("", plain))
    for old, new in zip(reversed(base_loops),
                        reversed([loop for loop in hand_edits.inner_loops(undone)
                                  if loop.loads])):
        after = undone[new.end:]
        assert re.match(r"\n[ \t]*__syncthreads\(\);\n", after)
        undone = (undone[:new.start] + base[old.start:old.end]
                  + re.sub(r"^\n[ \t]*__syncthreads\(\);", "", after))
    assert undone == base


def test_shared_steps_is_refused_where_a_step_has_no_barrier_of_its_own(written,
                                                                         shared_written):
    edit = hand_edits.Edit.parse("shared-steps:2")
    # a barrier per level op (CASE_3D's default): no SHAREs before the inner loops' barriers
    with pytest.raises(hand_edits.EditError, match="one barrier per step"):
        edit.apply(kernel_text(written, "base", CASE_3D))
    with pytest.raises(hand_edits.EditError, match=r"shared-steps:2\)"):
        hand_edits.Edit.parse("shared-steps:3").apply(
            kernel_text(shared_written, "base", SHARED_CASES[0]))
    with pytest.raises(hand_edits.EditError, match="no shared-memory planes"):
        edit.apply('extern "C" __global__ void f(float *a) { a[0] = 1; }\n')


def test_the_shared_steps_kernels_build(shared_written, tmp_path):
    from an5dpy.cuda.runtime import BuildOptions, compile_cubin, nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    for case in SHARED_CASES:
        path = hand_edits.kernel_file(os.path.join(shared_written, "shared-steps-2"), case)
        assert compile_cubin(path, BuildOptions(arch="sm_90"), tmp_path).kernels("_kernel_d")


@pytest.mark.gpu
def test_shared_steps_computes_the_base_result_where_each_pair_shares_planes_computed_before_it(
        tmp_path, capsys):
    """On the GPU: radius 2 and three levels, each pair's planes computed before it, the same
    bits; radius 1 and two levels, where a pair's second step shares a plane its first step
    computes, a different result (the check catches the edit that does not fit)."""
    out, jsonl = str(tmp_path / "kernels"), str(tmp_path / "rows.jsonl")
    fits, does_not = "star2d2r float bt=3 bs=128 sl=64 barriers=step", \
        "star2d1r float bt=2 bs=128 sl=64 barriers=step"
    assert hand_edits.main(["--write", out, "--edit", "shared-steps:2", fits, does_not]) == 0
    assert hand_edits.main(["--run", out, "--repeats", "1", "--out", jsonl]) == 1
    with open(jsonl) as f:
        rows = {r["case"]: r for r in map(json.loads, f)}
    assert rows[fits]["same"] == {"shared-steps:2": True}
    assert rows[does_not]["same"] == {"shared-steps:2": False}
    assert "WRONG" in capsys.readouterr().out
