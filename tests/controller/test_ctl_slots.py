"""Slot pool: random churn never overlaps or leaks; a full pool refuses cleanly."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4reduce.controller.errors import BadRequest, Conflict, SlotsExhausted
from p4reduce.controller.slots import SlotPool

ops = st.lists(
    st.one_of(
        st.tuples(st.just("alloc"), st.integers(0, 9), st.integers(1, 40)),
        st.tuples(st.just("release"), st.integers(0, 9), st.just(0)),
    ),
    max_size=120,
)


def _check_invariants(pool, model):
    owned = pool.owners()
    assert set(owned) == set(model)
    covered = [0] * pool.total
    for owner, rng in owned.items():
        assert rng.count == model[owner]
        assert 0 <= rng.base and rng.end <= pool.total
        for s in range(rng.base, rng.end):
            covered[s] += 1
    assert max(covered, default=0) <= 1, "two jobs share a slot"
    assert pool.used == sum(model.values())
    assert pool.free == pool.total - pool.used
    # the slot map partitions [0, total) exactly
    cursor = 0
    for base, count, owner in pool.slot_map():
        assert base == cursor and count > 0
        cursor = base + count
        if owner is not None:
            assert owned[owner].base == base
    assert cursor == pool.total


@settings(max_examples=200, deadline=None)
@given(total=st.integers(1, 100), script=ops)
def test_random_churn_keeps_partition(total, script):
    pool = SlotPool(total)
    model = {}
    for op, job, count in script:
        name = f"job{job}"
        if op == "alloc":
            if name in model:
                with pytest.raises(Conflict):
                    pool.allocate(name, count)
                continue
            # first fit must succeed exactly when some free range is large enough
            fits = pool.largest_free() >= count
            try:
                rng = pool.allocate(name, count)
            except SlotsExhausted as e:
                assert not fits
                assert e.code == "no_free_slots" and e.http_status == 409
                assert str(pool.free) in e.message
            else:
                assert fits and rng.count == count
                model[name] = count
        else:
            released = pool.release(name)
            assert (released is not None) == (name in model)
            model.pop(name, None)
        _check_invariants(pool, model)
    for name in list(model):
        pool.release(name)
    assert pool.free == total and pool.slot_map() == [(0, total, None)]


def test_full_pool_refused_with_clear_message():
    pool = SlotPool(64)
    pool.allocate("a", 32)
    pool.allocate("b", 32)
    with pytest.raises(SlotsExhausted) as exc:
        pool.allocate("c", 1)
    assert "0 of 64 are free" in exc.value.message
    pool.release("a")
    assert pool.allocate("c", 32).base == 0


def test_fragmentation_reports_largest_range():
    pool = SlotPool(30)
    for name in "abc":
        pool.allocate(name, 10)
    pool.release("a")
    pool.release("c")
    with pytest.raises(SlotsExhausted) as exc:
        pool.allocate("d", 15)
    assert "20 of 30 are free" in exc.value.message and "largest contiguous free range has 10" in exc.value.message


def test_bad_counts_and_reserve_conflicts():
    pool = SlotPool(16)
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(BadRequest):
            pool.allocate("x", bad)
    pool.reserve("r", 4, 4)
    with pytest.raises(Conflict, match="overlap"):
        pool.reserve("s", 6, 4)
    with pytest.raises(Conflict, match="outside"):
        pool.reserve("t", 14, 4)
    assert pool.allocate("u", 4).base == 0
    assert pool.allocate("v", 8).base == 8
    for bad in (-1, 1.5, True, "4"):
        with pytest.raises(ValueError):
            SlotPool(bad)
    empty = SlotPool(0)          # no switch aggregates: nothing to give, every request refused
    assert empty.largest_free() == 0 and empty.free == 0
