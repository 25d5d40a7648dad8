"""The lab: benchmarks and their results, the demo and its models and data set.

Run from the checkout (`make bench`, `make demo`); never installed, and the product packages
(p4reduce, p4sim) import nothing from here (tests/test_architecture.py)."""
