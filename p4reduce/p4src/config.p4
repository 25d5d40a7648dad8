/* Compile-time sizes of p4reduce (docs/protocol.md sections 1 and 9). Each one is a build setting:
 * `make build LANES=256 SUBBLOCK=16` passes -DLANES=256 -DSUBBLOCK=16 to the compiler (p4c-bm2-ss
 * or p4sim-compile). protocol/constants.py holds the same defaults for Python.
 *
 * Supported layouts: SUBBLOCK 1..128, NUM_SUBBLOCKS = LANES / SUBBLOCK 1..16, and a dense packet
 * (20 + 8 + 24 + 4 * LANES bytes of IPv4) within IPV4_MTU: up to 362 lanes at 1500 bytes, 1024
 * lanes (16 sub-blocks of 64) at 4148 bytes or more (jumbo frames: `make build MTU=9000 LANES=1024
 * SUBBLOCK=64`, and links of that MTU: `make run MTU=9000 ...`). */
#ifndef P4REDUCE_CONFIG_P4
#define P4REDUCE_CONFIG_P4

#ifndef LANES
#define LANES 256           /* int32 lanes per packet: 1 KiB of payload (docs/protocol.md 1) */
#endif
#ifndef SUBBLOCK
#define SUBBLOCK 16         /* lanes per sub-block, the unit of sparsity */
#endif
#ifndef SLOTS
#define SLOTS 4096          /* aggregator slots shared by all jobs; each has 2 shadow copies */
#endif
#ifndef MAX_WORKERS
#define MAX_WORKERS 32      /* width of the per-slot seen bitmap */
#endif
#ifndef AGG_UDP_PORT
#define AGG_UDP_PORT 48864  /* 0xBEE0: UDP port the switch aggregates on (as SwitchML) */
#endif
#ifndef IPV4_MTU
#define IPV4_MTU 1500       /* largest IPv4 packet the links carry: a dense packet must fit */
#endif

#if SUBBLOCK < 1 || SUBBLOCK > 128
#error "SUBBLOCK must be 1..128"
#endif
#if LANES < 1 || (LANES % SUBBLOCK) != 0
#error "LANES must be a positive multiple of SUBBLOCK"
#endif
#define NUM_SUBBLOCKS (LANES / SUBBLOCK)
#if NUM_SUBBLOCKS > 16
#error "LANES / SUBBLOCK must be 1..16 (the sub-block bitmap is 16 bits)"
#endif
#if 20 + 8 + 24 + 4 * LANES > IPV4_MTU
#error "a dense packet of LANES lanes (52 + 4 * LANES bytes of IPv4) exceeds IPV4_MTU"
#endif
#if SLOTS < 1 || SLOTS > 0x7FFFFFFF
#error "SLOTS must be 1..2^31-1 (registers hold 2 * SLOTS cells, a bit<32> size)"
#endif
#if MAX_WORKERS < 1 || MAX_WORKERS > 255
#error "MAX_WORKERS must be 1..255"
#endif

#define REG_SIZE (2 * SLOTS)                                /* two shadow copies per slot */
#define FULL_BITMAP (16w0xFFFF >> (16 - NUM_SUBBLOCKS))     /* every sub-block present */
#define SB_BIT(K) (16w1 << (K))                             /* sub-block K's bit in a bitmap */
#define SUBBLOCK_BYTES (SUBBLOCK * 4)

#endif
