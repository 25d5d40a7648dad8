"""Property: for any tensors, slot counts, modes and any interleaving of workers, losses,
duplicates and retransmissions, the P4 program emits exactly what the reference model emits
(byte for byte, Fabric checks every frame) and every worker ends with the exact integer sum."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testbed.fabric import Fabric
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.protocol.constants import Mode


def tensor(rng, length, density, magnitude, subblock):
    sb = -(-length // subblock)
    x = rng.integers(-magnitude, magnitude + 1, sb * subblock)
    x.reshape(sb, subblock)[rng.random(sb) >= density] = 0
    return x[:length].astype(np.int32)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 9), slots=st.integers(1, 4), length=st.integers(1, 300),
       density=st.sampled_from([0.0, 0.05, 0.3, 0.8, 1.0]), mode=st.sampled_from([Mode.DENSE, Mode.SPARSE]),
       magnitude=st.sampled_from([1, 1000, 2**27]), loss=st.floats(0, 0.25), dup=st.floats(0, 0.25),
       spurious=st.floats(0, 0.05), second_job=st.booleans(), seed=st.integers(0, 2**31))
def test_p4_matches_model_under_any_interleaving(program, layout, n, slots, length, density, mode, magnitude,
                                                 loss, dup, spurious, second_job, seed):
    from p4sim.engine import Switch
    fabric = Fabric(Switch(program), layout=layout)
    length = max(1, length * layout.lanes // 32)            # up to ~9 blocks at any layout
    rng = np.random.default_rng(seed)
    runs, tensors = {}, {}
    jobs = [(3, n, 10, slots, mode)]
    if second_job:
        jobs.append((4, max(1, n - 1), 10 + slots, 2, Mode.SPARSE if mode == Mode.DENSE else Mode.DENSE))
    for job_id, workers, base, count, job_mode in jobs:
        fabric.add_job(job_id, workers, slot_base=base, slot_count=count, mode=job_mode)
        tensors[job_id] = [tensor(rng, length, density, magnitude, layout.subblock) for _ in range(workers)]
        runs[job_id] = JobRun(tensors[job_id], job_id, count, job_mode, layout=layout)
    LossyNetwork(fabric.send, seed=seed, loss=loss, dup=dup, spurious_timeout=spurious).run(runs)
    for job_id, run in runs.items():
        want = np.sum(np.stack(tensors[job_id]).astype(np.int64), axis=0)
        assert (run.results() == want).all()
    fabric.assert_counters_match_model()
