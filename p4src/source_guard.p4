/* IP source guard on host-facing ports (docs/protocol.md sections 3 and 5): the first stage of
 * ingress. A port with a host attached is bound to that host's IPv4 address, so a host cannot
 * send IPv4 packets under another address: not a worker's (spoofed contributions), not the
 * aggregation address (forged results). Ports without an entry (links to other switches, ports
 * with no known host) are not checked. Non-IPv4 frames (ARP, IPv6) are not checked either.
 * Included inside control ReduceIngress. */

/* The IPv4 source address the host on this port must use. */
action host_source(ipv4_addr_t ip) {
    meta.host_ip = ip;
}

/* ingress port -> the address of the host attached there; miss = port not guarded */
table source_guard {
    key = { standard_metadata.ingress_port: exact; }
    actions = { host_source; NoAction; }
    default_action = NoAction();
    size = 512;
}
