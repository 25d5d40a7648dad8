"""`python -m lab.bench` (`make bench`, `make bench-quick`): run the benchmarks, print, save, plot."""
from __future__ import annotations

import argparse
import os
import pathlib
import signal
import sys

from lab.bench import grid as gridmod
from lab.bench import results, runner
from lab.bench.links import LINKS
from lab.bench.report import render
from lab.bench.star_topology import SWITCH_CHOICES

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(_parse_count(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not values:
        raise argparse.ArgumentTypeError("empty list")
    return values


def _parse_count(v: str) -> int:
    """'65536', '64K', '16M' -> elements."""
    v = v.strip()
    mult = {"k": 1 << 10, "m": 1 << 20}.get(v[-1:].lower(), 1)
    digits = v[:-1] if mult != 1 else v
    try:
        return int(digits) * mult
    except ValueError:
        raise ValueError(f"not a count: {v!r} (use e.g. 65536, 64K, 16M)") from None


def _str_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _float_list(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v.rstrip("%")) / (100 if v.endswith("%") else 1) for v in text.split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of densities: {text!r} (e.g. 1,0.5,10%)") from None


def _iterations(text: str) -> dict[str, int]:
    """'20' (every model) or 'mlp=60,embedding=12' -> {model: iterations}."""
    try:
        if "=" not in text:
            return {m: int(text) for m in gridmod.TRAINING_MODELS}
        pairs = [v.split("=", 1) for v in text.split(",") if v.strip()]
        return {k.strip(): int(n) for k, n in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not iterations: {text!r} (e.g. 20 or mlp=60,embedding=12)") from None


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, gridmod.Grid]:
    p = argparse.ArgumentParser(
        prog="python -m lab.bench",
        description="p4reduce benchmarks: p4reduce vs gloo and a TCP parameter server in Mininet, "
                    "sparsity sweep, p4reduce under loss, switch packet rate, worker encode throughput. "
                    "Needs root for the Mininet sections. See docs/benchmarks.md.")
    p.add_argument("--quick", action="store_true",
                   help="smallest size, 4 workers, few repetitions (a test of the harness, minutes)")
    p.add_argument("--sections", type=_str_list, help=f"comma list of {', '.join(gridmod.SECTIONS)}")
    p.add_argument("--workers", type=_int_list, help="comma list of worker counts, e.g. 4,8")
    p.add_argument("--sizes", type=_int_list, help="comma list of tensor sizes in elements, e.g. 64K,1M,16M")
    p.add_argument("--links", type=_str_list,
                   help=f"comma list of {', '.join(LINKS)} (those with an MTU of their own are the jumbo "
                        "section's, the others the allreduce section's)")
    p.add_argument("--systems", type=_str_list, help=f"comma list of {', '.join(gridmod.SYSTEMS)}")
    p.add_argument("--densities", type=_float_list, help="sparsity densities, e.g. 1,0.5,0.25 or 100%%,10%%")
    p.add_argument("--sparsity-size", type=_parse_count, help="tensor elements for the sparsity sweep")
    p.add_argument("--training-models", type=_str_list,
                   help=f"comma list of {', '.join(gridmod.TRAINING_MODELS)} (the training section)")
    p.add_argument("--training-systems", type=_str_list,
                   help=f"comma list of {', '.join(gridmod.TRAINING_SYSTEMS)} (the training section)")
    p.add_argument("--training-iterations", type=_iterations,
                   help="timed iterations per training run: N for every model, or MODEL=N,... "
                        f"(default {','.join(f'{k}={v}' for k, v in gridmod.FULL_TRAINING_ITERATIONS.items())}; "
                        f"--quick {','.join(f'{k}={v}' for k, v in gridmod.QUICK_TRAINING_ITERATIONS.items())})")
    p.add_argument("--reps", type=int, help="timed repetitions per cell")
    p.add_argument("--warmup", type=int, help="untimed repetitions per cell")
    p.add_argument("--budget", type=float, help="skip a cell predicted to take longer (s)")
    p.add_argument("--timeout", type=float, help="kill a cell running longer (s)")
    p.add_argument("--switch", choices=SWITCH_CHOICES, default="auto",
                   help="data path: the P4 switch (auto when available) or a Linux bridge (baselines only)")
    p.add_argument("--program", type=pathlib.Path,
                   help="BMv2 JSON of the aggregation program, P4Info beside it (default build/p4reduce.json)")
    p.add_argument("--jumbo-program", type=pathlib.Path,
                   help="the jumbo section's program, built for MTU 9000 (default: built into build/jumbo/ "
                        f"with {' '.join('-D' + d for d in gridmod.JUMBO_DEFINES)})")
    p.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="results directory")
    p.add_argument("--name", help="result file stem (default: bench-<mode>-<timestamp>)")
    p.add_argument("--no-charts", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    grid = gridmod.quick_grid() if args.quick else gridmod.full_grid()
    overrides = {"sections": args.sections, "workers": args.workers, "sizes": args.sizes,
                 "systems": args.systems, "densities": args.densities,
                 "sparsity_size": args.sparsity_size, "reps": args.reps, "warmup": args.warmup,
                 "cell_budget_s": args.budget, "cell_timeout_s": args.timeout}
    for key, value in overrides.items():
        if value is not None:
            setattr(grid, key, value)
    if args.links:
        grid.jumbo_links = tuple(l for l in args.links if l in LINKS and LINKS[l].mtu is not None)
        grid.links = tuple(l for l in args.links if l not in grid.jumbo_links)
        grid.sparsity_links = tuple(l for l in grid.sparsity_links if l in grid.links) or grid.links[:1]
        grid.training_links = grid.links
    if args.workers:
        grid.jumbo_workers = args.workers
        grid.sparsity_workers = grid.loss_workers = args.workers[0]
        grid.training_workers = args.workers
    if args.training_models:
        grid.training_models = args.training_models
    if args.training_systems:
        grid.training_systems = args.training_systems
    if args.training_iterations:
        grid.training_iterations = {**grid.training_iterations, **args.training_iterations}
    if args.sizes:
        grid.jumbo_sizes = args.sizes
    if args.systems:
        grid.jumbo_systems = args.systems
    grid.switch = args.switch
    if args.program:
        grid.program = str(args.program.resolve())
    if args.jumbo_program:
        grid.jumbo_program = str(args.jumbo_program.resolve())
    try:
        grid.validate()
    except ValueError as exc:
        p.error(str(exc))
    needs_root = {"allreduce", "jumbo", "sparsity", "loss", "training", "faults", "hierarchy"} & set(grid.sections)
    if needs_root and os.geteuid() != 0:
        p.error(f"sections {', '.join(sorted(needs_root))} need root (Mininet); "
                "run as root or pick --sections switch-rate,encode")
    return args, grid


def _interrupt_on_signals() -> None:
    """SIGTERM (e.g. `kill PID`) and SIGINT, even if inherited as ignored by a background job,
    stop the run like Ctrl-C: networks torn down, processes stopped, the cells so far saved."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args, grid = parse_args(argv)
    _interrupt_on_signals()
    doc = runner.run(grid, argv, progress=not args.no_progress)
    paths = results.save(doc, args.out, args.name)
    if not args.no_charts:
        from lab.bench import charts  # matplotlib: only when charts are drawn
        doc["charts"] = charts.write_all(doc, args.out, paths.stem)
        results.save(doc, args.out, paths.stem)
    latest = results.publish_latest(doc, paths, doc.get("charts", []))
    print(render(doc))
    print(f"results: {paths} (copied to {latest}/)")
    for chart in doc.get("charts", []):
        print(f"chart:   {chart}")
    return results.exit_status(doc)
