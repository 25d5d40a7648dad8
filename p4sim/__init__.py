"""p4sim: an embedded stand-in for p4c-bm2-ss (p4sim-compile) and simple_switch_grpc (p4sim-switch)."""
