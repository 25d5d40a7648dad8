/* Wide values for generated programs: P4_WL 64-bit limbs, least significant first, two's
 * complement, arithmetic modulo 2^(64*P4_WL).  The code generator picks P4_WL so that every
 * value it needs exactly fits; fields wider than 64 bits and 128-bit addresses live here. */
#ifndef P4SIM_WIDE_H
#define P4SIM_WIDE_H
#ifndef P4_WL
#error "define P4_WL (limbs per wide value) before including p4sim_wide.h"
#endif

typedef struct { uint64_t l[P4_WL]; } wide_t;

static inline wide_t w_from_u64(uint64_t x) {
    wide_t r;
    r.l[0] = x;
    for (int i = 1; i < P4_WL; i++) r.l[i] = 0;
    return r;
}
static inline wide_t w_from_i64(int64_t x) {
    wide_t r;
    r.l[0] = (uint64_t)x;
    for (int i = 1; i < P4_WL; i++) r.l[i] = x < 0 ? ~0ULL : 0;
    return r;
}
static inline uint64_t w_lo(wide_t a) { return a.l[0]; }
static inline int w_neg_p(wide_t a) { return (int64_t)a.l[P4_WL - 1] < 0; }
static inline wide_t w_add(wide_t a, wide_t b) {
    wide_t r;
    rt_u128 c = 0;
    for (int i = 0; i < P4_WL; i++) {
        c += (rt_u128)a.l[i] + b.l[i];
        r.l[i] = (uint64_t)c;
        c >>= 64;
    }
    return r;
}
static inline wide_t w_not(wide_t a) {
    for (int i = 0; i < P4_WL; i++) a.l[i] = ~a.l[i];
    return a;
}
static inline wide_t w_sub(wide_t a, wide_t b) {
    return w_add(w_add(a, w_not(b)), w_from_u64(1));
}
static inline wide_t w_mul(wide_t a, wide_t b) {
    wide_t r = w_from_u64(0);
    for (int i = 0; i < P4_WL; i++) {
        rt_u128 c = 0;
        for (int j = 0; i + j < P4_WL; j++) {
            c += (rt_u128)a.l[i] * b.l[j] + r.l[i + j];
            r.l[i + j] = (uint64_t)c;
            c >>= 64;
        }
    }
    return r;
}
static inline wide_t w_and(wide_t a, wide_t b) { for (int i = 0; i < P4_WL; i++) a.l[i] &= b.l[i]; return a; }
static inline wide_t w_or(wide_t a, wide_t b) { for (int i = 0; i < P4_WL; i++) a.l[i] |= b.l[i]; return a; }
static inline wide_t w_xor(wide_t a, wide_t b) { for (int i = 0; i < P4_WL; i++) a.l[i] ^= b.l[i]; return a; }
static inline wide_t w_shl(wide_t a, uint64_t s) {
    wide_t r = w_from_u64(0);
    if (s >= 64ULL * P4_WL) return r;
    int q = (int)(s / 64), b = (int)(s % 64);
    for (int i = P4_WL - 1; i >= q; i--) {
        uint64_t v = a.l[i - q] << b;
        if (b && i - q - 1 >= 0) v |= a.l[i - q - 1] >> (64 - b);
        r.l[i] = v;
    }
    return r;
}
static inline wide_t w_shr(wide_t a, uint64_t s) {  /* arithmetic */
    uint64_t fill = w_neg_p(a) ? ~0ULL : 0;
    wide_t r;
    if (s >= 64ULL * P4_WL) {
        for (int i = 0; i < P4_WL; i++) r.l[i] = fill;
        return r;
    }
    int q = (int)(s / 64), b = (int)(s % 64);
    for (int i = 0; i < P4_WL; i++) {
        uint64_t lo = i + q < P4_WL ? a.l[i + q] : fill;
        uint64_t hi = i + q + 1 < P4_WL ? a.l[i + q + 1] : fill;
        r.l[i] = b ? (lo >> b) | (hi << (64 - b)) : lo;
    }
    return r;
}
static inline int w_cmp(wide_t a, wide_t b) {  /* signed: -1, 0, 1 */
    int na = w_neg_p(a), nb = w_neg_p(b);
    if (na != nb) return na ? -1 : 1;
    for (int i = P4_WL - 1; i >= 0; i--)
        if (a.l[i] != b.l[i]) return a.l[i] < b.l[i] ? -1 : 1;
    return 0;
}
static inline int w_nonzero(wide_t a) {
    uint64_t x = 0;
    for (int i = 0; i < P4_WL; i++) x |= a.l[i];
    return x != 0;
}
/* keep the low `bits` bits (an unsigned pattern) */
static inline wide_t w_trunc(wide_t a, unsigned bits) {
    for (int i = 0; i < P4_WL; i++) {
        unsigned lo = 64u * i;
        if (lo >= bits) a.l[i] = 0;
        else if (bits - lo < 64) a.l[i] &= (1ULL << (bits - lo)) - 1;
    }
    return a;
}
/* sign-extend from bit `bits - 1` */
static inline wide_t w_sext(wide_t a, unsigned bits) {
    a = w_trunc(a, bits);
    unsigned top = bits - 1;
    if ((a.l[top / 64] >> (top % 64)) & 1) {
        for (int i = 0; i < P4_WL; i++) {
            unsigned lo = 64u * i;
            if (lo > top) a.l[i] = ~0ULL;
            else if (top - lo < 63) a.l[i] |= ~0ULL << (top - lo + 1);
        }
    }
    return a;
}
static inline wide_t w_clamp(wide_t a, wide_t lo, wide_t hi) {
    return w_cmp(a, lo) < 0 ? lo : (w_cmp(a, hi) > 0 ? hi : a);
}
/* fields: `n` stored limbs (unsigned fields zero-extend, signed ones sign-extend) */
static inline wide_t w_load(const uint64_t *src, int n, int is_signed) {
    wide_t r;
    uint64_t fill = (is_signed && (int64_t)src[n - 1] < 0) ? ~0ULL : 0;
    for (int i = 0; i < P4_WL; i++) r.l[i] = i < n ? src[i] : fill;
    return r;
}
static inline void w_store(uint64_t *dst, int n, wide_t v) {
    for (int i = 0; i < n; i++) dst[i] = i < P4_WL ? v.l[i] : (w_neg_p(v) ? ~0ULL : 0);
}
/* a signed field of width w keeps values in [-2^(w-1), 2^w - 1] as they are, wraps others */
static inline wide_t w_sstore(wide_t v, unsigned w) {
    wide_t lo = w_sub(w_from_u64(0), w_shl(w_from_u64(1), w - 1));
    wide_t mask = w_sub(w_shl(w_from_u64(1), w), w_from_u64(1));
    if (w_cmp(v, lo) < 0 || w_cmp(v, mask) > 0) return w_sext(v, w);
    return v;
}
/* a register cell of `limbs` words (0 when the index is out of range) */
static inline wide_t w_cell(const void *cells, uint64_t idx, uint32_t size, int limbs) {
    if (idx >= size) return w_from_u64(0);
    return w_load((const uint64_t *)cells + idx * (uint64_t)limbs, limbs, 0);
}
/* big-endian bytes <-> wide (for keys, select values and extraction of wide fields) */
static inline wide_t w_get_bits(const uint8_t *p, uint32_t bo, unsigned w) {
    wide_t r = w_from_u64(0);
    for (int j = 0; j < P4_WL && 64u * j < w; j++) {
        unsigned cw = w - 64u * j < 64 ? w - 64u * j : 64;
        r.l[j] = rt_get_bits(p, bo + w - 64u * j - cw, cw);
    }
    return r;
}
static inline void w_put_bits(uint8_t *p, uint32_t bo, unsigned w, wide_t v) {
    for (int j = 0; j < P4_WL && 64u * j < w; j++) {
        unsigned cw = w - 64u * j < 64 ? w - 64u * j : 64;
        rt_put_bits(p, bo + w - 64u * j - cw, cw, v.l[j]);
    }
}
#endif
