/* Generated from protocol/wire.py and protocol/constants.py: do not edit.
 * Regenerate with `python -m p4reduce.worker.native_loop --write-header`. */
#ifndef WLOOP_WIRE_H
#define WLOOP_WIRE_H
#define EXP_BIAS 128
#define EXP_MAX 127
#define EXP_MIN (-96)
#define FLAG_EOT 1
#define FLAG_RETX 2
#define FRAME_HEADER_BYTES 42
#define HEADER_BYTES 24
#define MSG_CONTRIB 1
#define MSG_RESULT 2
#define NEXT_NONE 4294967295
#define OFF_BITMAP 18
#define OFF_COUNT 5
#define OFF_EXPONENT 16
#define OFF_FLAGS 1
#define OFF_JOB_ID 2
#define OFF_MSG_TYPE 0
#define OFF_NEXT_OFFSET 12
#define OFF_OFFSET 8
#define OFF_RANK 4
#define OFF_RESERVED 17
#define OFF_SLOT_VER 6
#define OFF_WIRE_TOKEN 20
#define SLOT_BITS 15
#define WL_WIRE_CONSTANTS(X) \
    X(EXP_BIAS) \
    X(EXP_MAX) \
    X(EXP_MIN) \
    X(FLAG_EOT) \
    X(FLAG_RETX) \
    X(FRAME_HEADER_BYTES) \
    X(HEADER_BYTES) \
    X(MSG_CONTRIB) \
    X(MSG_RESULT) \
    X(NEXT_NONE) \
    X(OFF_BITMAP) \
    X(OFF_COUNT) \
    X(OFF_EXPONENT) \
    X(OFF_FLAGS) \
    X(OFF_JOB_ID) \
    X(OFF_MSG_TYPE) \
    X(OFF_NEXT_OFFSET) \
    X(OFF_OFFSET) \
    X(OFF_RANK) \
    X(OFF_RESERVED) \
    X(OFF_SLOT_VER) \
    X(OFF_WIRE_TOKEN) \
    X(SLOT_BITS) \

#endif
