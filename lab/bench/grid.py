"""What a benchmark run measures: the full grid of `make bench` and the quick one for CI."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from lab.bench.aggregation_program import DEFAULT as DEFAULT_PROGRAM
from lab.bench.links import GRID_LINKS, JUMBO_LINKS, JUMBO_MTU, LINKS, LOSS_LINKS

KI, MI = 1 << 10, 1 << 20
FULL_SIZES = (1 * MI, 4 * MI, 16 * MI)
DENSITIES = (1.0, 0.5, 0.25, 0.10, 0.05, 0.01)
SYSTEMS = ("p4reduce", "p4reduce-sparse", "gloo", "ps-tcp")
SECTIONS = ("allreduce", "jumbo", "sparsity", "loss", "training", "switch-rate", "encode", "faults",
            "hierarchy")
# The jumbo section's program: 1024 lanes (16 sub-blocks of 64) in a 4148-byte packet, for links of
# MTU 9000 (docs/protocol.md, "Wider packets on links with a larger MTU")
JUMBO_DEFINES = ("LANES=1024", "SUBBLOCK=64", f"IPV4_MTU={JUMBO_MTU}")
JUMBO_SYSTEMS = ("p4reduce", "gloo")
TRAINING_MODELS = ("mlp", "wide-mlp", "embedding")          # bench/train_models.py
TRAINING_SYSTEMS = ("gloo", "p4reduce", "p4reduce-hook")   # bench/train_worker.py
# timed iterations per model and run: the 10M-parameter and the embedding model move 43 and 67 MB
# of gradients per iteration (seconds each at 100 Mbit/s), so they run few (docs/benchmarks.md)
FULL_TRAINING_ITERATIONS = {"mlp": 40, "wide-mlp": 6, "embedding": 10}
QUICK_TRAINING_ITERATIONS = {"mlp": 10, "wide-mlp": 2, "embedding": 3}


@dataclass
class Grid:
    mode: str
    workers: tuple[int, ...]
    sizes: tuple[int, ...]
    links: tuple[str, ...]
    systems: tuple[str, ...]
    reps: int
    warmup: int
    densities: tuple[float, ...]
    sparsity_size: int
    sparsity_workers: int
    sparsity_links: tuple[str, ...]
    cell_budget_s: float          # skip a cell whose predicted time exceeds this
    cell_timeout_s: float         # kill a cell that runs longer than this
    loss_links: tuple[str, ...] = LOSS_LINKS   # p4reduce dense under loss, against the first (loss-free)
    loss_workers: int = 4
    loss_size: int = 1 * MI
    # the training section (bench/training.py): every model x system on every (workers, link)
    training_workers: tuple[int, ...] = (4, 8)
    training_links: tuple[str, ...] = GRID_LINKS
    training_models: tuple[str, ...] = TRAINING_MODELS
    training_systems: tuple[str, ...] = TRAINING_SYSTEMS
    training_iterations: dict[str, int] = field(default_factory=lambda: dict(FULL_TRAINING_ITERATIONS))
    training_timeout_s: float = 900.0   # one system's run of one model on one network
    # the allreduce comparison again on jumbo-frame links, with the program built for them
    jumbo_workers: tuple[int, ...] = (4, 8)
    jumbo_sizes: tuple[int, ...] = FULL_SIZES
    jumbo_links: tuple[str, ...] = JUMBO_LINKS
    jumbo_systems: tuple[str, ...] = JUMBO_SYSTEMS
    sections: tuple[str, ...] = SECTIONS
    switch: str = "auto"
    program: str = str(DEFAULT_PROGRAM)   # BMv2 JSON (P4Info beside it) of the aggregation program
    jumbo_program: str = ""               # the jumbo section's; empty: built with JUMBO_DEFINES

    def as_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        problems: list[str] = []
        if any(w < 2 for w in self.workers):
            problems.append(f"workers must be >= 2: {self.workers}")
        if any(s < 1 for s in self.sizes):
            problems.append(f"sizes must be positive: {self.sizes}")
        problems += [f"unknown link setting {l!r} (known: {', '.join(LINKS)})"
                     for l in (*self.links, *self.sparsity_links, *self.loss_links, *self.jumbo_links)
                     if l not in LINKS]
        problems += [f"jumbo link setting {l!r} has no MTU of its own" for l in self.jumbo_links
                     if l in LINKS and LINKS[l].mtu is None]
        problems += [f"unknown system {s!r} (known: {', '.join(SYSTEMS)})"
                     for s in (*self.systems, *self.jumbo_systems) if s not in SYSTEMS]
        problems += [f"unknown section {s!r} (known: {', '.join(SECTIONS)})"
                     for s in self.sections if s not in SECTIONS]
        problems += [f"density {d} outside (0, 1]" for d in self.densities if not 0 < d <= 1]
        problems += [f"unknown training link setting {l!r}" for l in self.training_links if l not in LINKS]
        problems += [f"unknown training model {m!r} (known: {', '.join(TRAINING_MODELS)})"
                     for m in self.training_models if m not in TRAINING_MODELS]
        problems += [f"unknown training system {s!r} (known: {', '.join(TRAINING_SYSTEMS)})"
                     for s in self.training_systems if s not in TRAINING_SYSTEMS]
        problems += [f"training iterations for {m!r} missing or < 1" for m in self.training_models
                     if self.training_iterations.get(m, 0) < 1]
        if any(w < 2 for w in self.training_workers):
            problems.append(f"training workers must be >= 2: {self.training_workers}")
        if self.reps < 1:
            problems.append(f"reps must be >= 1: {self.reps}")
        if self.warmup < 0:
            problems.append(f"warmup must be >= 0: {self.warmup}")
        if problems:
            raise ValueError("; ".join(problems))


def full_grid() -> Grid:
    return Grid(mode="full", workers=(4, 8), sizes=FULL_SIZES, links=GRID_LINKS, systems=SYSTEMS,
                reps=3, warmup=1, densities=DENSITIES, sparsity_size=1 * MI, sparsity_workers=4,
                sparsity_links=GRID_LINKS, cell_budget_s=900.0, cell_timeout_s=1800.0)


def quick_grid() -> Grid:
    """Smallest size, 4 workers, few repetitions: a test of the harness that CI can afford."""
    return Grid(mode="quick", workers=(4,), sizes=(64 * KI,), links=GRID_LINKS, systems=SYSTEMS,
                reps=2, warmup=1, densities=(1.0, 0.25, 0.01), sparsity_size=64 * KI,
                sparsity_workers=4, sparsity_links=("unshaped",), cell_budget_s=60.0,
                cell_timeout_s=60.0, loss_links=("unshaped", "loss-5pct"), loss_size=64 * KI,
                training_workers=(4,), training_links=("unshaped",),
                training_iterations=dict(QUICK_TRAINING_ITERATIONS), training_timeout_s=240.0,
                jumbo_workers=(4,), jumbo_sizes=(64 * KI,), jumbo_links=JUMBO_LINKS[:1])
