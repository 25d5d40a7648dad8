/* IP source guard on host-facing ports (docs/protocol.md sections 3 and 5), the first stage of
 * ingress. A port with a host attached is bound to that host's IPv4 address, so the host cannot
 * send IPv4 packets under another address: not a worker's (spoofed contributions), not the
 * aggregation address (forged results). Ports without an entry (links to other switches, ports
 * with no known host) are not checked; non-IPv4 frames (ARP, IPv6) are not checked either. */
#ifndef P4REDUCE_SOURCE_GUARD_P4
#define P4REDUCE_SOURCE_GUARD_P4
#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

control SourceGuard(in headers_t hdr, in standard_metadata_t standard_metadata,
                    out bool spoofed) {
    /* The IPv4 source address the host on this port must use. */
    action host_source(ipv4_addr_t ip) {
        spoofed = hdr.ipv4.srcAddr != ip;
    }

    /* ingress port -> the address of the host attached there; miss = port not guarded */
    table hosts {
        key = { standard_metadata.ingress_port: exact; }
        actions = { host_source; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        spoofed = false;
        if (hdr.ipv4.isValid()) {
            hosts.apply();
        }
    }
}

#endif
