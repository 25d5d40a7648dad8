"""Mininet topologies with P4 switches, and the `make run` / `make demo` / `make stop` sessions.

Modules, one concept each:
  target       which P4 target binary (simple_switch_grpc or p4sim-switch) and its command line
  p4switch     the Mininet switch node that runs that target and waits for its gRPC port
  links        --bw/--delay/--loss and --uplink-* (TCLink; nftables loss where the kernel has no netem)
  star, twotier, tree, topologies   the topologies (tree.py: the builder of two-tier and tree)
  cli_args     the options run and demo share, checked together before anything starts
  network      P4Network: build, address, shape, describe and stop a topology
  description  the topology description file the controller reads (run/topology.json)
  apirelay     the job API reachable at 127.0.0.1 inside every host, out of band
  controller_proc   start the controller (the job API's client is protocol.job_api)
  ports, processes   free loopback ports and open ones; stopping the servers a session started
  session      network + controller + relay, with the PID record that `stop` uses (runstate)
  hostproc     run a command on every host and follow its JSON-line events
  run, demo, demo_worker, __main__   the command-line entry points
"""
