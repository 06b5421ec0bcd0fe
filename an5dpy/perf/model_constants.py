"""The performance model's calibrated constants and the notes on its choices where the
paper is vague (:data:`MODEL_NOTES`); the model itself is :mod:`an5dpy.perf.model`."""

from __future__ import annotations

BOTTLENECKS = ("compute", "shared", "global", "issue")

#: Instructions per cell and level op besides the update's arithmetic, shared-memory reads
#: and stores and the barrier (the boundary select, address arithmetic), by the plan's
#: dimensions: counted in the inner loops' SASS on sm_90 (scripts/sass_counts.py,
#: artifact/H200/sass_counts.md: the fits' ``a`` less the essential instructions). A 2D
#: block with an interior phase (plan.interior_phase) issues none: its level ops are the
#: essential instructions alone (INTERIOR_LEVEL_OVERHEAD).
LEVEL_OVERHEAD = {2: 1.5, 3: 5.5}
INTERIOR_LEVEL_OVERHEAD = 0.0
#: Instructions per cell a level op saves where it would branch around idle warps and the
#: plan computes at them instead (plan.IdleWarps.COMPUTE): the tests of the level's bit,
#: the branch and its reconvergence. Counted in the inner loops' SASS on sm_90
#: (scripts/sass_counts.py, nvcc 13.0): 5.0 for star3d1r double (bT 4, 64x32 cells of 2 per
#: thread, a barrier per step), 2.7 for star3d1r float (bT 4, 32x32), 5.3 and 4.7 for
#: star3d2r double and float; LEVEL_OVERHEAD holds them where the ops branch.
BRANCH_INSTRUCTIONS = 4.0
#: Instructions per cell and streaming step, whatever the plan's degree: the step's global
#: load and store, its ring rotation and loop control (the fits' ``b`` in
#: artifact/H200/sass_counts.md, 12-19; j3d27pt's two-point fit is an outlier). Spread over
#: the degree's level ops, so a deeper plan issues fewer instructions per cell and level:
#: why bT 14 beats bT 7 in 2D (7.80 against 8.86 per cell and level in star2d1r's SASS).
STEP_OVERHEAD = {2: 12, 3: 13}
#: Instructions per level added for each register a budget's limit falls short of the
#: registers the kernel needs without spilling (spill loads and stores). Below 3: many
#: spilled values stay in L1, and the fastest measured kernels of several assoc rows of
#: artifact/H200 spill. Fitted (scripts/model_fit.py, with the other issue-term constants
#: below and gpus.HOPPER_STEP_LATENCY) to the rows of artifact/H200/previous and the variant
#: rows of artifact/H200/variants.jsonl; 1.5 then. Lowered to 1.25 on the table of
#: 2026-11-28 (every row measured with the tuner's final rule): measured over predicted
#: GFLOP/s grew with the registers a budget falls short in 2D float (1.04 at none, 1.55 at
#: 17-24), and at 1.25 the tuned plans' accuracy is 1.134 instead of 1.153 (H100 rows
#: 0.982 instead of 0.993), a plan within 3% of the fastest is in the measured plans' top 5
#: on 24 rows instead of 23, the fastest on 17 as before (H100: 16 of 20 instead of 15),
#: the first picks run at 0.880 of the fastest instead of 0.878, and no default plan moves.
SPILL_INSTRUCTIONS = 1.25
#: Registers a kernel needs without spilling, besides its plane registers (one 32-bit
#: register per float value, two per double): nvcc's temporaries, addresses and loop state,
#: and in mode assoc ASSOC_TEMPORARIES more for the partial sums. Lower than the paper's
#: estimate, which has one more register per level: the kernels of a budget below it
#: often build without a spill (ptxas, sm_90).
SPILL_FREE_BASE = {"float": 20, "double": 30}
ASSOC_TEMPORARIES = 10
#: A division in double (fast math gives float divisions a reciprocal, not double ones):
#: issue slots of its Newton-Raphson sequence (a reciprocal estimate and about six FP64
#: operations, counted twice as FP64 issues at half rate; sm_90 SASS), and the cycles it
#: adds to a level's dependency chain.
DOUBLE_DIVISION_INSTRUCTIONS = 20
DOUBLE_DIVISION_LATENCY = 100
#: The same for a division by a divisor fixed for the launch, whose reciprocal the kernels
#: compute once (an5dpy.cuda.macros.ConstantTable.divide): two FMAs after the multiply,
#: counted twice, and the range check (a mask, a subtraction, a comparison, the branch and
#: its convergence points). Counted in SASS (sm_90): the inner loop of j2d9pt double
#: (bt 4, 128 cells) runs 7.75 instructions fewer per cell and level with it; the chain:
#: three dependent FP64 operations and three integer ones.
FIXED_DIVISOR_DIVISION_INSTRUCTIONS = 10
FIXED_DIVISOR_DIVISION_LATENCY = 40
#: Instructions per thread and level for each distinct read of a read-only array: the load
#: (read-only data path) and the streaming subscript's clamp and address arithmetic (the
#: in-plane subscripts' parts are per thread, computed once). Counted from the kernels'
#: source, not fitted: no measurement of such kernels is in artifact/H200.
COEF_READ_INSTRUCTIONS = 4
#: Instructions per thread and level op for each field a sub-step computes beyond the
#: first (a time step of several statements): like the one field's (in LEVEL_OVERHEAD), its
#: value is selected against its boundary value at boundary cells, a predicated load from
#: the boundary plane's address and the select. Counted from the kernels' macros (CALCn of
#: cuda/macros.py), not fitted: no measurement of such kernels is in artifact/H200.
FIELD_SELECT_INSTRUCTIONS = 2
#: Instructions per halo cell that a block's computing threads load, per thread and
#: streaming step (plan.HaloCells.LOADED, templates/halo_loaded.cu.j2): the store of the
#: value loaded a step before to the shared plane, the pointer's advance, the predicated
#: load of the next plane's value and their predicates. Counted in the stream loops' SASS
#: (scripts/sass_counts.py, nvcc 13.0, sm_90): star3d3r float's loop with 2 cells per
#: thread runs 120, 139 and 151 instructions at 1, 2 and 3 halo cells per thread, and
#: its cells take the instructions of a cell of the plans with halo threads.
HALO_LOAD_INSTRUCTIONS = 16
#: Cycles from one dependent arithmetic instruction to the next (FFMA / DFMA latency).
DEPENDENT_LATENCY = {"float": 4, "double": 8}
#: Share of a block's own issue time per step (its warp-instructions over the SM's
#: schedulers) that its step latency does not cover: the next plane's loads are in flight
#: while the block computes. Fitted to 0 (scripts/model_fit.py, as SPILL_INSTRUCTIONS): a block
#: adds to its latency is its warps' own in-order issue, WARP_CPI.
EXPOSED_ISSUE = 0.0
#: The same share for a block alone on its SM (one resident block: a block of 1024 threads
#: that ptxas builds with more than 32 registers, say). No other block issues while its
#: warps wait at a barrier or on a load, so half of its issue adds to its step latency.
#: A joint fit of every constant over artifact/H200 (scripts/model_fit.py) puts it at 0.5, and
#: at 0.4-0.5 in 20 of the 21 fits that leave one stencil out; the other constants are kept
#: (refitted jointly they rank the measured plans better in-sample but worse on the stencil
#: left out). At 0, 3D default plans were such blocks, at 0.56-0.64 of the tuned plans; at
#: 0.5 the 42 defaults run at 0.832 of the tuned plans, 0.812 before (0.836 once the two
#: 2D defaults an earlier change left untimed were timed; artifact/H200/default_plans.md),
#: and the top 5 over the whole space holds the fastest measured plan of artifact/H200 on
#: 17 rows, 19 before (a plan within 3%: 21, 25 before).
LONE_BLOCK_EXPOSED = 0.5
#: Cycles a barrier stalls a block's step per warp of the block: a barrier waits for the
#: block's slowest warp, and the more warps the longer the wait (in 3D the barrier stalls
#: are real, artifact/H100-80GB-HBM3/barriers_profile.md). Part of the step's latency
#: (an5dpy.perf.model.step_cycles), so other resident blocks hide it.
#: Fitted (scripts/model_fit.py, as SPILL_INSTRUCTIONS).
BARRIER_STALL = 2.0
#: The exponent p of the p-norm that combines a launch's four times where the model weighs
#: instruction issue (an5dpy.perf.model.combine_times): the resources of one instruction
#: stream overlap, but not fully; p = inf would be the paper's largest time, 1 their sum.
#: Fitted (scripts/model_fit.py, as SPILL_INSTRUCTIONS): 3; it was 2 (the Euclidean norm),
#: which charged overlapping resources in full and predicted the tuned plans 1.45x too slow.
NORM_EXPONENT = 3.0
#: The share of the levels' dependency chains (DEPENDENT_LATENCY per instruction of the
#: update's arithmetic, one level after another, and each double division's sequence) that
#: a block's streaming step waits for (an5dpy.perf.model.step_cycles). Kept at the whole
#: chain. On artifact/H200 (scripts/model_fit.py, the other constants as they are) 0 ranks
#: the measured plans better (the fastest in the top 5 of 20 rows instead of 17, a plan
#: within 3% on 29 instead of 23, accuracy 1.122 instead of 1.153; with CELL_EFFICIENCY
#: left out per stencil 20 and 30 against 22 and 26), but its first picks run at 0.852 of
#: the fastest measured plan against 0.878, and over the whole space its top 5 holds the
#: fastest plan on 14 rows instead of 16, with 38 of its 210 plans never measured (1 now):
#: it moves the default plans to deeper plans no run has timed. A joint fit of every
#: constant with this one free leaves each stencil out at 21 rows (27 within 3%, accuracy
#: 1.064) against 18 (25, 1.173) without it; the fit keeps it for that next refit. (Those
#: with SPILL_INSTRUCTIONS 1.5 and CELL_EFFICIENCY 2D 2 cells 0.91; with 1.25 and 0.98, 0
#: holds 21 rows in the measured top 5 against 22 at 1, and 18 over the whole space, with
#: 24 plans never measured, against 21.)
CHAIN_SHARE = 1.0
#: Cycles per instruction of one warp's own in-order stream, part of a block's step latency:
#: a block's instructions per step spread over its warps, and each warp issues its share one
#: after another, so a block of fewer warps (cells per thread) takes longer per step.
#: Fitted (scripts/model_fit.py, as SPILL_INSTRUCTIONS).
WARP_CPI = 0.5
#: Registers per thread that a kernel built without a budget (no launch-bound limit) takes,
#: over the paper's lower bound (BlockingPlan.register_estimate), by (mode, dtype, number of
#: dimensions, cells per thread): the medians of ptxas's count over the estimate among the
#: unbounded kernels measured for artifact/H200/rows.jsonl (1,558 measured plans, sm_90;
#: ``scripts/model_fit.py artifact/H200 --registers``; taken again after the table's whole
#: run of 2026-11-27: assoc float 3D with 4 cells 1.56 -> 1.40, nondiag float 2D with 2
#: cells 1.33 -> 1.44, the others by 0.03 or less; and again after 38 rows were measured
#: with the tuner's halved and doubled blocks: assoc with 4 cells, float 3D 1.40 -> 1.56,
#: double 3D 1.24 -> 1.47, double 2D 1.26 -> 1.45, keys of few kernels whose medians move
#: with the plans measured; the model's scores on the table did not move; and again after
#: the table was measured with the tuner's climbing rounds: assoc float 3D with 1 cell
#: 1.44 -> 1.31, assoc double with 4 cells 2D 1.45 -> 1.31 and 3D 1.47 -> 1.32, which moved
#: four default plans: box3d1r and j3d27pt float to plans the table measured 24% and 18%
#: faster, box3d3r and box3d4r float to ones it measured 5% and 12% slower); and again
#: after five 3D assoc rows were measured with the kernels' fourth generation (mode assoc's
#: sums branch on the warp's level bits, which changes their registers): assoc 3D float
#: 1.31, 1.56, 1.56 -> 1.28, 1.53, 1.57 and double 1.09, 1.14, 1.32 -> 1.12, 1.21, 1.47
#: for 1, 2 and 4 cells (the model's top 5 holds the fastest measured plan of 17 rows
#: instead of 16, at the same accuracy); and again after the whole table was measured on
#: one H200 with the heavy stencils' narrower search: assoc float 3D with 4 cells 1.57 ->
#: 1.70 (the model's scores and default plans did not move). The 2D nondiag
#: keys of 4 cells per thread keep their earlier values: most of their kernels sit at their
#: launch bounds' limit (ptxas holds a block of 512 threads to 128 registers, whatever the
#: plan needs), so their medians are the limit's and move with the plans measured (nondiag
#: float: 1.48, then 1.26 with 77% of its kernels held; ``--registers`` marks such keys).
#: Where the model weighs instruction issue, an unbounded kernel's occupancy is taken at
#: this count, not at the lower bound, which overstated it and made the model prefer
#: unbounded kernels that measured up to 2x slower. A ratio, not a count: the excess grows
#: with the plan (star2d4r float at bT 5 with 2 cells per thread: an estimate of 115, ptxas
#: 253), and more with cells per thread, whose unrolled cells nvcc schedules together.
#: Mode none (10 kernels): none. Kernels whose computing threads load the halo
#: (plan.HaloCells.LOADED; ``nondiag/loaded``, model.ratio_key) are other kernels: their
#: medians over the plans the table measured (2026-11-28: star3d2r-4r, and in mode assoc,
#: ``assoc/loaded``, box3d2r-4r and j3d27pt, whose 2r + 1 sums a cell ptxas keeps beside
#: the arriving plane's values: 1.4-2.1 with 2 and 4 cells).
UNBOUNDED_RATIO = {
    ("assoc", "float", 2, 1): 1.36, ("assoc", "float", 2, 2): 1.47,
    ("assoc", "float", 2, 4): 1.64, ("assoc", "float", 3, 1): 1.28,
    ("assoc", "float", 3, 2): 1.53, ("assoc", "float", 3, 4): 1.70,
    ("assoc", "double", 2, 1): 1.24, ("assoc", "double", 2, 2): 1.31,
    ("assoc", "double", 2, 4): 1.31, ("assoc", "double", 3, 1): 1.12,
    ("assoc", "double", 3, 2): 1.21, ("assoc", "double", 3, 4): 1.47,
    ("nondiag", "float", 2, 1): 1.28, ("nondiag", "float", 2, 2): 1.44,
    ("nondiag", "float", 2, 4): 1.48, ("nondiag", "float", 3, 1): 1.33,
    ("nondiag", "float", 3, 2): 1.31, ("nondiag", "float", 3, 4): 1.49,
    ("nondiag", "double", 2, 1): 1.10, ("nondiag", "double", 2, 2): 1.19,
    ("nondiag", "double", 2, 4): 1.27, ("nondiag", "double", 3, 1): 0.98,
    ("nondiag", "double", 3, 2): 1.08, ("nondiag", "double", 3, 4): 1.14,
    ("nondiag/loaded", "float", 3, 1): 1.33, ("nondiag/loaded", "float", 3, 2): 1.45,
    ("nondiag/loaded", "float", 3, 4): 1.64, ("nondiag/loaded", "double", 3, 1): 0.89,
    ("nondiag/loaded", "double", 3, 2): 1.14, ("nondiag/loaded", "double", 3, 4): 1.41,
    ("assoc/loaded", "float", 3, 1): 1.33, ("assoc/loaded", "float", 3, 2): 1.94,
    ("assoc/loaded", "float", 3, 4): 2.10, ("assoc/loaded", "double", 3, 1): 1.24,
    ("assoc/loaded", "double", 3, 2): 1.42, ("assoc/loaded", "double", 3, 4): 1.76,
}
#: Cells per thread from which a budget's spills are counted against the registers that the
#: cells take as ptxas builds them (spill_free_registers grown by UNBOUNDED_RATIO over one
#: cell's): measured plans of 4 cells per thread under a budget ran at a median 0.69 of the
#: prediction in 2D (one cell: 0.96), and counted so the model's top 5 holds the fastest
#: plan of 2 more rows of artifact/H200 at the same accuracy. With 2 cells per thread the
#: same count ranks the measured plans' first picks lower (0.749 of the fastest against
#: 0.760) and changes a default plan never timed, so it starts at 4.
SPILL_GROWTH_CELLS = 4
#: The same for the kernels whose computing threads load the halo (plan.HaloCells.LOADED),
#: from 2 cells: each cell's column and the plane it loads ahead grow ptxas' registers
#: faster than one cell's count says (UNBOUNDED_RATIO nondiag/loaded double: 1.14 at 2
#: cells, 0.89 at 1); star3d4r double's default of 2 cells, counted from 4, took a budget
#: of 64 registers (ptxas gives it 90 without one) and ran at 0.64 of its tuned plan on
#: the H200 (artifact/H200/default_plans.md).
SPILL_GROWTH_CELLS_LOADED = 2
#: Where the model weighs instruction issue: the share of the model's speed that the
#: kernels of a plan's cells per thread reach, against one cell per thread, by
#: (dimensions, cells per thread): the median of measured over predicted GFLOP/s over
#: every measured plan of artifact/H200/rows.jsonl (each at its best register budget),
#: predicted without it, over the same median for one cell per thread (2D 0.97, 3D 0.81)
#: (scripts/model_fit.py --efficiency). The issue term counts a coarsened kernel's
#: instructions as its SASS issues them, yet such kernels run slower than the count says:
#: ptxas gives 4 cells per thread 150-250 registers, and a block then keeps few warps per
#: SM and stalls on latency the term only partly sees. Relative to one cell, so the tuned
#: plans' accuracy stays (the fastest plans are the ones the model under-predicts, so an
#: absolute factor would make it pessimistic); within a row of one cells per thread every
#: plan takes the same share. Cells per thread beyond the table take the largest in it.
#: Since unbounded kernels are held to their launch bounds (Model.thread_registers) the
#: medians read 0.92, 0.54 and 0.89 for 2D 2 and 4 and 3D 2 cells; 4 cells took its new
#: value, the others kept theirs: the ranking turns on a hundredth here (the top 5 holds
#: the fastest plan on 21 rows as they are, 19 with 0.92 in 2D, 19 with 0.89 in 3D), a
#: step within the medians' own spread. With a lone block's exposed issue
#: (LONE_BLOCK_EXPOSED) the medians moved (the 1024-thread plans of one cell they are
#: relative to are predicted slower now): 2D 4 cells took its median, 0.57; 3D 2 and 4
#: cells read 0.86 and 0.73 and took 0.88 and 0.76, where the top 5 over the whole space
#: holds the fastest plan of 17 rows (15 at the medians; scripts/artifact.py --rescore).
#: After the table was measured with the tuner's climbing rounds, 3D 2 cells read 0.94 and
#: took it (0.88): the measured plans' top 5 keeps 18 rows, within 3% 25 -> 26, accuracy
#: 1.158 -> 1.142, the first pick 0.882 -> 0.892 of the tuned plan, no default plan moved.
#: 2D 2 cells read 0.96 and kept 0.91: at 0.96 the top 5 would hold the fastest plan of 23
#: rows, not 18, but the first picks would fall to 0.871 of the tuned plans (the default
#: plans users get), and the score left out per stencil (cross-validated) stays 22 either way.
#: With the rows that divide in double measured again (the hoisted division) and 36 more
#: with the final climbing rule it reads 0.98: at 0.94 the measured plans' top 5 would hold
#: 19 rows (within 3%: 24, not 22), but the default plan of star2d4r float would move to 2
#: cells per thread, measured 22% slower. With SPILL_INSTRUCTIONS at 1.25 (2026-11-28,
#: twelfth session) it took its median, 0.98: no default plan of the 42 rows moves (nor
#: with the spill constant alone), the measured plans' top 5 holds the fastest plan of 22
#: rows instead of 17 (within 3%: 26, not 23), over the whole space 21 instead of 16, the
#: accuracy is 1.105 instead of 1.153, the score left out per stencil stays 22 (26), and
#: the first pick among the measured plans runs at 0.861 of the fastest instead of 0.878.
#: Kernels whose computing threads load the halo (plan.HaloCells.LOADED) are keyed apart,
#: ``(3, cells, "loaded")`` (model.efficiency_key): priced with the efficiency of the
#: plans with halo threads, the fastest plans of star3d3r and star3d4r measured 1.25-1.5x
#: their prediction while those plans measured 0.8x theirs. Their medians (2026-11-28,
#: twentieth session, relative to 3D one cell with halo threads, their registers keyed
#: apart) read 1.31 and 1.40 with 2 and 4 cells and took them, and 3D 2 cells, its loaded
#: kernels no longer in its median, read 0.99 and took it: the measured plans' top 5 holds
#: the fastest plan of 21 rows instead of 19 (within 3%: 30, not 26), the tuned plans'
#: accuracy is 1.065 instead of
#: 1.117, the variants' top pick is within 3% on 9 rows instead of 8, the constants fitted
#: without each stencil hold 24 rows instead of 23 (34 within 3%, not 32), and no default
#: plan moves (the model's search space has one cell per thread and halo threads). With
#: box3d2r-4r tuned with mode assoc's loaded kernels, one cell loaded read 1.15 and four
#: 1.32, and took them: 23 rows (within 3%: 31), accuracy 1.045. With j3d27pt double and
#: star3d2r tuned with loaded plans too (the tuner's neighbours at bT 1) and the loaded
#: kernels' registers taken again: 1.13, 1.25 and 1.18 for 1, 2 and 4 cells, 22 rows (29),
#: accuracy 1.057.
CELL_EFFICIENCY = {
    (2, 1): 1.0, (2, 2): 0.98, (2, 4): 0.57,
    (3, 1): 1.0, (3, 2): 0.99, (3, 4): 0.76,
    (3, 1, "loaded"): 1.13, (3, 2, "loaded"): 1.25, (3, 4, "loaded"): 1.18,
}
#: Where the model weighs instruction issue: the share of a wave of blocks a launch loses at
#: its end because its blocks do not all take equally long (boundary blocks are shorter),
#: so the last wave's SMs idle while its slowest blocks finish. eff_SM becomes
#: waves / (ceil(waves) + WAVE_TAIL): small for many waves, a fifth of the time at 1 wave.
#: Fitted, with the registers of unbounded kernels, to the top-1 choices among
#: artifact/H200/previous's plans; the refit with the issue term's other constants
#: (scripts/model_fit.py) kept 0.25.
WAVE_TAIL = 0.25
#: Register budgets besides none that the tuner builds, and that the model weighs where it
#: models instruction issue (GpuSpec.step_latency_cycles > 0).
REGISTER_BUDGETS = (32, 64, 96)

MODEL_NOTES = (
    "Computing threads (FLOPs and shared-memory reads) are the valid slots of levels 1..d: "
    "interior threads inside their level's window [T*r, bS - T*r); threads outside it "
    "(redundant) copy their input and are idle. With the other choices below this "
    "reproduces the paper's Model column of Table 5 (V100 and P100, float and double, 84 "
    "entries: median ratio 0.99, 72 within 10%, range 0.67-1.25). Charging redundant "
    "threads too (halo_computes=True: an idle lane of a busy warp costs as much as a "
    "working one) gives 49 within 10%, range 0.27-1.20.",
    "Shared-memory reads are charged to computing threads only; boundary, redundant and "
    "out-of-bound threads only write.",
    "Shared-memory reads per computing thread (Table 2, practical column, generalised): "
    "nondiag = distinct non-zero in-plane offsets of the centre plane; assoc = distinct "
    "non-zero in-plane offsets over all planes (each arriving plane is read once per "
    "column and feeds all partial sums); none = offsets with a non-zero in-plane part "
    "(all 2r+1 planes come from shared memory). Repeated reads of one offset count once.",
    "Shared-memory writes: one per thread and level op (2r+1 in mode none), streaming-"
    "boundary planes included.",
    "Global reads: level-0 loads of in-array threads (boundary planes included). The "
    "kernels also re-load boundary cells at levels >= 1 (by buffer parity); those few, "
    "cache-resident loads are not charged.",
    "Instruction mix: nvcc's FMA contraction as estimated by analysis.op_mix, over the "
    "update as written (nondiag, none) or as per-plane partial sums added to accumulators "
    "(assoc: 1 MUL + (k-1) FMA per plane of k products, 1 ADD per further plane; this "
    "matches the paper's box-stencil numbers). Division counts as a multiply (fast math, "
    "section 5), math calls as OTHER, for float and double alike in the paper's terms "
    "(which also ignore slow double division; the issue term charges it, "
    "DOUBLE_DIVISION_INSTRUCTIONS and _LATENCY, or FIXED_DIVISOR_DIVISION_* where the "
    "divisor reads no array and the kernels compute its reciprocal once). Common "
    "subexpressions are not merged (gradient2d is predicted ~25% below the paper, which "
    "counts nvcc's CSE).",
    "Registers: the paper's empirical lower bound (section 6.3) rounded up to 8, unless "
    "given (a budget, one or per degree); on GPUs with a step latency, a kernel without "
    "a budget at that bound times UNBOUNDED_RATIO (what ptxas gives it). The paper's "
    "terms model neither spilling nor latency at low occupancy; the issue term "
    "charges both, spills against spill_free_registers (below the paper's estimate) at "
    "the limit a budget's launch bounds give ptxas (plan.budget_register_limit). Shared "
    "memory per block is Table 1's footprint (no per-block reservation).",
    "Read-only arrays (counts.CoefficientReads): every computing thread loads each "
    "distinct (array, subscript) read at every level through the read-only path; "
    "neighbouring offsets of one array hit L1/L2, so a launch reads each array's elements "
    "from device memory once (the interior's extent along the dimensions its subscripts "
    "follow: f[i][j] one element per cell, cz[i] one per plane), and the per-level loads "
    "are on-chip traffic charged with shared memory (one memory on NVIDIA GPUs), plus "
    "COEF_READ_INSTRUCTIONS each in the issue term. Programs without read-only arrays "
    "are predicted as before.",
    "A time step of several statements (coupled fields, sub-steps; counts.LevelWork): "
    "each time step is S levels of the pipeline (bt x S levels per launch, so the halo's "
    "redundant work and the thread classes are those of a launch of bt x S levels), level "
    "T runs sub-step (T - 1) % S, and every level holds every field. Per launch each field "
    "is loaded once per in-array cell and stored once per valid cell (read-only arrays as "
    "above). A level op charges its sub-step's FLOPs and instruction mix (all its "
    "statements), shared-memory stores of the fields it reads at in-plane offsets (their "
    "window planes each) and reads per distinct (field, offset) by the rule above; other "
    "fields carry their registers for free. The issue term charges a sub-step's "
    "instructions to its levels, its longest statement's chain as its latency (the "
    "statements are independent), LEVEL_OVERHEAD, STEP_OVERHEAD's share and the barrier "
    "once per level op and "
    "FIELD_SELECT_INSTRUCTIONS per further field it computes. Registers and shared memory "
    "per block count every field (BlockingPlan). No coupled kernel has been measured: "
    "none of this is fitted.",
    "Issue term (GPUs with a step latency): a launch's four times combine in a p-norm "
    "(NORM_EXPONENT = 3, fitted; the Euclidean norm before predicted the tuned plans 1.45x "
    "too slow). A step's latency adds BARRIER_STALL per barrier and warp of the block (one "
    "barrier per step: one a step) and WARP_CPI per instruction of a warp's share (cells "
    "per thread: fewer warps, each issuing more). The constants are fitted with "
    "scripts/model_fit.py to the measured plans of artifact/H200/previous and the variant "
    "rows; the counts (LEVEL_OVERHEAD, DEPENDENT_LATENCY, the registers) are not.",
    "A plan whose computing threads load the halo (plan.HaloCells.LOADED, bT 1): its "
    "blocks, tiles, traffic and computed cells are the same plan's with halo threads; "
    "where the model weighs issue, a level is issued by the compute region's warps "
    "(model.issuing_share), each thread adds HALO_LOAD_INSTRUCTIONS per round of halo "
    "loads a step, its blocks have its own threads, and its efficiency and unbounded "
    "registers are keyed apart (model.efficiency_key, model.ratio_key), taken from the "
    "measured plans of artifact/H200.",
    "eff_SM = waves / ceil(waves), waves = blocks / (blocks per SM x SMs); on GPUs with "
    "a step latency waves / (ceil(waves) + WAVE_TAIL); each launch of the launch plan is "
    "costed by its own degree.",
)
