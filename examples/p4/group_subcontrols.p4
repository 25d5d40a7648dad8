/* Subset group "sub-controls": each pipeline stage a control of its own with explicit in/out
   parameters, instantiated and applied by the top-level ingress (as SwitchML's P4 does). Tables,
   actions, registers and counters declared inside a sub-control are named as p4c names what it
   inlines: <TopControl>.<instance>.<object> (Ingress.admission.jobs, Ingress.low.cells, ...).
   A control may be instantiated several times (Accumulate() low; Accumulate() high;), each
   instance with its own objects; sub-controls may instantiate sub-controls; 'return' leaves the
   sub-control only, 'exit' ends the whole pipeline. Functions whose body is one 'return expr;'
   are inlined at each call (in_range). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header agg_t { bit<8> job; bit<8> slot; bit<32> value; bit<32> total; bit<8> count; bit<8> status; }
struct headers_t { ethernet_t eth; agg_t agg; }
struct metadata_t { bit<8> job_ok; bit<32> sum; }

parser SParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88b5: agg; default: accept; }
    }
    state agg { pkt.extract(hdr.agg); transition accept; }
}

control SVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

// Admission: a table keyed on an 'in' parameter; the verdict leaves through an 'out' parameter.
control Admission(in bit<8> job, out bit<8> ok, inout standard_metadata_t sm) {
    action admit(bit<9> port) { ok = 1; sm.egress_spec = port; }
    action deny() { ok = 0; mark_to_drop(sm); }
    table jobs {
        key = { job: exact; }
        actions = { admit; deny; }
        default_action = deny();
        size = 16;
    }
    apply { jobs.apply(); }
}

bool in_range(in bit<8> slot, in bit<8> size) { return slot < size; }

// Accumulate: a register per instance; an out-of-range slot returns early with a zero sum.
control Accumulate(in bit<8> slot, in bit<32> value, out bit<32> sum) {
    register<bit<32>>(8) cells;
    apply {
        if (!in_range(slot, 8)) {
            sum = 0;
            return;
        }
        bit<32> cur;
        cells.read(cur, (bit<32>)slot);
        sum = cur + value;
        cells.write((bit<32>)slot, sum);
    }
}

// Tally: counts packets per slot and bumps the header's count (instantiated inside Finish).
control Tally(inout agg_t agg) {
    counter(4, CounterType.packets) hits;
    apply {
        hits.count((bit<32>)agg.slot[1:0]);
        agg.count = agg.count + 1;
    }
}

control Finish(inout headers_t hdr, in bit<32> sum) {
    Tally() tally;
    action stamp(bit<8> status) { hdr.agg.total = sum; hdr.agg.status = status; }
    table finish {
        key = { hdr.agg.job: exact; }
        actions = { stamp; NoAction; }
    }
    apply {
        tally.apply(hdr.agg);
        finish.apply();
    }
}

control SIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Admission() admission;
    Accumulate() low;
    Accumulate() high;
    Finish() finish;
    apply {
        if (!hdr.agg.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        admission.apply(hdr.agg.job, meta.job_ok, sm);
        if (meta.job_ok == 0) {
            return;
        }
        if (hdr.agg.job[0:0] == 0) {
            low.apply(hdr.agg.slot, hdr.agg.value, meta.sum);
        } else {
            high.apply(hdr.agg.slot, hdr.agg.value, meta.sum);
        }
        finish.apply(hdr, meta.sum);
    }
}

control SEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control SCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control SDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.agg); }
}

V1Switch(SParser(), SVerify(), SIngress(), SEgress(), SCompute(), SDeparser()) main;
