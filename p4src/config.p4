/* Compile-time sizes of p4reduce (docs/protocol.md section 1).
 * Override on the compiler command line, e.g. p4sim-compile -DLANES=64 -DSUBBLOCK=16 ...
 * protocol/constants.py holds the same defaults for Python. */
#ifndef P4REDUCE_CONFIG_P4
#define P4REDUCE_CONFIG_P4

#ifndef LANES
#define LANES 32            /* int32 lanes per packet */
#endif
#ifndef SUBBLOCK
#define SUBBLOCK 8          /* lanes per sub-block, the unit of sparsity */
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

#if (LANES % SUBBLOCK) != 0
#error "LANES must be a multiple of SUBBLOCK"
#endif
#define NUM_SUBBLOCKS (LANES / SUBBLOCK)
#if NUM_SUBBLOCKS < 1 || NUM_SUBBLOCKS > 16
#error "LANES / SUBBLOCK must be 1..16 (the sub-block bitmap is 16 bits)"
#endif
#if MAX_WORKERS < 1 || MAX_WORKERS > 255
#error "MAX_WORKERS must be 1..255"
#endif

#define REG_SIZE (2 * SLOTS)                       /* two shadow copies per slot */
#define FULL_BITMAP ((16w1 << NUM_SUBBLOCKS) - 1)
#define SB_BIT(K) (16w1 << K)
#define SUBBLOCK_BYTES (SUBBLOCK * 4)

#endif
