/* The worker's aggregation loop in C: worker/streaming.py's UdpReducer.aggregate, event for event.
 *
 * Why: a worker spends a third of its CPU in the Python interpreter, per packet (building headers,
 * checking results, timers), and on two shared cores that CPU is the switch's and the peers'.
 * This file runs the same loop without the interpreter: the same scheduling of rounds
 * (worker/streams.py), the same retransmission timers, fast retransmission and tail loss probes
 * (worker/streaming.py), the same window (worker/window.py) and RTO estimator (worker/rto.py).
 * The Python modules stay the reference; tests/worker/test_native_loop.py runs both on the same
 * scenarios.  Lanes come from the source through a callback per batch of rounds (or straight from
 * an int32 array), so every BlockSource works unchanged; fixed point of a float32 array
 * (worker/quantize.py, round to nearest) runs here: quantized into the packets, each result
 * dequantized into the float32 output, no callback.
 *
 * The header's field offsets and the protocol's constants are not written here: wloop_wire.h
 * is generated from protocol/wire.py and protocol/constants.py (worker/native_loop.py).
 * Built by `pip install` into the extension module p4reduce.worker._wloop (with
 * wloop_module.c, setup.py); run through ctypes without the GIL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "wloop_wire.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- header access (offsets from protocol/wire.py) ------------------------------------------ */
static inline uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static inline uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void put16(uint8_t *p, uint32_t v) { p[0] = v >> 8; p[1] = v; }
static inline void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }

/* ---- what Python hands over and takes back ------------------------------------------------------ */
typedef int (*encode_fn)(int n, const int64_t *blocks, const int8_t *exps, int32_t *out);

typedef struct {
    /* stats, cumulative (StreamStats): updated in place */
    int64_t packets_sent, retransmissions, fast_retransmissions, tail_probes, deferred, results,
        ignored, forged, send_errors, rtt_samples, wakeups, bytes_sent;
    /* RTO estimator (worker/rto.py): srtt < 0 = no sample yet */
    double est_min, est_max, est_backoff, est_granularity, srtt, rttvar, est_rto;
    int64_t est_samples;
    /* congestion window (worker/window.py): maximum < 0 = none */
    double cwnd, ssthresh, decreased_at, newest_answered;
    int64_t win_minimum, win_maximum, decreases, losses, stalls;
    /* retry policy */
    double timeout, backoff, max_timeout, deadline;
    int32_t adaptive;
    /* the job */
    int32_t fd, connected, job_id, rank, sparse, float_mode, slot_count, lanes, subblock;
    uint32_t wire_token;
    uint32_t dest_ip;    /* network order */
    uint16_t dest_port;  /* network order */
    int64_t n_blocks;
    /* the call's data */
    uint8_t *last_ver;               /* slot_count entries, persist across calls */
    int32_t *sums;                   /* n_blocks * lanes */
    int8_t *exps;                    /* n_blocks (float mode) */
    const int8_t *proposals;         /* n_blocks (float mode) */
    const int64_t *first_nz;         /* S entries (sparse) */
    const int64_t *after_nz;         /* n_blocks entries (sparse) */
    const int32_t *direct;           /* n_blocks * lanes: lanes read directly, or NULL */
    encode_fn encode;                /* otherwise: lanes through the source */
    /* the outcome: 0 done, 1 a slot made no progress (fail_*), 2 the switch named an impossible
       next block (bad_*), 3 the encode callback failed, 4 out of memory, 6 a quantized value out
       of range (fixed point below) */
    int32_t fail_slot, fail_ver, fail_retries;
    int64_t fail_block;
    double fail_waited;
    int64_t bad_next, bad_offset;
    /* fixed point in the loop (float mode; worker/quantize.py's quantize_blocks and
       dequantize_into): with `fsrc` the lanes are quantized here from the float32 input (round
       to nearest; 6 when a value exceeds the overflow-free range, fail_block), not through
       `encode`; with `fdst` the results are dequantized here into the float32 result (divided
       by n_workers when `average`), not written to `sums` */
    const float *fsrc;               /* `size` elements, or NULL */
    float *fdst;                     /* `size` elements, or NULL */
    int32_t *sent;                   /* n_blocks * lanes: what fsrc's lanes were (error feedback), or NULL */
    const uint8_t *nonzero;          /* n_blocks (sparse, fdst): blocks no result reaches are zeroed */
    int64_t size;
    int32_t headroom, n_workers, average;
} wl_args;

/* ---- one call's state ------------------------------------------------------------------------ */
typedef struct { int64_t seq; int32_t slot; } wl_send;

typedef struct {
    wl_args *a;
    int S, L, nsb, sb, full, H, stride, ring_stride;
    int64_t nb;
    /* per slot: the open round (streams.py) */
    int64_t *block, *key, *ready_key, *ready_block, *arrival;
    int32_t *agreed, *ready_exp, *length;
    uint32_t *offset;
    uint8_t *ver, *open, *ready;
    int n_open, n_ready, active;
    int64_t arrivals;
    /* per slot: timers (streaming.py RoundTimers) */
    double *sent_at, *first_sent, *progress, *rto;
    int32_t *retries;
    int64_t *first_seq, *last_seq;
    uint8_t *probed;
    int64_t seq;
    wl_send *sends; size_t sends_head, sends_len, sends_cap;
    int64_t passed[3]; int n_passed;
    double timely_at, result_at, sent_last;
    int probe_slot, tail_probes;
    int started;
    double deadline;     /* a lower bound of the first timer's expiry (streaming.py) */
    /* buffers */
    uint8_t *frames, *ring;
    int32_t *ring_len;
    int32_t *lanes_buf;
    int64_t *enc_blocks; int8_t *enc_exps;
    int32_t *pick;        /* slots picked to open */
    int32_t *answers;     /* slots answered in this batch */
    int32_t *tmp;         /* scratch: expired slots, arrival sort */
    struct mmsghdr *msgs; struct iovec *iovs;
} wl;

#define RING 64
#define OVERTAKE 3
#define PROBE_SRTTS 2.0
#define PROBE_MIN 0.005
#define PROBES 2

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- worker/rto.py ---------------------------------------------------------------------------- */
static double est_clamp(wl_args *a, double t) { return t < a->est_min ? a->est_min : (t > a->est_max ? a->est_max : t); }

static void est_sample(wl_args *a, double rtt) {
    if (rtt < 0) return;
    if (a->srtt < 0) { a->srtt = rtt; a->rttvar = rtt / 2; }
    else {
        a->rttvar = 0.75 * a->rttvar + 0.25 * fabs(a->srtt - rtt);
        a->srtt = 0.875 * a->srtt + 0.125 * rtt;
    }
    a->est_samples++;
    double var = 4 * a->rttvar > a->est_granularity ? 4 * a->rttvar : a->est_granularity;
    double t = a->srtt + var;
    if (2 * a->srtt > t) t = 2 * a->srtt;
    a->est_rto = est_clamp(a, t);
}

static double est_timed_out(wl_args *a, double fired) {
    double backed = est_clamp(a, fired * a->est_backoff);
    if (backed > a->est_rto) a->est_rto = backed;
    return backed;
}

/* ---- worker/window.py ------------------------------------------------------------------------- */
static int win_cap(wl_args *a, int slots) {
    return a->win_maximum >= 0 && a->win_maximum < slots ? (int)a->win_maximum : slots;
}

static int win_limit(wl_args *a, int slots) {
    int cap = win_cap(a, slots), c = (int)a->cwnd;
    int v = cap < c ? cap : c;
    return v > a->win_minimum ? v : (int)a->win_minimum;
}

static void win_answered(wl_args *a, double sent_at, int slots, int rounds) {
    if (sent_at > a->newest_answered) a->newest_answered = sent_at;
    double cap = win_cap(a, slots);
    if (a->cwnd >= cap) { a->cwnd = cap; return; }
    if (a->cwnd < a->ssthresh) {
        double v = a->cwnd + rounds, m = a->ssthresh > a->cwnd ? a->ssthresh : a->cwnd;
        if (m < v) v = m;
        a->cwnd = v < cap ? v : cap;
    } else {
        double v = a->cwnd + rounds / a->cwnd;
        a->cwnd = v < cap ? v : cap;
    }
}

static void win_timed_out(wl_args *a, double sent_at, double now, int timely, int answered) {
    if (timely || a->newest_answered > sent_at) { a->losses++; return; }
    if (!answered) { a->stalls++; return; }
    if (sent_at < a->decreased_at) return;
    double half = a->cwnd / 2;
    a->ssthresh = half > a->win_minimum ? half : (double)a->win_minimum;
    a->cwnd = a->ssthresh;
    a->decreased_at = now;
    a->decreases++;
}

/* ---- sending ---------------------------------------------------------------------------------- */
static void count_send(wl *w, int len) {
    w->a->packets_sent++;
    w->a->bytes_sent += len + FRAME_HEADER_BYTES;
}

/* send the frames of `n` slots, in order, one sendmmsg where possible (streaming.py _send each) */
static void send_slots(wl *w, const int32_t *slots, int n) {
    wl_args *a = w->a;
    struct sockaddr_in dest = {.sin_family = AF_INET, .sin_port = a->dest_port, .sin_addr.s_addr = a->dest_ip};
    for (int i = 0; i < n; i++) {
        int s = slots[i];
        w->iovs[i].iov_base = w->frames + (size_t)s * w->stride;
        w->iovs[i].iov_len = (size_t)w->length[s];
        memset(&w->msgs[i].msg_hdr, 0, sizeof w->msgs[i].msg_hdr);
        w->msgs[i].msg_hdr.msg_iov = &w->iovs[i];
        w->msgs[i].msg_hdr.msg_iovlen = 1;
        if (!a->connected) { w->msgs[i].msg_hdr.msg_name = &dest; w->msgs[i].msg_hdr.msg_namelen = sizeof dest; }
        count_send(w, w->length[s]);
    }
    int done = 0;
    while (done < n) {
        int r = sendmmsg(a->fd, w->msgs + done, (unsigned)(n - done), MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR) continue;
            a->send_errors++;      /* this one is lost (buffer full, ICMP error): a timer resends it */
            done++;
        } else {
            done += r;
        }
    }
}

static void send_one(wl *w, int s) { int32_t one = s; send_slots(w, &one, 1); }

static void mark_retx(wl *w, int s) { w->frames[(size_t)s * w->stride + OFF_FLAGS] |= FLAG_RETX; }

/* ---- timers (streaming.py RoundTimers) ---------------------------------------------------------- */
static int push_send(wl *w, int64_t seq, int s) {
    if (w->sends_len == w->sends_cap) {
        size_t cap = w->sends_cap * 2;
        wl_send *n = malloc(cap * sizeof *n);
        if (!n) return -1;
        for (size_t i = 0; i < w->sends_len; i++) n[i] = w->sends[(w->sends_head + i) % w->sends_cap];
        free(w->sends);
        w->sends = n; w->sends_head = 0; w->sends_cap = cap;
    }
    w->sends[(w->sends_head + w->sends_len) % w->sends_cap] = (wl_send){seq, s};
    w->sends_len++;
    return 0;
}

static int t_opened(wl *w, int s, double now) {
    wl_args *a = w->a;
    w->rto[s] = a->adaptive ? a->est_rto : a->timeout;
    w->retries[s] = 0;
    w->sent_at[s] = w->first_sent[s] = w->progress[s] = now;
    w->sent_last = now;
    w->probed[s] = 0;
    w->seq++;
    w->first_seq[s] = w->last_seq[s] = w->seq;
    return push_send(w, w->seq, s);
}

static int t_retransmitted(wl *w, int s, double now, int alive, int fast) {
    wl_args *a = w->a;
    w->sent_at[s] = now;
    w->sent_last = now;
    w->retries[s]++;
    w->seq++;
    w->last_seq[s] = w->seq;
    if (push_send(w, w->seq, s)) return -1;
    if (fast && a->adaptive) w->rto[s] = a->est_rto;
    else if (alive && a->adaptive) {
        double v = w->rto[s] * a->backoff;
        w->rto[s] = v < a->est_max ? v : a->est_max;
    } else if (a->adaptive) w->rto[s] = est_timed_out(a, w->rto[s]);
    else {
        double v = w->rto[s] * a->backoff;
        w->rto[s] = v < a->max_timeout ? v : a->max_timeout;
    }
    return 0;
}

static int t_answered(wl *w, int s, double now) {
    w->result_at = now;
    w->tail_probes = 0;
    if (w->retries[s] == 0) {
        w->timely_at = now;
        if (w->a->adaptive) { est_sample(w->a, now - w->sent_at[s]); return 1; }
    }
    return 0;
}

static double t_probe_due(wl *w) {
    wl_args *a = w->a;
    if (w->result_at < 0 || w->tail_probes >= PROBES || a->srtt < 0 || !a->adaptive) return INFINITY;
    double wait = PROBE_SRTTS * a->srtt;
    if (wait < PROBE_MIN) wait = PROBE_MIN;
    wait *= (double)(1 << w->tail_probes);
    return (w->result_at > w->sent_last ? w->result_at : w->sent_last) + wait;
}

/* RoundTimers.expiry: the slot's timer, or its stream's deadline without progress */
static double t_expiry(wl *w, int s) {
    double timer = w->sent_at[s] + w->rto[s], stuck = w->progress[s] + w->a->deadline + 1e-6;
    return timer < stuck ? timer : stuck;
}

static double t_next_expiry(wl *w) {
    double m = INFINITY;
    int any = 0;
    for (int s = 0; s < w->S; s++)
        if (w->open[s]) { double e = t_expiry(w, s); if (e < m) m = e; any = 1; }
    return any ? m : now_s();
}

static void t_deferred(wl *w, int s, double now) {
    wl_args *a = w->a;
    w->sent_at[s] = now;
    w->retries[s]++;
    if (a->adaptive) w->rto[s] = est_timed_out(a, w->rto[s]);
    else { double v = w->rto[s] * a->backoff; w->rto[s] = v < a->max_timeout ? v : a->max_timeout; }
}

static void t_restart_deferred(wl *w, double now) {
    double rto = w->a->adaptive ? w->a->est_rto : w->a->timeout;
    for (int s = 0; s < w->S; s++)
        if (w->open[s] && s != w->probe_slot && w->retries[s]) { w->sent_at[s] = now; w->rto[s] = rto; }
}

/* the open rounds overtaken now that the rounds of `answered` slots got results (RoundTimers.overtaken) */
static int t_overtaken(wl *w, const int32_t *answered, int n, int early, int32_t *out) {
    int64_t all[3 + RING];
    int m = 0;
    for (int i = 0; i < w->n_passed; i++) all[m++] = w->passed[i];
    for (int i = 0; i < n; i++) all[m++] = w->first_seq[answered[i]];
    for (int i = 1; i < m; i++) {      /* insertion sort: a batch is at most RING */
        int64_t v = all[i]; int j = i - 1;
        while (j >= 0 && all[j] > v) { all[j + 1] = all[j]; j--; }
        all[j + 1] = v;
    }
    int keep = m < OVERTAKE ? m : OVERTAKE;
    for (int i = 0; i < keep; i++) w->passed[i] = all[m - keep + i];
    w->n_passed = keep;
    if (!keep || (keep < OVERTAKE && !early)) return 0;
    int64_t below = early ? w->passed[keep - 1] : w->passed[0];
    int k = 0;
    while (w->sends_len && w->sends[w->sends_head].seq < below) {
        wl_send e = w->sends[w->sends_head];
        w->sends_head = (w->sends_head + 1) % w->sends_cap;
        w->sends_len--;
        if (w->open[e.slot] && w->last_seq[e.slot] == e.seq) out[k++] = e.slot;
    }
    return k;
}

/* ---- which rounds to open (streams.py StreamWindow.to_open) -------------------------------------- */
static int cmp_arrival_ctx(const void *x, const void *y, void *ctx) {
    const int64_t *arr = ctx;
    int64_t a = arr[*(const int32_t *)x], b = arr[*(const int32_t *)y];
    return (a > b) - (a < b);
}

static int to_open(wl *w, int window) {
    int n = 0;
    if (!w->n_ready) return 0;
    int room = window - w->n_open;
    if (room >= w->n_ready) {
        for (int s = 0; s < w->S; s++) if (w->ready[s]) { w->pick[n++] = s; w->ready[s] = 0; }
        w->n_ready = 0;
    } else {
        int64_t oldest = INT64_MAX;
        int have_open = 0;
        for (int s = 0; s < w->S; s++) if (w->open[s]) { have_open = 1; if (w->key[s] < oldest) oldest = w->key[s]; }
        for (;;) {   /* the ready round of the smallest key, while it is older than everything in flight */
            int best = -1;
            for (int s = 0; s < w->S; s++)
                if (w->ready[s] && (best < 0 || w->ready_key[s] < w->ready_key[best])) best = s;
            if (best < 0 || (have_open && w->ready_key[best] >= oldest)) break;
            w->pick[n++] = best; w->ready[best] = 0; w->n_ready--;
            oldest = w->ready_key[best]; have_open = 1;
        }
        room -= n;
        if (room > 0 && w->n_ready) {
            int m = 0;
            for (int s = 0; s < w->S; s++) if (w->ready[s]) w->tmp[m++] = s;
            qsort_r(w->tmp, (size_t)m, sizeof *w->tmp, cmp_arrival_ctx, w->arrival);
            for (int i = 0; i < m && i < room; i++) { w->pick[n++] = w->tmp[i]; w->ready[w->tmp[i]] = 0; w->n_ready--; }
        }
    }
    if (n > 1) qsort_r(w->pick, (size_t)n, sizeof *w->pick, cmp_arrival_ctx, w->arrival);
    return n;
}

/* ---- fixed point (worker/quantize.py) --------------------------------------------------------------- */
/* rint() in the default rounding mode (to nearest, ties to even), without a libm call: adding and
 * taking away 2**23 leaves no fraction bits; from 2**23 on every float32 is an integer already */
static inline float round_even(float v) {
    float big = copysignf(0x1p23f, v);
    return fabsf(v) < 0x1p23f ? (v + big) - big : v;
}

/* quantize_blocks for block b of fsrc (zero-padded past `size`) with the agreed exponent e, round to
 * nearest, into `out` (and `sent`); nonzero when a value exceeds 2**headroom (the exponent is not
 * the max over workers) */
static int quantize_block(wl *w, int64_t b, int e, int32_t *out) {
    wl_args *a = w->a;
    int L = w->L;
    int64_t start = b * L, lim = a->size - start < L ? a->size - start : L;
    float scale = ldexpf(1.0f, a->headroom - e), top = ldexpf(1.0f, a->headroom);
    const float *x = a->fsrc + start;
    int bad = 0;
    for (int64_t l = 0; l < lim; l++) {
        float q = round_even(x[l] * scale);
        bad |= !(fabsf(q) <= top);
        q = q > top ? top : (q < -top ? -top : q);    /* in range of int32 whatever happens (NaN is excluded before) */
        out[l] = (int32_t)q;
    }
    for (int64_t l = lim; l < L; l++) out[l] = 0;
    if (a->sent) memcpy(a->sent + start, out, (size_t)L * sizeof *out);
    return bad;
}

/* dequantize_into for the result of block b (lanes big-endian at q, sub-blocks of `bitmap`; absent
 * ones are zero) with the agreed exponent e, into fdst */
static void dequantize_result(wl *w, int64_t b, int e, uint32_t bitmap, const uint8_t *q) {
    wl_args *a = w->a;
    int L = w->L, sb = w->sb;
    int64_t start = b * L, lim = a->size - start < L ? a->size - start : L;
    float inv = ldexpf(1.0f, e - a->headroom), n = (float)a->n_workers;
    float *dst = a->fdst + start;
    int avg = a->average;
    for (int k = 0; k < w->nsb && (int64_t)k * sb < lim; k++) {
        int hi = (int64_t)(k + 1) * sb < lim ? (k + 1) * sb : (int)lim;
        if (!(bitmap >> k & 1)) { for (int l = k * sb; l < hi; l++) dst[l] = 0.0f; continue; }
        for (int l = k * sb; l < hi; l++) {
            float v = (float)(int32_t)get32(q + 4 * (l - k * sb)) * inv;
            dst[l] = avg ? v / n : v;
        }
        q += sb * 4;
    }
}

/* ---- building packets (streams.py StreamWindow.open_rounds) -------------------------------------- */
static int open_rounds(wl *w, int n) {
    wl_args *a = w->a;
    int L = w->L, sbb = w->sb * 4;
    int nblk = 0;
    for (int i = 0; i < n; i++) {
        int s = w->pick[i];
        if (w->ready_block[s] >= 0) { w->enc_blocks[nblk] = w->ready_block[s]; w->enc_exps[nblk] = (int8_t)w->ready_exp[s]; nblk++; }
    }
    if (nblk && a->fsrc) {
        for (int i = 0; i < nblk; i++)
            if (quantize_block(w, w->enc_blocks[i], w->enc_exps[i], w->lanes_buf + (int64_t)i * L)) {
                a->fail_block = w->enc_blocks[i];
                return -6;
            }
    } else if (nblk && !a->direct) {
        if (a->encode(nblk, w->enc_blocks, a->float_mode ? w->enc_exps : NULL, w->lanes_buf)) return -3;
    }
    int j = 0;
    for (int i = 0; i < n; i++) {
        int s = w->pick[i];
        int64_t b = w->ready_block[s];
        uint8_t *f = w->frames + (size_t)s * w->stride;
        uint8_t *body = f + w->H;
        uint32_t bitmap;
        int64_t nxt_b, key;
        uint32_t off;
        if (b < 0) {
            off = (uint32_t)(s * L); key = s - w->S;
            if (a->sparse) { nxt_b = a->first_nz[s]; bitmap = 0; }
            else { nxt_b = s; bitmap = (uint32_t)w->full; memset(body, 0, (size_t)L * 4); }
        } else {
            const int32_t *lanes = a->direct ? a->direct + b * L : w->lanes_buf + (int64_t)j * L;
            j++;
            off = (uint32_t)(b * L); key = b;
            if (a->sparse) {
                bitmap = 0;
                uint8_t *p = body;
                for (int k = 0; k < w->nsb; k++) {
                    const int32_t *sbp = lanes + k * w->sb;
                    int nz = 0;
                    for (int l = 0; l < w->sb; l++) nz |= sbp[l];
                    if (!nz) continue;
                    bitmap |= 1u << k;
                    for (int l = 0; l < w->sb; l++) put32(p + 4 * l, (uint32_t)sbp[l]);
                    p += sbb;
                }
                nxt_b = a->after_nz[b];
            } else {
                bitmap = (uint32_t)w->full;
                for (int l = 0; l < L; l++) put32(body + 4 * l, (uint32_t)lanes[l]);
                nxt_b = b + w->S < w->nb ? b + w->S : -1;
            }
        }
        uint32_t nxt = nxt_b >= 0 ? (uint32_t)(nxt_b * L) : NEXT_NONE;
        uint32_t proposal = a->float_mode && nxt_b >= 0 ? (uint32_t)(a->proposals[nxt_b] + EXP_BIAS) : 0;
        int v = a->last_ver[s] = (uint8_t)(1 - a->last_ver[s]);
        memset(f, 0, (size_t)w->H);
        f[OFF_MSG_TYPE] = MSG_CONTRIB;
        f[OFF_FLAGS] = nxt == NEXT_NONE ? FLAG_EOT : 0;
        put16(f + OFF_JOB_ID, (uint32_t)a->job_id);
        f[OFF_RANK] = (uint8_t)a->rank;
        put16(f + OFF_SLOT_VER, (uint32_t)v << SLOT_BITS | (uint32_t)s);
        put32(f + OFF_OFFSET, off);
        put32(f + OFF_NEXT_OFFSET, nxt);
        f[OFF_EXPONENT] = (uint8_t)proposal;
        put16(f + OFF_BITMAP, bitmap);
        put32(f + OFF_WIRE_TOKEN, a->wire_token);
        w->length[s] = w->H + __builtin_popcount(bitmap) * sbb;
        w->block[s] = b; w->agreed[s] = b >= 0 ? w->ready_exp[s] : 0;
        w->ver[s] = (uint8_t)v; w->offset[s] = off; w->key[s] = key;
        if (!w->open[s]) { w->open[s] = 1; w->n_open++; }
    }
    return 0;
}

static int open_ready(wl *w, double now) {
    int n = to_open(w, win_limit(w->a, w->S));
    if (!n) return 0;
    int r = open_rounds(w, n);
    if (r) return r;
    send_slots(w, w->pick, n);
    for (int i = 0; i < n; i++) if (t_opened(w, w->pick[i], now)) return -4;
    return 0;
}

/* ---- taking results (streams.py StreamWindow.take_results) --------------------------------------- */
static int take_results(wl *w, int count, int *n_answers) {
    wl_args *a = w->a;
    int L = w->L, sb = w->sb, na = 0;
    for (int i = 0; i < count; i++) {
        int n = w->ring_len[i];
        const uint8_t *p = w->ring + (size_t)i * w->ring_stride;
        if (n < w->H) continue;
        uint32_t sv = get16(p + OFF_SLOT_VER);
        int s = (int)(sv & ((1u << SLOT_BITS) - 1)), v = (int)(sv >> SLOT_BITS);
        uint32_t off = get32(p + OFF_OFFSET), nxt = get32(p + OFF_NEXT_OFFSET);
        if (p[OFF_MSG_TYPE] != MSG_RESULT || (int)get16(p + OFF_JOB_ID) != a->job_id || s >= w->S || !w->open[s]
            || v != w->ver[s] || off != w->offset[s]) continue;
        if (get32(p + OFF_WIRE_TOKEN) != a->wire_token) { a->forged++; continue; }
        uint32_t bitmap = get16(p + OFF_BITMAP);
        if ((bitmap & ~(uint32_t)w->full) || n != w->H + __builtin_popcount(bitmap) * sb * 4) continue;
        int64_t b = w->block[s];
        w->open[s] = 0; w->n_open--;
        if (b >= 0 && a->fdst) {
            dequantize_result(w, b, w->agreed[s], bitmap, p + w->H);
            a->exps[b] = (int8_t)w->agreed[s];
        } else if (b >= 0) {
            int32_t *dst = a->sums + b * L;
            const uint8_t *q = p + w->H;
            if (bitmap == (uint32_t)w->full) {
                for (int l = 0; l < L; l++) dst[l] = (int32_t)get32(q + 4 * l);
            } else {
                for (int k = 0; k < w->nsb; k++) {
                    if (!(bitmap >> k & 1)) continue;
                    for (int l = 0; l < sb; l++) dst[k * sb + l] = (int32_t)get32(q + 4 * l);
                    q += sb * 4;
                }
            }
            if (a->float_mode) a->exps[b] = (int8_t)w->agreed[s];
        }
        if (nxt == NEXT_NONE) {
            w->active--;
            w->answers[na++] = s;
            continue;
        }
        int64_t nbn = nxt / (uint32_t)L;
        int64_t floor_b = b > 0 ? b : 0;
        if (nxt % (uint32_t)L || nbn >= w->nb || nbn % w->S != s || nbn < floor_b || (b >= 0 && nbn == b)) {
            a->fail_slot = s; a->bad_next = nxt; a->bad_offset = off;
            *n_answers = na;
            return 2;
        }
        int e = 0;
        if (a->float_mode) { e = (int)p[OFF_EXPONENT] - EXP_BIAS; if (e < EXP_MIN) e = EXP_MIN; }
        w->ready[s] = 1; w->n_ready++;
        w->ready_key[s] = nbn; w->ready_block[s] = nbn; w->ready_exp[s] = e;
        w->arrivals++;
        w->arrival[s] = w->arrivals;
        w->answers[na++] = s;
    }
    *n_answers = na;
    return 0;
}

/* ---- receiving -------------------------------------------------------------------------------- */
static int receive(wl *w) {
    wl_args *a = w->a;
    if (a->connected) {
        for (int i = 0; i < RING; i++) {
            w->iovs[i].iov_base = w->ring + (size_t)i * w->ring_stride;
            w->iovs[i].iov_len = (size_t)w->ring_stride;
            memset(&w->msgs[i].msg_hdr, 0, sizeof w->msgs[i].msg_hdr);
            w->msgs[i].msg_hdr.msg_iov = &w->iovs[i];
            w->msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r;
        do r = recvmmsg(a->fd, w->msgs, RING, MSG_DONTWAIT, NULL); while (r < 0 && errno == EINTR);
        if (r < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) a->send_errors++;   /* e.g. ICMP port unreachable */
            return 0;
        }
        for (int i = 0; i < r; i++) w->ring_len[i] = (int32_t)w->msgs[i].msg_len;
        return r;
    }
    int count = 0;
    for (int i = 0; i < RING; i++) {
        struct sockaddr_in src;
        socklen_t sl = sizeof src;
        ssize_t n = recvfrom(a->fd, w->ring + (size_t)count * w->ring_stride, (size_t)w->ring_stride, MSG_DONTWAIT,
                             (struct sockaddr *)&src, &sl);
        if (n < 0) {
            if (errno == EINTR) { i--; continue; }
            if (errno != EAGAIN && errno != EWOULDBLOCK) a->send_errors++;
            break;
        }
        if (src.sin_family != AF_INET || src.sin_addr.s_addr != a->dest_ip || src.sin_port != a->dest_port) {
            a->forged++; a->ignored++;
            continue;
        }
        w->ring_len[count++] = (int32_t)n;
    }
    return count;
}

static void drain(wl *w) {
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = recv(w->a->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) { if (errno == EINTR) continue; return; }
        w->a->ignored++;
    }
}

/* ---- retransmission (streaming.py UdpReducer._retransmit_*) ---------------------------------------- */
static int retransmit_overtaken(wl *w, int na, double now) {
    int early = w->n_open <= OVERTAKE && !w->n_ready;
    for (int i = 0; i < na && !early; i++) if (w->probed[w->answers[i]]) early = 1;
    int k = t_overtaken(w, w->answers, na, early, w->tmp);
    for (int i = 0; i < k; i++) {
        int s = w->tmp[i];
        mark_retx(w, s);
        send_one(w, s);
        if (t_retransmitted(w, s, now, 1, 1)) return -4;
    }
    w->a->retransmissions += k;
    w->a->fast_retransmissions += k;
    return 0;
}

static int probe_tail(wl *w, double now) {
    int s = -1;
    for (int t = 0; t < w->S; t++) if (w->open[t] && (s < 0 || w->last_seq[t] > w->last_seq[s])) s = t;
    if (t_retransmitted(w, s, now, 1, 1)) return -4;
    w->probed[s] = 1;
    w->tail_probes++;
    mark_retx(w, s);
    send_one(w, s);
    w->a->retransmissions++;
    w->a->tail_probes++;
    return 0;
}

static int retransmit_expired(wl *w, double now) {
    wl_args *a = w->a;
    int m = 0;
    for (int s = 0; s < w->S; s++) if (w->open[s] && now >= t_expiry(w, s)) w->tmp[m++] = s;
    for (int i = 0; i < m; i++) {
        int s = w->tmp[i];
        if (now - w->progress[s] > a->deadline) {
            a->fail_slot = s; a->fail_block = w->block[s]; a->fail_ver = w->ver[s];
            a->fail_retries = w->retries[s]; a->fail_waited = now - w->progress[s];
            return 1;
        }
        int alive = w->timely_at > w->sent_at[s], answered = w->result_at > w->sent_at[s];
        win_timed_out(a, w->sent_at[s], now, alive, answered);
        if (w->result_at < 0) {
            if (w->probe_slot < 0) w->probe_slot = s;
            else if (s != w->probe_slot) { t_deferred(w, s, now); a->deferred++; continue; }
        }
        mark_retx(w, s);
        a->retransmissions++;
        send_one(w, s);
        if (t_retransmitted(w, s, now, alive, 0)) return -4;
    }
    return 0;
}

/* ---- the loop (streaming.py UdpReducer.aggregate), in time slices ---------------------------------- */
static int start(wl *w) {
    wl_args *a = w->a;
    drain(w);
    if (a->fdst && a->sparse)            /* no result comes for the blocks zero on every worker */
        for (int64_t b = 0; b < w->nb; b++)
            if (!a->nonzero[b]) {
                int64_t start = b * w->L, lim = a->size - start < w->L ? a->size - start : w->L;
                for (int64_t l = 0; l < lim; l++) a->fdst[start + l] = 0.0f;
            }
    for (int s = 0; s < w->S; s++) {     /* StreamWindow.start */
        w->ready[s] = 1;
        w->ready_key[s] = a->float_mode ? s - w->S : s;
        w->ready_block[s] = a->float_mode ? -1 : s;
        w->ready_exp[s] = 0;
        w->arrival[s] = s;
    }
    w->n_ready = w->S;
    w->arrivals = w->S;
    int r = open_ready(w, now_s());
    if (r) return r;
    w->deadline = t_next_expiry(w);
    return 0;
}

/* run until the call is done (0), fails (1..4) or `slice` seconds have passed (5: call again) */
static int step(wl *w, double slice) {
    wl_args *a = w->a;
    int r;
    double now = now_s(), until = now + slice;
    while (w->active) {
        now = now_s();
        if (now >= w->deadline) {
            if ((r = retransmit_expired(w, now))) return r;
            if (w->n_open && now >= t_probe_due(w) && (r = probe_tail(w, now))) return r;
            if ((r = open_ready(w, now))) return r;
            double pd = t_probe_due(w), ne = t_next_expiry(w);
            w->deadline = ne < pd ? ne : pd;
            continue;
        }
        if (now >= until) return 5;
        double wait = (w->deadline < until ? w->deadline : until) - now;
        struct pollfd pfd = {.fd = a->fd, .events = POLLIN};
        struct timespec ts = {.tv_sec = (time_t)wait, .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9)};
        ppoll(&pfd, 1, &ts, NULL);
        int count = receive(w);
        if (!count) continue;
        a->wakeups++;
        now = now_s();
        int na = 0;
        if ((r = take_results(w, count, &na))) return r;
        if (na) {
            double newest = 0.0;
            int sampled = 0;
            if (w->result_at < 0 && a->deferred) t_restart_deferred(w, now);
            for (int i = 0; i < na; i++) {
                int s = w->answers[i];
                if (!sampled && t_answered(w, s, now)) { a->rtt_samples++; sampled = 1; }
                if (w->first_sent[s] > newest) newest = w->first_sent[s];
            }
            win_answered(a, newest, w->S, na);
            if (w->n_open && (r = retransmit_overtaken(w, na, now))) return r;
        }
        a->results += na;
        a->ignored += count - na;
        if ((r = open_ready(w, now))) return r;
        if (na) { double pd = t_probe_due(w); if (pd < w->deadline) w->deadline = pd; }
    }
    return 0;
}

static void wl_free(wl *w) {
    free(w->block); free(w->key); free(w->ready_key); free(w->ready_block); free(w->arrival);
    free(w->agreed); free(w->ready_exp); free(w->length); free(w->offset); free(w->ver); free(w->open);
    free(w->ready); free(w->sent_at); free(w->first_sent); free(w->progress); free(w->rto);
    free(w->retries); free(w->first_seq); free(w->last_seq); free(w->probed);
    free(w->frames); free(w->ring); free(w->ring_len); free(w->lanes_buf); free(w->enc_blocks); free(w->enc_exps);
    free(w->pick); free(w->answers); free(w->tmp); free(w->msgs); free(w->iovs); free(w->sends);
    free(w);
}

#define ALLOC(field, n) do { w->field = calloc((size_t)(n), sizeof *w->field); if (!w->field) goto oom; } while (0)

/* One call: wl_open (NULL: out of memory), wl_step until it returns other than 5, wl_close.
 * Why slices: Python runs between them, so a signal (Ctrl-C) is handled within a slice. */
EXPORT void *wl_open(wl_args *a) {
    wl *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->a = a;
    w->L = a->lanes; w->sb = a->subblock; w->nsb = a->lanes / a->subblock; w->full = (1 << w->nsb) - 1;
    w->H = HEADER_BYTES; w->nb = a->n_blocks;
    w->S = a->slot_count < a->n_blocks ? a->slot_count : (int)a->n_blocks;
    w->stride = w->H + w->L * 4; w->ring_stride = w->stride + 4;
    w->active = w->S;
    w->timely_at = w->result_at = w->sent_last = -1.0;
    w->probe_slot = -1;
    int S = w->S;
    ALLOC(block, S); ALLOC(key, S); ALLOC(ready_key, S); ALLOC(ready_block, S); ALLOC(arrival, S);
    ALLOC(agreed, S); ALLOC(ready_exp, S); ALLOC(length, S); ALLOC(offset, S); ALLOC(ver, S); ALLOC(open, S);
    ALLOC(ready, S); ALLOC(sent_at, S); ALLOC(first_sent, S); ALLOC(progress, S); ALLOC(rto, S);
    ALLOC(retries, S); ALLOC(first_seq, S); ALLOC(last_seq, S); ALLOC(probed, S);
    ALLOC(frames, (size_t)S * w->stride); ALLOC(ring, (size_t)RING * w->ring_stride); ALLOC(ring_len, RING);
    ALLOC(lanes_buf, (size_t)S * w->L); ALLOC(enc_blocks, S); ALLOC(enc_exps, S);
    ALLOC(pick, S); ALLOC(answers, RING); ALLOC(tmp, S > RING ? S : RING);
    ALLOC(msgs, S > RING ? S : RING); ALLOC(iovs, S > RING ? S : RING);
    w->sends_cap = 1024;
    ALLOC(sends, w->sends_cap);
    return w;
oom:
    wl_free(w);
    return NULL;
}

EXPORT int wl_step(void *h, double slice) {
    wl *w = h;
    int r;
    if (!w->started) {
        w->started = 1;
        if ((r = start(w))) return r < 0 ? -r : r;
    }
    r = step(w, slice);
    return r < 0 ? -r : r;    /* -3 encode, -4 memory, -6 quantization */
}

/* worker/quantize.py's propose_exponents and nonzero blocks, in one pass over float32 x (`n`
 * elements, blocks of `lanes`, the last zero-padded): per block the exponent e with
 * max|x| <= 2**e (EXP_MIN for zero and tiny blocks) and whether max|x| > 0. Returns 0; 1: NaN or
 * inf in block *bad (the first); 2: a block's exponent beyond EXP_MAX (*bad: the first block of
 * the largest, *bad_amax its max|x|) */
EXPORT int wl_propose(const float *x, int64_t n, int32_t lanes, int8_t *props, uint8_t *nonzero, int64_t *bad,
                      float *bad_amax) {
    int64_t nb = (n + lanes - 1) / lanes, first_bad = -1, top_block = -1;
    int top_e = EXP_MIN - 1;
    float top_amax = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint32_t *u = (const uint32_t *)(x + b * lanes);
        int64_t lim = n - b * lanes < lanes ? n - b * lanes : lanes;
        uint32_t m = 0;          /* max |x| as bits: for non-negative floats the order of the bits, NaN above inf */
        for (int64_t l = 0; l < lim; l++) { uint32_t v = u[l] & 0x7fffffffu; m = v > m ? v : m; }
        if (m >= 0x7f800000u) { if (first_bad < 0) first_bad = b; props[b] = EXP_MIN; nonzero[b] = 1; continue; }
        nonzero[b] = m != 0;
        if (!m) { props[b] = EXP_MIN; continue; }
        float amax;
        memcpy(&amax, &m, sizeof amax);
        int e;
        frexpf(amax, &e);        /* amax = f * 2**e with 0.5 <= f < 1, so amax < 2**e */
        if (e > top_e) { top_e = e; top_block = b; top_amax = amax; }
        props[b] = (int8_t)(e < EXP_MIN ? EXP_MIN : (e > EXP_MAX ? EXP_MAX : e));
    }
    if (first_bad >= 0) { *bad = first_bad; return 1; }
    if (top_e > EXP_MAX) { *bad = top_block; *bad_amax = top_amax; return 2; }
    return 0;
}

EXPORT void wl_close(void *h) { if (h) wl_free(h); }
