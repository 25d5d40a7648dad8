"""The slot pool: a partition of the switch's aggregation slots among jobs.

Each job gets one contiguous range [base, base+count) so the data plane can check a packet's slot
with one range test. Allocation is first-fit over the free ranges; the pool never hands out a slot
twice, and releasing returns exactly what was allocated.
"""
from __future__ import annotations

import threading

from p4reduce.controller.errors import BadRequest, Conflict, SlotsExhausted


class SlotRange:
    """A half-open range of slot indices owned by one job."""

    __slots__ = ("base", "count")

    def __init__(self, base: int, count: int):
        self.base = base
        self.count = count

    @property
    def end(self) -> int:
        return self.base + self.count

    def __contains__(self, slot: object) -> bool:
        return isinstance(slot, int) and self.base <= slot < self.end

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlotRange) and (self.base, self.count) == (other.base, other.count)

    def __hash__(self) -> int:
        return hash((self.base, self.count))

    def __repr__(self) -> str:
        return f"SlotRange(base={self.base}, count={self.count})"

    def to_json(self) -> dict[str, int]:
        return {"base": self.base, "count": self.count}


class SlotPool:
    """Allocates contiguous slot ranges to owners (job names) out of `total` slots."""

    def __init__(self, total: int):
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:   # 0: no aggregating switch
            raise ValueError(f"slot pool size must be a non-negative integer, got {total!r}")
        self.total = total
        self._owned: dict[str, SlotRange] = {}
        self._lock = threading.Lock()

    # -- queries -------------------------------------------------------------------------------
    def owners(self) -> dict[str, SlotRange]:
        with self._lock:
            return dict(self._owned)

    def owner_of(self, slot: int) -> str | None:
        with self._lock:
            for owner, rng in self._owned.items():
                if slot in rng:
                    return owner
            return None

    @property
    def used(self) -> int:
        with self._lock:
            return sum(r.count for r in self._owned.values())

    @property
    def free(self) -> int:
        return self.total - self.used

    def free_ranges(self) -> list[SlotRange]:
        """Free ranges in slot order."""
        with self._lock:
            return self._free_ranges_locked()

    def largest_free(self) -> int:
        return max((r.count for r in self.free_ranges()), default=0)

    def _free_ranges_locked(self) -> list[SlotRange]:
        free, cursor = [], 0
        for rng in sorted(self._owned.values(), key=lambda r: r.base):
            if rng.base > cursor:
                free.append(SlotRange(cursor, rng.base - cursor))
            cursor = rng.end
        if cursor < self.total:
            free.append(SlotRange(cursor, self.total - cursor))
        return free

    # -- changes -------------------------------------------------------------------------------
    def allocate(self, owner: str, count: int) -> SlotRange:
        """Give `owner` `count` contiguous slots (first fit), or raise SlotsExhausted."""
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise BadRequest(f"field 'slots': must be a positive integer, got {count!r}", field="slots")
        with self._lock:
            if owner in self._owned:
                raise Conflict(f"{owner!r} already owns slots {self._owned[owner].to_json()}")
            if count > self.total:
                raise SlotsExhausted(
                    f"job {owner!r} wants {count} slots but the switch has only {self.total} "
                    f"({self.total - sum(r.count for r in self._owned.values())} of them free)")
            for gap in self._free_ranges_locked():
                if gap.count >= count:
                    rng = SlotRange(gap.base, count)
                    self._owned[owner] = rng
                    return rng
            free = self.total - sum(r.count for r in self._owned.values())
            largest = max((r.count for r in self._free_ranges_locked()), default=0)
            raise SlotsExhausted(
                f"job {owner!r} wants {count} slots; {free} of {self.total} are free and the largest "
                f"contiguous free range has {largest}")

    def reserve(self, owner: str, base: int, count: int) -> SlotRange:
        """Record an existing allocation (read back from the switch after a restart)."""
        rng = SlotRange(base, count)
        with self._lock:
            if owner in self._owned:
                raise Conflict(f"{owner!r} already owns slots {self._owned[owner].to_json()}")
            if base < 0 or count <= 0 or rng.end > self.total:
                raise Conflict(f"slots [{base}, {rng.end}) of {owner!r} are outside the pool [0, {self.total})")
            for other, orng in self._owned.items():
                if rng.base < orng.end and orng.base < rng.end:
                    raise Conflict(f"slots [{base}, {rng.end}) of {owner!r} overlap {other!r}'s "
                                   f"[{orng.base}, {orng.end})")
            self._owned[owner] = rng
            return rng

    def release(self, owner: str) -> SlotRange | None:
        """Return `owner`'s slots to the pool; returns the released range (None if it had none)."""
        with self._lock:
            return self._owned.pop(owner, None)

    def slot_map(self) -> list[tuple[int, int, str | None]]:
        """[(base, count, owner or None)] covering [0, total) in order: for the shell's slot map."""
        with self._lock:
            items: list[tuple[int, int, str | None]] = [(r.base, r.count, o) for o, r in self._owned.items()]
            items += [(r.base, r.count, None) for r in self._free_ranges_locked()]
        return sorted(items, key=lambda item: item[0])   # ranges do not overlap: bases differ
