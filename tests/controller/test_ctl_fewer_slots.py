"""A job's slot count is a wish: with fewer slots free it gets the largest free range (a smaller
window) instead of none, and with none free it is created off the switch (on the host fallback,
tests/controller/test_ctl_degraded.py); re-creating a job by name does not conflict over a
default it could not have."""

from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.protocol import constants
from p4reduce.protocol.wire import Layout

LAYOUT = Layout(constants.LANES, constants.SUBBLOCK)


def test_a_default_job_gets_the_slots_that_are_free():
    mgr = JobManager(SlotPool(128), default_workers=2, default_slots=64, layout=LAYOUT)
    mgr.create("big", 2, slots=120)                        # explicit: 120 of 128
    job, created, _ = mgr.create("small", 2)               # default 64, 8 free: gets 8
    assert created and job["slots"] == {"base": 120, "count": 8}
    again, created, _ = mgr.create("small", 2)             # the same request again: the same job
    assert not created and again["job_id"] == job["job_id"]
    job, _, _ = mgr.create("explicit", 2, slots=16)       # nothing free: created off the switch
    assert job["slots"]["count"] == 0 and job["path"] == "fallback"
    mgr.end("explicit")
    mgr.end("big")
    job, _, _ = mgr.create("later", 2)
    assert job["slots"]["count"] == 64                     # free again: the whole default
