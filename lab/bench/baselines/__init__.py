"""Baselines p4reduce is compared against: gloo's ring allreduce and a TCP parameter server.

Each baseline is a module run with ``python -m`` inside a Mininet host; it prints one JSON record
(see ``bench.hostside``) that the harness aggregates.
"""
