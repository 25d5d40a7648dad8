/* p4sim native runtime: what generated programs and the runtime library share.
 *
 * One rt_switch holds the state a v1model switch keeps between packets (tables, registers,
 * counters, meters, value sets, the packet replication engine) behind one recursive mutex.
 * The packet path of a program (parser, controls, deparser, traffic manager) is generated C
 * that includes this header; everything a control plane changes lives here, so a program
 * never needs recompiling when entries change.
 */
#ifndef P4SIM_RT_H
#define P4SIM_RT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RT_ABI 3
#define RT_EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- tables ------------------------------------------------------------------------------- */
enum { RT_TBL_NONE = 0, RT_TBL_EXACT = 1, RT_TBL_LPM = 2, RT_TBL_TERNARY = 3 };

typedef struct rt_entry rt_entry;
struct rt_entry {
    rt_entry *chain;          /* next entry in the same hash bucket */
    int32_t action;           /* action id, -1 = no action */
    int32_t handle;           /* the control plane's handle; -1 for the default entry */
    uint32_t priority, plen;  /* ternary rank: larger priority, then longer prefix, then older */
    uint64_t packets, bytes;  /* direct counter */
    uint64_t *args;           /* action data, argw words */
    uint64_t *value, *mask;   /* kw words each, least significant word first */
    uint64_t *rlo, *rhi;      /* one bound pair per range key */
    uint64_t data[];
};

typedef struct {
    uint32_t plen, count, nbuckets;
    uint64_t *mask;
    rt_entry **buckets;
} rt_level;

typedef struct {
    int kind, kw, nranges, argw;
    uint32_t max_size, count;
    rt_entry *def;
    rt_entry **buckets;       /* exact */
    uint32_t nbuckets;
    rt_level *levels;         /* lpm: longest prefix first */
    uint32_t nlevels, cap_levels;
    rt_entry **rows;          /* ternary: best first */
    uint32_t nrows, cap_rows;
} rt_table;

/* ---- stateful objects --------------------------------------------------------------------- */
typedef struct {
    void *cells;
    uint32_t size, width, cell_bytes, limbs;  /* limbs > 0: cells of `limbs` uint64 words */
} rt_register;

typedef struct {
    uint64_t *packets, *bytes;
    uint32_t size;
} rt_counter;

typedef struct {
    double cir, cburst, pir, pburst, tc, tp, last;
    int configured;
} rt_meter_cell;

typedef struct {
    rt_meter_cell *cells;
    uint32_t size;
    int by_bytes;
} rt_meter;

typedef struct {
    uint64_t *values, *masks;
    uint32_t n;
} rt_vset;

typedef struct {
    uint32_t n, truncate;
    struct { uint16_t port, rid; } r[];
} rt_group;

/* ---- packet buffers ----------------------------------------------------------------------- */
typedef struct {
    uint32_t off, len, port, input;
} rt_outrec;

typedef struct {
    uint8_t *data;
    size_t used, cap;
    rt_outrec *recs;
    uint32_t nrec, caprec;
    uint32_t events;          /* packets a loop bound ended (worth a log line) */
    uint32_t ev_kind, ev_port;/* the first of them: RT_EV_*, its port */
    uint64_t ev_value;        /* parser states visited, or copies left at the pass limit */
} rt_outbuf;

enum { RT_EV_NONE, RT_EV_PARSER_LOOP, RT_EV_PASS_LIMIT, RT_EV_ACTION_LOOP };

enum {
    RT_ST_RECEIVED, RT_ST_EMITTED, RT_ST_DROPPED, RT_ST_INTERNAL, RT_ST_PARSER_LOOP,
    RT_ST_PASS_LIMIT, RT_ST_ACTION_LOOP, RT_ST_ARENA, RT_NSTATS
};

typedef struct rt_switch rt_switch;
/* n frames (frames[i], len[i] bytes, received on port[i]) through the program; outputs appended */
typedef uint32_t (*rt_batch_fn)(rt_switch *sw, const uint8_t *const *frames, const uint32_t *len,
                                const uint16_t *port, uint32_t n, rt_outbuf *ob);

struct rt_switch {
    pthread_mutex_t lock;     /* recursive: held per batch of packets and per control call */
    rt_table *tables;
    rt_register *regs;
    rt_counter *ctrs;
    rt_meter *meters;
    rt_vset *vsets;
    uint32_t ntables, nregs, nctrs, nmeters, nvsets;
    rt_group **mc, **clone;   /* 65536 slots each */
    uint32_t drop_port;
    uint64_t stats[RT_NSTATS];
    char last_error[160];
    /* scratch owned by whoever holds the lock */
    uint8_t *arena;
    size_t arena_cap, arena_used;
    uint8_t *scratch;
    size_t scratch_cap;
    int abort;                /* set by a failed stack index; the statement's caller drops */
    const char *drop_msg;     /* why the last packet was dropped in a control (assert, index) */
    int drop_kind;            /* RT_EV_ACTION_LOOP when a loop bound dropped it */
    /* time and randomness (tests freeze both) */
    int64_t t0_ns, frozen_us;
    double meter_clock;       /* >= 0: the meters' clock in seconds (tests), else CLOCK_MONOTONIC */
    uint64_t rng;
    int rng_fixed;
    /* trace */
    int trace_on;
    char *tbuf;
    size_t tused, tcap;
    uint64_t pkt_id;
    rt_batch_fn batch;
    void *ports;              /* the native port loop, when running */
};

/* ---- runtime library (rt_*.c) -------------------------------------------------------------- */
RT_EXPORT const rt_entry *rt_lookup(const rt_table *t, const uint64_t *key, const uint64_t *rv);
RT_EXPORT uint64_t rt_calc(int algo, const uint8_t *buf, size_t n);
RT_EXPORT uint8_t *rt_scratch(rt_switch *sw, size_t n);
RT_EXPORT void *rt_arena(rt_switch *sw, size_t n);
RT_EXPORT void rt_arena_reset(rt_switch *sw);
RT_EXPORT uint64_t rt_now_us(rt_switch *sw);
RT_EXPORT uint64_t rt_rand_u64(rt_switch *sw, uint64_t span);  /* uniform in [0, span]; 0 when frozen */
RT_EXPORT int rt_meter_exec(rt_switch *sw, uint32_t m, int64_t index, uint64_t packet_length);
RT_EXPORT int rt_vset_match(const rt_switch *sw, uint32_t v, uint64_t key, uint64_t mask);
RT_EXPORT void rt_trace(rt_switch *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
RT_EXPORT void rt_trace_log(rt_switch *sw, const char *fmt, int nargs, const int64_t *vals, const int *neg);
RT_EXPORT rt_outbuf *rt_outbuf_new(void);
RT_EXPORT void rt_outbuf_free(rt_outbuf *ob);
RT_EXPORT void rt_outbuf_reset(rt_outbuf *ob);
RT_EXPORT uint8_t *rt_out_reserve(rt_outbuf *ob, size_t n);
RT_EXPORT void rt_out_commit(rt_outbuf *ob, uint32_t port, uint32_t len, uint32_t input);
RT_EXPORT void rt_set_error(rt_switch *sw, const char *msg);

enum { RT_ALGO_CSUM16, RT_ALGO_XOR16, RT_ALGO_CRC16, RT_ALGO_CRC32, RT_ALGO_IDENTITY, RT_ALGO_RANDOM };

/* ---- inline helpers for generated code ----------------------------------------------------- */
typedef unsigned __int128 rt_u128;

static inline uint64_t rt_mask(unsigned w) { return w >= 64 ? ~0ULL : ((1ULL << w) - 1); }

/* `w` (<= 64) bits at bit offset `bo` of `p`, big endian; reads ceil((bo%8 + w)/8) bytes */
static inline uint64_t rt_get_bits(const uint8_t *p, uint32_t bo, unsigned w) {
    const uint8_t *q = p + (bo >> 3);
    unsigned sh = bo & 7, nb = (sh + w + 7) >> 3;
    rt_u128 acc = 0;
    for (unsigned i = 0; i < nb; i++) acc = (acc << 8) | q[i];
    return (uint64_t)(acc >> (nb * 8 - sh - w)) & rt_mask(w);
}

/* ORs `w` (<= 64) bits of `v` into `p` at bit offset `bo` (the bytes start zeroed) */
static inline void rt_put_bits(uint8_t *p, uint32_t bo, unsigned w, uint64_t v) {
    uint8_t *q = p + (bo >> 3);
    unsigned sh = bo & 7, nb = (sh + w + 7) >> 3;
    rt_u128 acc = (rt_u128)(v & rt_mask(w)) << (nb * 8 - sh - w);
    for (unsigned i = 0; i < nb; i++) q[i] |= (uint8_t)(acc >> (8 * (nb - 1 - i)));
}

static inline uint64_t rt_get_be(const uint8_t *p, unsigned nbytes) {
    uint64_t v = 0;
    for (unsigned i = 0; i < nbytes; i++) v = (v << 8) | p[i];
    return v;
}

static inline void rt_put_be(uint8_t *p, unsigned nbytes, uint64_t v) {
    for (unsigned i = 0; i < nbytes; i++) p[i] = (uint8_t)(v >> (8 * (nbytes - 1 - i)));
}

/* arithmetic with Python's (infinite precision) results where they fit 64 bits */
static inline uint64_t rt_shl(uint64_t a, uint64_t s) { return s >= 64 ? 0 : a << s; }
static inline uint64_t rt_ushr(uint64_t a, uint64_t s) { return s >= 64 ? 0 : a >> s; }
static inline int64_t rt_sshr(int64_t a, uint64_t s) { return s >= 63 ? (a < 0 ? -1 : 0) : a >> s; }
static inline int64_t rt_sext(uint64_t x, unsigned w) {
    if (w >= 64) return (int64_t)x;
    uint64_t m = 1ULL << (w - 1);
    x &= rt_mask(w);
    return (int64_t)((x ^ m) - m);
}
static inline uint64_t rt_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t rt_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
static inline int64_t rt_sdiv(int64_t a, int64_t b) {  /* floor division, 0 when b == 0 */
    if (!b) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if ((a % b) && ((a < 0) != (b < 0))) q--;
    return q;
}
static inline int64_t rt_smod(int64_t a, int64_t b) {  /* sign of the divisor, 0 when b == 0 */
    if (!b || b == -1) return 0;
    int64_t r = a % b;
    if (r && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* the value BMv2 keeps in a signed field of width w < 64 (see exprs.signed_store) */
static inline int64_t rt_sstore_i(int64_t v, unsigned w) {
    int64_t lo = -(int64_t)(1ULL << (w - 1)), mask = (int64_t)rt_mask(w);
    return (v < lo || v > mask) ? rt_sext((uint64_t)v, w) : v;
}
static inline int64_t rt_sstore_u(uint64_t v, unsigned w) {
    return v > rt_mask(w) ? rt_sext(v, w) : (int64_t)v;
}

static inline uint64_t rt_key_hash(const uint64_t *k, int kw) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < kw; i++) {
        h ^= k[i];
        h *= 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    return h;
}

/* a stack index computed at run time: out of range drops the packet (after the statement) */
static inline uint32_t rt_idx(rt_switch *sw, uint64_t i, uint32_t size) {
    if (LIKELY(i < size)) return (uint32_t)i;
    sw->abort = 1;
    sw->drop_msg = "header stack index out of bounds";
    return 0;
}

/* Under AddressSanitizer, scratch memory carved out of larger blocks (the per-packet arena, the
 * output buffer) is poisoned outside the parts handed out, so overruns between them are caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define RT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define RT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RT_POISON(p, n) ((void)(p), (void)(n))
#define RT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define RT_TRACE(sw, ...) do { if (UNLIKELY((sw)->trace_on)) rt_trace((sw), __VA_ARGS__); } while (0)

#endif
