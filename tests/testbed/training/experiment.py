"""Convergence experiment: every compressor on digits (logreg + MLP), 4 simulated workers.

    python -m testbed.training.experiment [--epochs 30] [--out bench/results] [--through p4sim]

Writes convergence.md (table: final test accuracy, bytes sent per worker, wall time),
convergence.json and convergence.png (test accuracy and train loss per epoch). ``--through
model|p4sim`` trains over UDP through testbed.switch_model or the real P4 program on p4sim's engine
(files convergence_<switch>.*; the float32 reference row still comes from the simulation).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

from lab.training.data import load_digits_split
from lab.training.loop import TrainConfig
from p4reduce.worker.compressors import COMPRESSORS
from testbed.training.networked import run_networked
from testbed.training.simulate import DEFAULT_OPTIONS, run_simulated


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.training.experiment",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--lr", type=float, default=TrainConfig.lr, help="SGD learning rate (momentum 0.9)")
    ap.add_argument("--models", default="logreg,mlp")
    ap.add_argument("--compressors", default="float32," + ",".join(COMPRESSORS))
    ap.add_argument("--dense", action="store_true", help="count bytes for dense mode (default: sparse mode)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--through", choices=["sim", "model", "p4sim"], default="sim",
                    help="simulated switch (default), testbed.switch_model over UDP, or p4src on p4sim over UDP")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    split = load_digits_split()
    rows = []
    for model in args.models.split(","):
        for comp in args.compressors.split(","):
            cfg = TrainConfig(model=model, epochs=args.epochs, lr=args.lr)
            if args.through == "sim" or comp == "float32":
                r = run_simulated(comp, cfg, args.workers, split, sparse=not args.dense)
            else:
                r = run_networked(comp, cfg, args.workers, split, switch=args.through, sparse=not args.dense)
            h = r["history"]
            rows.append({"model": model, "compressor": comp, "options": DEFAULT_OPTIONS.get(comp, {}),
                         "final_acc": h.final_acc, "bytes_per_worker": r["bytes_per_worker"],
                         "seconds": r["seconds"], "replicas_identical": r["replicas_identical"],
                         "test_acc": h.test_acc, "train_loss": h.train_loss})
            megabytes = r["bytes_per_worker"] / 1e6
            print(f"{model:7s} {comp:14s} acc {h.final_acc:.4f}  {megabytes:8.2f} MB  {r['seconds']:.2f} s",
                  file=sys.stderr)
    stem = "convergence" if args.through == "sim" else f"convergence_{args.through}"
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    (out / f"{stem}.md").write_text(table(rows, args))
    plot(rows, out / f"{stem}.png")
    return 0


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    how = {"sim": "simulated switch (byte counts from the wire cost model)",
           "model": "testbed.switch_model over UDP (bytes actually sent)",
           "p4sim": "p4src/p4reduce.p4 on p4sim's engine over UDP (bytes actually sent)"}[args.through]
    lines = [f"Digits, {args.workers} workers, {args.epochs} epochs, lr {args.lr}, {how}, "
             f"{'dense' if args.dense else 'sparse'} mode, frame headers included; float32 = simulated reference.", "",
             "| model | compressor | final test acc | vs float32 | MB sent / worker | wall s |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    base = {r["model"]: r["final_acc"] for r in rows if r["compressor"] == "float32"}
    for r in rows:
        d = (r["final_acc"] - base[r["model"]]) * 100 if r["model"] in base else float("nan")
        opts = ",".join(f"{k}={v}" for k, v in r["options"].items())
        name = r["compressor"] + (f" ({opts})" if opts else "")
        lines.append(f"| {r['model']} | {name} | {r['final_acc'] * 100:.2f} % | {d:+.2f} pt | "
                     f"{r['bytes_per_worker'] / 1e6:.2f} | {r['seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r["model"] for r in rows}, key=[r["model"] for r in rows].index)
    fig, axes = plt.subplots(2, len(models), figsize=(6 * len(models), 8), squeeze=False)
    for j, m in enumerate(models):
        for r in (r for r in rows if r["model"] == m):
            ep = range(1, len(r["test_acc"]) + 1)
            ref = r["compressor"] == "float32"  # drawn on top: fixed point lies exactly under it
            kw = {"color": "k", "linestyle": "--", "zorder": 5} if ref else {}
            axes[0][j].plot(ep, [a * 100 for a in r["test_acc"]], label=r["compressor"], **kw)
            axes[1][j].plot(ep, r["train_loss"], label=r["compressor"], **kw)
        axes[0][j].set_title(f"{m}: test accuracy (%)")
        axes[1][j].set_title(f"{m}: train loss")
        axes[1][j].set_yscale("log")
        axes[1][j].set_xlabel("epoch")
        axes[0][j].set_ylim(70, 100)
        axes[0][j].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    sys.exit(main())
