"""`make demo`: a network, the main jobs (dense and sparse allreduce, training) and their checks."""
