"""Benchmark tensors (exact sums, block densities), grid validation and CLI argument errors."""
import subprocess
import sys

import numpy as np
import pytest

from lab.bench import cli, grid, tensors
from lab.bench.links import LINKS


@pytest.mark.parametrize("world,size,density", [(4, 1000, 1.0), (8, 4096, 0.25), (3, 777, 0.01)])
def test_expected_sum_is_the_exact_sum(world, size, density):
    parts = [tensors.make_tensor(r, size, density=density, block=32) for r in range(world)]
    exact = np.sum(np.stack(parts).astype(np.int64), axis=0)
    assert np.array_equal(tensors.expected_sum(world, size, density=density, block=32), exact)
    assert parts[0].dtype == np.float32 and not np.array_equal(parts[0], parts[1])


@pytest.mark.parametrize("density", [0.5, 0.1, 0.01])
def test_density_is_a_fraction_of_whole_blocks_shared_by_all_ranks(density):
    size, block = 32 * 1000, 32
    a = tensors.make_tensor(0, size, density=density, block=block).reshape(-1, block)
    b = tensors.make_tensor(5, size, density=density, block=block).reshape(-1, block)
    nz_a = np.any(a != 0, axis=1)
    assert np.array_equal(nz_a, np.any(b != 0, axis=1))
    assert nz_a.sum() == round(density * 1000)


def test_bad_tensor_arguments():
    with pytest.raises(ValueError, match="density"):
        tensors.make_tensor(0, 10, density=0)
    with pytest.raises(ValueError, match="size"):
        tensors.make_tensor(0, 0)


def test_grids_are_valid_and_quick_is_small():
    full, quick = grid.full_grid(), grid.quick_grid()
    full.validate()
    quick.validate()
    assert full.workers == (4, 8) and full.sizes == (1 << 20, 4 << 20, 16 << 20)
    assert set(full.systems) == {"p4reduce", "p4reduce-sparse", "gloo", "ps-tcp"}
    assert full.links == ("unshaped", "100mbit-1ms") and full.loss_links == ("unshaped", "loss-1pct", "loss-5pct")
    assert {"allreduce", "sparsity", "loss", "training"} <= set(full.sections)
    assert full.densities == (1.0, 0.5, 0.25, 0.10, 0.05, 0.01)
    assert quick.workers == (4,) and quick.sizes == (64 * 1024,) and quick.reps <= 3
    # the jumbo section: p4reduce and gloo again on MTU-9000 links, p4reduce with 1024 lanes
    assert "jumbo" in full.sections and full.jumbo_workers == (4, 8) and full.jumbo_sizes == full.sizes
    assert full.jumbo_links == ("unshaped-mtu9000", "100mbit-1ms-mtu9000") and full.jumbo_systems == ("p4reduce", "gloo")
    assert {LINKS[l].mtu for l in full.jumbo_links} == {9000} and LINKS["100mbit-1ms-mtu9000"].bw_mbps == 100
    assert grid.JUMBO_DEFINES == ("LANES=1024", "SUBBLOCK=64", "IPV4_MTU=9000")
    assert quick.jumbo_links == ("unshaped-mtu9000",) and quick.jumbo_sizes == (64 * 1024,)


def test_grid_validation_names_the_problem():
    g = grid.quick_grid()
    g.links = ("fast",)
    g.densities = (0.0,)
    with pytest.raises(ValueError, match="unknown link setting 'fast'.*density 0.0"):
        g.validate()
    g = grid.quick_grid()
    g.jumbo_links = ("unshaped",)
    with pytest.raises(ValueError, match="jumbo link setting 'unshaped' has no MTU of its own"):
        g.validate()


def test_cli_links_go_to_the_section_of_their_mtu():
    _, g = cli.parse_args(["--links", "unshaped,unshaped-mtu9000", "--workers", "8", "--sizes", "1M",
                           "--systems", "p4reduce", "--sections", "switch-rate"])
    assert g.links == ("unshaped",) and g.jumbo_links == ("unshaped-mtu9000",)
    assert g.jumbo_workers == (8,) and g.jumbo_sizes == (1 << 20,) and g.jumbo_systems == ("p4reduce",)


@pytest.mark.parametrize("args,msg", [
    (["--links", "fast"], "unknown link setting 'fast'"),
    (["--sizes", "12Q"], "not a count: '12Q'"),
    (["--sections", "everything"], "unknown section 'everything'"),
    (["--systems", "mpi"], "unknown system 'mpi'"),
])
def test_cli_rejects_bad_arguments_clearly(args, msg):
    proc = subprocess.run([sys.executable, "-m", "lab.bench", *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert msg in proc.stderr and "Traceback" not in proc.stderr
