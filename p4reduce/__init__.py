"""p4reduce: in-network gradient aggregation on P4 switches.

The Python API is `p4reduce.worker` (README "User guide", step 4; runnable scripts in examples/):
`worker.create_job`, `worker.init`, `worker.allreduce(tensor)`, `worker.Agent`,
`worker.init_process_group` and `worker.ddp_hook` for PyTorch DDP, `worker.register_compressor`.

The distribution installs this package and `p4sim` (the embedded compiler, p4sim-compile, and
switch, p4sim-switch), which is its own top-level package and imports nothing from p4reduce:

    p4reduce.protocol       the wire format, codecs and a reference model of the switch
    p4reduce.controller     P4Runtime controller, job/slot manager, job API, shell
    p4reduce.worker         worker agents: quantization, compressors, streaming, allreduce, DDP hook
    p4reduce.mininet_topos  Mininet topologies and the make run / demo / stop entry points
    lab.bench          benchmarks
    p4reduce/p4src          the aggregation program's P4 source (data, not a module)
"""
import pathlib

__version__ = "0.1.0"

P4SRC_DIR = pathlib.Path(__file__).resolve().parent / "p4src"
"""Where the aggregation program's P4 sources are, in the source tree and when installed."""
