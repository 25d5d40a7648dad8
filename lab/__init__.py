"""The lab: benchmarks and their results, the demo and its models and data set.

Run from the checkout (`make bench`, `make demo`); never installed, and the product packages
(p4reduce, p4sim) import nothing from here (tests/test_architecture.py)."""

import os
import pathlib

CHECKOUT = str(pathlib.Path(__file__).resolve().parent.parent)
"""The checkout the lab runs from. Its processes start others as `python -m lab.<...>` (sections,
workers on Mininet hosts) from other folders, so the checkout goes on their PYTHONPATH."""
if CHECKOUT not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (CHECKOUT, os.environ.get("PYTHONPATH")) if p)
