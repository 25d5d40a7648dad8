/* ARP responder, the first stage of ingress: the switch answers ARP requests for the addresses it
 * owns (the aggregation service address), so hosts need no static ARP entry for it
 * (docs/deploy.md). The reply goes back out of the port the request came in on; other ARP
 * (requests for hosts, replies) is forwarded as before. The controller fills the table from the
 * topology's aggregating switch `ip`/`mac` (controller/forwarding.py). */
#ifndef P4REDUCE_ARP_RESPONDER_P4
#define P4REDUCE_ARP_RESPONDER_P4
#include <core.p4>
#include <v1model.p4>
#include "constants.p4"
#include "headers.p4"

control ArpResponder(inout headers_t hdr, inout standard_metadata_t standard_metadata,
                     out bool replied) {
    /* Turn the request into the reply "IP is at mac", back to the asker. */
    action reply(mac_addr_t mac) {
        ipv4_addr_t asked = hdr.arp.tpa;
        hdr.ethernet.dstAddr = hdr.arp.sha;
        hdr.ethernet.srcAddr = mac;
        hdr.arp.oper = 2;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.sha = mac;
        hdr.arp.spa = asked;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        replied = true;
    }

    /* target protocol address -> the MAC that owns it; miss = not ours, forward the request */
    table addresses {
        key = { hdr.arp.tpa: exact; }
        actions = { reply; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        replied = false;
        if (hdr.arp.isValid() && hdr.arp.htype == 1 && hdr.arp.ptype == ETHERTYPE_IPV4
                && hdr.arp.hlen == 6 && hdr.arp.plen == 4 && hdr.arp.oper == 1) {
            addresses.apply();
        }
    }
}

#endif
