/* p4sim native runtime: the switch object and its control-plane API (registers, counters,
 * meters, value sets, packet replication engine, statistics, trace, buffers).
 *
 * Every exported call takes the switch lock, so a control-plane write is atomic with respect to
 * packets (which hold the lock per batch).  Bulk reads copy a caller-chosen range, so a reader
 * can walk a large array in chunks without holding packets back for long. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "p4sim_rt.h"

#define NGROUPS 65536

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

RT_EXPORT int rt_abi(void) { return RT_ABI; }

RT_EXPORT rt_switch *rt_switch_new(uint32_t drop_port, size_t arena_bytes) {
    rt_switch *sw = calloc(1, sizeof *sw);
    if (!sw) return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&sw->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    sw->drop_port = drop_port;
    sw->mc = calloc(NGROUPS, sizeof *sw->mc);
    sw->clone = calloc(NGROUPS, sizeof *sw->clone);
    sw->arena_cap = arena_bytes;
    sw->arena = malloc(arena_bytes);
    if (sw->arena) RT_POISON(sw->arena, arena_bytes);
    sw->t0_ns = mono_ns();
    sw->frozen_us = -1;
    sw->meter_clock = -1;
    sw->rng = (uint64_t)sw->t0_ns ^ (uint64_t)(uintptr_t)sw ^ 0x9E3779B97F4A7C15ULL;
    if (!sw->mc || !sw->clone || !sw->arena) {
        free(sw->mc);
        free(sw->clone);
        free(sw->arena);
        free(sw);
        return NULL;
    }
    return sw;
}

void rt_table_free(rt_table *t);

RT_EXPORT void rt_switch_free(rt_switch *sw) {
    if (!sw) return;
    for (uint32_t i = 0; i < sw->ntables; i++) rt_table_free(&sw->tables[i]);
    for (uint32_t i = 0; i < sw->nregs; i++) free(sw->regs[i].cells);
    for (uint32_t i = 0; i < sw->nctrs; i++) {
        free(sw->ctrs[i].packets);
        free(sw->ctrs[i].bytes);
    }
    for (uint32_t i = 0; i < sw->nmeters; i++) free(sw->meters[i].cells);
    for (uint32_t i = 0; i < sw->nvsets; i++) {
        free(sw->vsets[i].values);
        free(sw->vsets[i].masks);
    }
    for (uint32_t i = 0; i < NGROUPS; i++) {
        free(sw->mc[i]);
        free(sw->clone[i]);
    }
    free(sw->tables);
    free(sw->regs);
    free(sw->ctrs);
    free(sw->meters);
    free(sw->vsets);
    free(sw->mc);
    free(sw->clone);
    RT_UNPOISON(sw->arena, sw->arena_cap);
    free(sw->arena);
    free(sw->scratch);
    free(sw->tbuf);
    pthread_mutex_destroy(&sw->lock);
    free(sw);
}

RT_EXPORT void rt_lock(rt_switch *sw) { pthread_mutex_lock(&sw->lock); }
RT_EXPORT void rt_unlock(rt_switch *sw) { pthread_mutex_unlock(&sw->lock); }
RT_EXPORT void rt_set_batch(rt_switch *sw, rt_batch_fn fn) { sw->batch = fn; }

static void *grow(void *p, uint32_t n, size_t size) {
    return realloc(p, (size_t)(n + 1) * size);
}

RT_EXPORT int rt_add_register(rt_switch *sw, uint32_t size, uint32_t width) {
    rt_register *regs = grow(sw->regs, sw->nregs, sizeof *regs);
    if (!regs) return -1;
    sw->regs = regs;
    rt_register *r = &regs[sw->nregs];
    r->size = size;
    r->width = width;
    r->limbs = width > 64 ? (width + 63) / 64 : 0;
    r->cell_bytes = r->limbs ? 8 * r->limbs : width <= 8 ? 1 : width <= 16 ? 2 : width <= 32 ? 4 : 8;
    r->cells = calloc(size ? size : 1, r->cell_bytes);
    if (!r->cells) return -1;
    return (int)sw->nregs++;
}

RT_EXPORT int rt_add_counter(rt_switch *sw, uint32_t size) {
    rt_counter *c = grow(sw->ctrs, sw->nctrs, sizeof *c);
    if (!c) return -1;
    sw->ctrs = c;
    c[sw->nctrs].size = size;
    c[sw->nctrs].packets = calloc(size ? size : 1, 8);
    c[sw->nctrs].bytes = calloc(size ? size : 1, 8);
    if (!c[sw->nctrs].packets || !c[sw->nctrs].bytes) return -1;
    return (int)sw->nctrs++;
}

RT_EXPORT int rt_add_meter(rt_switch *sw, uint32_t size, int by_bytes) {
    rt_meter *m = grow(sw->meters, sw->nmeters, sizeof *m);
    if (!m) return -1;
    sw->meters = m;
    m[sw->nmeters].size = size;
    m[sw->nmeters].by_bytes = by_bytes;
    m[sw->nmeters].cells = calloc(size ? size : 1, sizeof(rt_meter_cell));
    if (!m[sw->nmeters].cells) return -1;
    return (int)sw->nmeters++;
}

RT_EXPORT int rt_add_vset(rt_switch *sw) {
    rt_vset *v = grow(sw->vsets, sw->nvsets, sizeof *v);
    if (!v) return -1;
    sw->vsets = v;
    memset(&v[sw->nvsets], 0, sizeof *v);
    return (int)sw->nvsets++;
}

/* ---- registers ---------------------------------------------------------------------------- */
static void cell_get(const rt_register *r, uint32_t i, uint64_t *out) {
    const uint8_t *p = (const uint8_t *)r->cells + (size_t)i * r->cell_bytes;
    switch (r->cell_bytes) {
    case 1: out[0] = *(const uint8_t *)p; break;
    case 2: out[0] = *(const uint16_t *)p; break;
    case 4: out[0] = *(const uint32_t *)p; break;
    case 8: out[0] = *(const uint64_t *)p; break;
    default: memcpy(out, p, r->cell_bytes);
    }
}

static void cell_set(rt_register *r, uint32_t i, const uint64_t *v) {
    uint8_t *p = (uint8_t *)r->cells + (size_t)i * r->cell_bytes;
    uint64_t x = v[0] & rt_mask(r->width);
    switch (r->cell_bytes) {
    case 1: *(uint8_t *)p = (uint8_t)x; break;
    case 2: *(uint16_t *)p = (uint16_t)x; break;
    case 4: *(uint32_t *)p = (uint32_t)x; break;
    case 8: *(uint64_t *)p = x; break;
    default: {
        uint64_t *q = (uint64_t *)p;
        memcpy(q, v, r->cell_bytes);
        unsigned top = r->width - 64 * (r->limbs - 1);
        q[r->limbs - 1] &= rt_mask(top);
    }
    }
}

/* cells [start, start+count) into out (max(1, limbs) words per cell); -> cells copied */
RT_EXPORT uint32_t rt_reg_read(rt_switch *sw, uint32_t reg, uint32_t start, uint32_t count, uint64_t *out) {
    pthread_mutex_lock(&sw->lock);
    rt_register *r = &sw->regs[reg];
    uint32_t words = r->limbs ? r->limbs : 1, n = 0;
    if (start < r->size) {
        n = r->size - start < count ? r->size - start : count;
        for (uint32_t i = 0; i < n; i++) cell_get(r, start + i, out + (size_t)i * words);
    }
    pthread_mutex_unlock(&sw->lock);
    return n;
}

RT_EXPORT void rt_reg_write(rt_switch *sw, uint32_t reg, uint32_t index, const uint64_t *value) {
    pthread_mutex_lock(&sw->lock);
    rt_register *r = &sw->regs[reg];
    if (index < r->size) cell_set(r, index, value);
    pthread_mutex_unlock(&sw->lock);
}

RT_EXPORT void rt_reg_fill(rt_switch *sw, uint32_t reg, const uint64_t *value) {
    pthread_mutex_lock(&sw->lock);
    rt_register *r = &sw->regs[reg];
    for (uint32_t i = 0; i < r->size; i++) cell_set(r, i, value);
    pthread_mutex_unlock(&sw->lock);
}

/* ---- counters ----------------------------------------------------------------------------- */
RT_EXPORT uint32_t rt_ctr_read(rt_switch *sw, uint32_t c, uint32_t start, uint32_t count,
                               uint64_t *packets, uint64_t *bytes) {
    pthread_mutex_lock(&sw->lock);
    rt_counter *k = &sw->ctrs[c];
    uint32_t n = 0;
    if (start < k->size) {
        n = k->size - start < count ? k->size - start : count;
        memcpy(packets, k->packets + start, (size_t)n * 8);
        memcpy(bytes, k->bytes + start, (size_t)n * 8);
    }
    pthread_mutex_unlock(&sw->lock);
    return n;
}

RT_EXPORT void rt_ctr_write(rt_switch *sw, uint32_t c, int64_t index, uint64_t packets, uint64_t bytes) {
    pthread_mutex_lock(&sw->lock);
    rt_counter *k = &sw->ctrs[c];
    for (uint32_t i = 0; i < k->size; i++) {
        if (index >= 0 && (uint32_t)index != i) continue;
        k->packets[i] = packets;
        k->bytes[i] = bytes;
    }
    pthread_mutex_unlock(&sw->lock);
}

/* ---- meters (RFC 2698 two-rate three-color, color blind; as p4sim.engine.meters) ---------- */
static double meter_now(const rt_switch *sw) {
    return sw->meter_clock >= 0 ? sw->meter_clock : (double)mono_ns() / 1e9;
}

RT_EXPORT void rt_set_meter_clock(rt_switch *sw, double seconds) {
    pthread_mutex_lock(&sw->lock);
    sw->meter_clock = seconds;
    pthread_mutex_unlock(&sw->lock);
}

RT_EXPORT void rt_meter_set(rt_switch *sw, uint32_t m, int64_t index, int configured, double cir,
                            double cburst, double pir, double pburst) {
    pthread_mutex_lock(&sw->lock);
    rt_meter *mt = &sw->meters[m];
    double now = meter_now(sw);
    for (uint32_t i = 0; i < mt->size; i++) {
        if (index >= 0 && (uint32_t)index != i) continue;
        rt_meter_cell *c = &mt->cells[i];
        c->configured = configured;
        c->cir = cir;
        c->cburst = cburst;
        c->pir = pir;
        c->pburst = pburst;
        c->tc = cburst;
        c->tp = pburst;
        c->last = now;
    }
    pthread_mutex_unlock(&sw->lock);
}

int rt_meter_exec(rt_switch *sw, uint32_t m, int64_t index, uint64_t packet_length) {
    rt_meter *mt = &sw->meters[m];
    if (index < 0 || (uint64_t)index >= mt->size) return 0;
    rt_meter_cell *c = &mt->cells[index];
    if (!c->configured) return 0;
    double now = meter_now(sw), elapsed = now - c->last;
    if (elapsed < 0) elapsed = 0;
    c->last = now;
    c->tc = c->tc + elapsed * c->cir < c->cburst ? c->tc + elapsed * c->cir : c->cburst;
    c->tp = c->tp + elapsed * c->pir < c->pburst ? c->tp + elapsed * c->pir : c->pburst;
    double units = mt->by_bytes ? (double)packet_length : 1.0;
    if (c->tp < units) return 2;
    if (c->tc < units) {
        c->tp -= units;
        return 1;
    }
    c->tc -= units;
    c->tp -= units;
    return 0;
}

/* ---- parser value sets -------------------------------------------------------------------- */
RT_EXPORT int rt_vset_set(rt_switch *sw, uint32_t v, uint32_t n, const uint64_t *values, const uint64_t *masks) {
    uint64_t *vals = malloc((size_t)(n ? n : 1) * 8), *msks = malloc((size_t)(n ? n : 1) * 8);
    if (!vals || !msks) {
        free(vals);
        free(msks);
        return -1;
    }
    memcpy(vals, values, (size_t)n * 8);
    memcpy(msks, masks, (size_t)n * 8);
    pthread_mutex_lock(&sw->lock);
    rt_vset *vs = &sw->vsets[v];
    free(vs->values);
    free(vs->masks);
    vs->values = vals;
    vs->masks = msks;
    vs->n = n;
    pthread_mutex_unlock(&sw->lock);
    return 0;
}

int rt_vset_match(const rt_switch *sw, uint32_t v, uint64_t key, uint64_t mask) {
    const rt_vset *vs = &sw->vsets[v];
    for (uint32_t i = 0; i < vs->n; i++)
        if ((key & mask & vs->masks[i]) == (vs->values[i] & mask & vs->masks[i])) return 1;
    return 0;
}

/* ---- packet replication engine ------------------------------------------------------------ */
static int group_set(rt_switch *sw, rt_group **slots, uint32_t id, uint32_t n, const uint16_t *ports,
                     const uint16_t *rids, uint32_t truncate) {
    if (id >= NGROUPS) return -1;
    rt_group *g = NULL;
    if (n || truncate != UINT32_MAX) {
        g = malloc(sizeof *g + (size_t)n * sizeof g->r[0]);
        if (!g) return -1;
        g->n = n;
        g->truncate = truncate == UINT32_MAX ? 0 : truncate;
        for (uint32_t i = 0; i < n; i++) {
            g->r[i].port = ports[i];
            g->r[i].rid = rids[i];
        }
    }
    pthread_mutex_lock(&sw->lock);
    rt_group *old = slots[id];
    slots[id] = g;
    pthread_mutex_unlock(&sw->lock);
    free(old);
    return 0;
}

/* a group or session with no replicas still exists (a session may clone nowhere) */
RT_EXPORT int rt_mc_set(rt_switch *sw, uint32_t group, uint32_t n, const uint16_t *ports, const uint16_t *rids) {
    return group_set(sw, sw->mc, group, n, ports, rids, 0);
}
RT_EXPORT int rt_mc_delete(rt_switch *sw, uint32_t group) {
    return group_set(sw, sw->mc, group, 0, NULL, NULL, UINT32_MAX);
}
RT_EXPORT int rt_clone_set(rt_switch *sw, uint32_t session, uint32_t n, const uint16_t *ports,
                           const uint16_t *rids, uint32_t truncate) {
    return group_set(sw, sw->clone, session, n, ports, rids, truncate);
}
RT_EXPORT int rt_clone_delete(rt_switch *sw, uint32_t session) {
    return group_set(sw, sw->clone, session, 0, NULL, NULL, UINT32_MAX);
}

/* ---- statistics, errors, time, randomness ------------------------------------------------- */
RT_EXPORT int rt_nstats(void) { return RT_NSTATS; }

RT_EXPORT void rt_stats(rt_switch *sw, uint64_t *out) {
    pthread_mutex_lock(&sw->lock);
    memcpy(out, sw->stats, sizeof sw->stats);
    pthread_mutex_unlock(&sw->lock);
}

RT_EXPORT size_t rt_last_error(rt_switch *sw, char *out, size_t cap) {
    pthread_mutex_lock(&sw->lock);
    size_t n = strlen(sw->last_error);
    if (cap) {
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(out, sw->last_error, k);
        out[k] = 0;
    }
    pthread_mutex_unlock(&sw->lock);
    return n;
}

void rt_set_error(rt_switch *sw, const char *msg) {
    snprintf(sw->last_error, sizeof sw->last_error, "%s", msg);
}

/* frozen_us >= 0 freezes the packet clock (tests); rng_fixed makes random() return its lower bound */
RT_EXPORT void rt_set_determinism(rt_switch *sw, int64_t frozen_us, int rng_fixed) {
    pthread_mutex_lock(&sw->lock);
    sw->frozen_us = frozen_us;
    sw->rng_fixed = rng_fixed;
    pthread_mutex_unlock(&sw->lock);
}

uint64_t rt_now_us(rt_switch *sw) {
    if (sw->frozen_us >= 0) return (uint64_t)sw->frozen_us;
    return (uint64_t)((mono_ns() - sw->t0_ns) / 1000);
}

uint64_t rt_rand_u64(rt_switch *sw, uint64_t span) {
    if (sw->rng_fixed) return 0;
    uint64_t x = sw->rng;  /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    sw->rng = x;
    uint64_t r = x * 0x2545F4914F6CDD1DULL;
    if (span == UINT64_MAX) return r;
    return (uint64_t)(((rt_u128)r * (span + 1)) >> 64);
}

/* ---- trace -------------------------------------------------------------------------------- */
RT_EXPORT void rt_trace_enable(rt_switch *sw, int on) {
    pthread_mutex_lock(&sw->lock);
    sw->trace_on = on;
    sw->tused = 0;
    pthread_mutex_unlock(&sw->lock);
}

/* the trace text produced so far (lines end with \n); the caller copies it, then clears */
RT_EXPORT size_t rt_trace_take(rt_switch *sw, char *out, size_t cap) {
    pthread_mutex_lock(&sw->lock);
    size_t n = sw->tused < cap ? sw->tused : cap;
    if (n) memcpy(out, sw->tbuf, n);
    if (n < sw->tused) memmove(sw->tbuf, sw->tbuf + n, sw->tused - n);
    sw->tused -= n;
    pthread_mutex_unlock(&sw->lock);
    return n;
}

RT_EXPORT size_t rt_trace_pending(rt_switch *sw) { return sw->tused; }

static int tbuf_reserve(rt_switch *sw, size_t n) {
    if (sw->tused + n <= sw->tcap) return 1;
    if (sw->tused + n > ((size_t)64 << 20)) return 0;  /* nobody reads it: stop growing */
    size_t cap = sw->tcap ? sw->tcap : 4096;
    while (cap < sw->tused + n) cap *= 2;
    char *b = realloc(sw->tbuf, cap);
    if (!b) return 0;
    sw->tbuf = b;
    sw->tcap = cap;
    return 1;
}

void rt_trace(rt_switch *sw, const char *fmt, ...) {
    char line[1024];
    int k = snprintf(line, sizeof line, "[%llu] ", (unsigned long long)sw->pkt_id);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    size_t n = (size_t)k + (m < 0 ? 0 : (size_t)m);
    if (n > sizeof line - 1) n = sizeof line - 1;
    if (!tbuf_reserve(sw, n + 1)) return;
    memcpy(sw->tbuf + sw->tused, line, n);
    sw->tbuf[sw->tused + n] = '\n';
    sw->tused += n + 1;
}

/* log_msg: each "{}" of fmt takes the next argument, printed in decimal */
void rt_trace_log(rt_switch *sw, const char *fmt, int nargs, const int64_t *vals, const int *neg) {
    char out[1024];
    size_t o = 0;
    int a = 0;
    for (const char *p = fmt; *p && o < sizeof out - 32; p++) {
        if (p[0] == '{' && p[1] == '}' && a < nargs) {
            if (neg[a]) o += (size_t)snprintf(out + o, sizeof out - o, "%lld", (long long)vals[a]);
            else o += (size_t)snprintf(out + o, sizeof out - o, "%llu", (unsigned long long)vals[a]);
            a++;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
    rt_trace(sw, "%s", out);
}

/* ---- buffers ------------------------------------------------------------------------------ */
RT_EXPORT rt_outbuf *rt_outbuf_new(void) { return calloc(1, sizeof(rt_outbuf)); }

RT_EXPORT void rt_outbuf_free(rt_outbuf *ob) {
    if (!ob) return;
    RT_UNPOISON(ob->data, ob->cap);
    free(ob->data);
    free(ob->recs);
    free(ob);
}

RT_EXPORT void rt_outbuf_reset(rt_outbuf *ob) {
    ob->used = 0;
    ob->nrec = 0;
    ob->events = 0;
    ob->ev_kind = RT_EV_NONE;
}

uint8_t *rt_out_reserve(rt_outbuf *ob, size_t n) {
    if (ob->used + n > ob->cap) {
        size_t cap = ob->cap ? ob->cap : 65536;
        while (cap < ob->used + n) cap *= 2;
        RT_UNPOISON(ob->data, ob->cap);
        uint8_t *d = realloc(ob->data, cap);
        if (!d) return NULL;
        ob->data = d;
        ob->cap = cap;
    }
    RT_UNPOISON(ob->data + ob->used, n);
    RT_POISON(ob->data + ob->used + n, ob->cap - ob->used - n);
    if (ob->nrec == ob->caprec) {
        uint32_t caprec = ob->caprec ? ob->caprec * 2 : 256;
        rt_outrec *r = realloc(ob->recs, (size_t)caprec * sizeof *r);
        if (!r) return NULL;
        ob->recs = r;
        ob->caprec = caprec;
    }
    return ob->data + ob->used;
}

void rt_out_commit(rt_outbuf *ob, uint32_t port, uint32_t len, uint32_t input) {
    rt_outrec *r = &ob->recs[ob->nrec++];
    r->off = (uint32_t)ob->used;
    r->len = len;
    r->port = port;
    r->input = input;
    ob->used += len;
}

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_REDZONE 32
#else
#define ARENA_REDZONE 0
#endif

void *rt_arena(rt_switch *sw, size_t n) {
    size_t step = ((n + 15) & ~(size_t)15) + ARENA_REDZONE;
    if (sw->arena_used + step > sw->arena_cap) return NULL;
    void *p = sw->arena + sw->arena_used;
    sw->arena_used += step;
    RT_UNPOISON(p, n);
    return p;
}

void rt_arena_reset(rt_switch *sw) {
    sw->arena_used = 0;
    RT_POISON(sw->arena, sw->arena_cap);
}

uint8_t *rt_scratch(rt_switch *sw, size_t n) {
    if (n > sw->scratch_cap) {
        size_t cap = sw->scratch_cap ? sw->scratch_cap : 4096;
        while (cap < n) cap *= 2;
        uint8_t *s = realloc(sw->scratch, cap);
        if (!s) return NULL;
        sw->scratch = s;
        sw->scratch_cap = cap;
    }
    return sw->scratch;
}

/* ---- the packet path entry point ---------------------------------------------------------- */
RT_EXPORT uint32_t rt_process(rt_switch *sw, const uint8_t *const *frames, const uint32_t *len,
                              const uint16_t *port, uint32_t n, rt_outbuf *ob) {
    pthread_mutex_lock(&sw->lock);
    uint32_t done = sw->batch ? sw->batch(sw, frames, len, port, n, ob) : 0;
    pthread_mutex_unlock(&sw->lock);
    return done;
}
