/* The UDP payload length a p4reduce packet has with the sub-blocks it holds: the p4reduce header
 * plus SUBBLOCK_BYTES per valid sub-block header. Admission checks a contribution's lengths with
 * it; Result sets a result's. */
#ifndef P4REDUCE_PAYLOAD_LENGTH_P4
#define P4REDUCE_PAYLOAD_LENGTH_P4
#include <core.p4>
#include "constants.p4"
#include "headers.p4"

control PayloadLength(in headers_t hdr, out bit<16> payload_bytes) {
#define ADD_SUBBLOCK_BYTES(K) if (hdr.sb##K.isValid()) { payload_bytes = payload_bytes + SUBBLOCK_BYTES; }
    apply {
        payload_bytes = P4R_HEADER_BYTES;
        FOR_EACH_SUBBLOCK(ADD_SUBBLOCK_BYTES)
    }
}

#endif
