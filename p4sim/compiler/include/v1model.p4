/* p4sim v1model architecture: the simple_switch (BMv2) architecture as p4sim-compile knows it.
   Declarations follow the v1model documentation; the compiler gives the externs their BMv2
   meaning (register_read, count, modify_field_with_hash_based_offset, ...). */
#ifndef P4SIM_V1MODEL_P4
#define P4SIM_V1MODEL_P4

#include <core.p4>

match_kind {
    range,
    optional,
    selector
}

typedef bit<9> PortId_t;
typedef bit<48> EgressInstance_t;
typedef bit<16> MulticastGroup_t;

@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>  ingress_port;
    bit<9>  egress_spec;
    bit<9>  egress_port;
    bit<32> instance_type;
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp") bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth") bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta") bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth") bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp") bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp") bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp") bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid") bit<16> egress_rid;
    bit<1>  checksum_error;
    error   parser_error;
    @alias("intrinsic_metadata.priority") bit<3> priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

extern counter<Tp_I> {
    counter(bit<32> size, CounterType type);
    void count(in Tp_I index);
}

extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

extern register<Tp_T, Tp_I> {
    register(bit<32> size);
    void read(out Tp_T result, in Tp_I index);
    void write(in Tp_I index, in Tp_T value);
}

extern void random<Tp_T>(out Tp_T result, in Tp_T lo, in Tp_T hi);

extern void digest<Tp_T>(in bit<32> receiver, in Tp_T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

extern void mark_to_drop(inout standard_metadata_t standard_metadata);

extern void hash<Tp_O, Tp_T, Tp_D, Tp_M>(out Tp_O result, in HashAlgorithm algo, in Tp_T base, in Tp_D data, in Tp_M max);

enum CloneType {
    I2E,
    E2E
}

extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate_preserving_field_list(bit<8> index);
extern void clone(in CloneType type, in bit<32> session);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);
extern void truncate(in bit<32> length);
extern void assert(in bool check);
extern void assume(in bool check);
extern void log_msg(string msg);
extern void log_msg<Tp_T>(string msg, in Tp_T data);

extern void verify_checksum<Tp_T, Tp_O>(in bool condition, in Tp_T data, in Tp_O checksum, HashAlgorithm algo);
extern void update_checksum<Tp_T, Tp_O>(in bool condition, in Tp_T data, inout Tp_O checksum, HashAlgorithm algo);
extern void verify_checksum_with_payload<Tp_T, Tp_O>(in bool condition, in Tp_T data, in Tp_O checksum, HashAlgorithm algo);
extern void update_checksum_with_payload<Tp_T, Tp_O>(in bool condition, in Tp_T data, inout Tp_O checksum, HashAlgorithm algo);

parser Parser<Tp_H, Tp_M>(packet_in b, out Tp_H parsedHdr, inout Tp_M meta,
                          inout standard_metadata_t standard_metadata);
control VerifyChecksum<Tp_H, Tp_M>(inout Tp_H hdr, inout Tp_M meta);
control Ingress<Tp_H, Tp_M>(inout Tp_H hdr, inout Tp_M meta, inout standard_metadata_t standard_metadata);
control Egress<Tp_H, Tp_M>(inout Tp_H hdr, inout Tp_M meta, inout standard_metadata_t standard_metadata);
control ComputeChecksum<Tp_H, Tp_M>(inout Tp_H hdr, inout Tp_M meta);
control Deparser<Tp_H>(packet_out b, in Tp_H hdr);

package V1Switch<Tp_H, Tp_M>(Parser<Tp_H, Tp_M> p, VerifyChecksum<Tp_H, Tp_M> vr, Ingress<Tp_H, Tp_M> ig,
                             Egress<Tp_H, Tp_M> eg, ComputeChecksum<Tp_H, Tp_M> ck, Deparser<Tp_H> dep);

#endif
