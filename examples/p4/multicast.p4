/* Multicast: frames to a known MAC are unicast; everything else is flooded through the multicast
   group the control plane configured for the ingress port. Egress removes the copy that would go
   back out of the ingress port and counts replicas per egress port. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser McParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start { packet.extract(hdr.ethernet); transition accept; }
}

control McVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control McIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action flood(bit<16> group) { standard_metadata.mcast_grp = group; }
    table mac_table {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; NoAction; }
        default_action = NoAction();
    }
    table flood_group {
        key = { standard_metadata.ingress_port: exact; }
        actions = { flood; NoAction; }
        default_action = flood(1);
    }
    apply {
        if (!mac_table.apply().hit) {
            flood_group.apply();
        }
    }
}

control McEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) replicas;
    apply {
        if (standard_metadata.egress_rid != 0 &&
                standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        } else {
            replicas.count((bit<32>)standard_metadata.egress_port);
        }
    }
}

control McCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control McDeparser(packet_out packet, in headers_t hdr) { apply { packet.emit(hdr.ethernet); } }

V1Switch(McParser(), McVerify(), McIngress(), McEgress(), McCompute(), McDeparser()) main;
