"""p4reduce benchmarks (`make bench`, `python -m lab.bench`): p4reduce vs gloo and a parameter server
in Mininet through the P4 switch, the sparsity sweep, switch packet rates, worker encode speed.

Method and how to read the results: docs/benchmarks.md.
"""
