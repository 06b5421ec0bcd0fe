"""The isl proof that a launch stores every interior cell exactly once, for any sizes."""

from __future__ import annotations

from hypothesis import given, strategies as st

from an5dpy.check import coverage
from an5dpy.blocking.plan import BlockingPlan, Mode


def plan(ndim, r, bt, bs, sl):
    return BlockingPlan(ndim, "float", (r,) * ndim, bt, bs, sl, Mode.NONE)


@given(ndim=st.sampled_from((2, 3)), r=st.integers(0, 3), bt=st.integers(1, 6),
       extra=st.integers(1, 12), sl=st.sampled_from((None, 1, 3, 7, 128)))
def test_every_launch_stores_the_interior_exactly_once(ndim, r, bt, extra, sl):
    bs = tuple(2 * bt * r + extra + k for k in range(ndim - 1))
    p = plan(ndim, r, bt, bs, sl)
    for degree in range(1, bt + 1):
        proof = coverage.prove_coverage(p, degree)
        assert proof.holds, proof


def test_the_proof_can_fail(monkeypatch):
    """A compute region one column too wide overlaps the next block: not injective."""
    p = plan(2, 1, 2, (12,), 5)
    real = BlockingPlan.compute_region
    monkeypatch.setattr(BlockingPlan, "compute_region",
                        lambda self, degree=None: tuple(c + 1 for c in real(self, degree)))
    proof = coverage.prove_coverage(p)
    assert not proof.holds
    monkeypatch.setattr(BlockingPlan, "compute_region",
                        lambda self, degree=None: tuple(c - 1 for c in real(self, degree)))
    assert not coverage.prove_coverage(p).covers_interior or \
        not coverage.prove_coverage(p).injective


def test_the_map_has_the_sizes_as_parameters():
    import islpy as isl
    m = coverage.store_map(plan(3, 1, 2, (8, 16), 4), 2)
    # lo/hi of three dimensions are parameters: the proof holds for every grid size
    assert m.dim(isl.dim_type.param) == 6


def test_the_proof_for_one_grid_holds_and_fails_where_the_plan_is_wrong(monkeypatch):
    from an5dpy.blocking.plan import DimExtent
    p = plan(3, 2, 3, (16, 32), 5)
    dims = (DimExtent(2, 38, 41), DimExtent(2, 20, 23), DimExtent(2, 70, 73))
    for degree in (1, 2, 3):
        proof = coverage.prove_coverage(p, degree, dims)
        assert proof.holds and proof.verdict() == "every interior cell stored exactly once"
    real = BlockingPlan.compute_region
    monkeypatch.setattr(BlockingPlan, "compute_region",
                        lambda self, degree=None: tuple(c - 1 for c in real(self, degree)))
    proof = coverage.prove_coverage(p, 3, dims)  # blocks closer than their windows: overlap
    assert not proof.injective and proof.verdict() == "a cell is stored twice"
    monkeypatch.setattr(BlockingPlan, "compute_region",
                        lambda self, degree=None: tuple(c + 1 for c in real(self, degree)))
    proof = coverage.prove_coverage(p, 3, dims)  # blocks further apart: a gap between them
    assert not proof.holds and "an interior cell is not stored" in proof.verdict()


def test_a_grid_without_interior_holds_trivially():
    from an5dpy.blocking.plan import DimExtent
    dims = (DimExtent(1, 0, 2), DimExtent(1, 30, 32))
    assert coverage.prove_coverage(plan(2, 1, 2, (32,), 8), 2, dims).holds
