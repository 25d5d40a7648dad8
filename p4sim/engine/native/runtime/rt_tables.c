/* p4sim native runtime: match-action tables.
 *
 * A key is the concatenation of the key fields as one big number split into 64-bit words (least
 * significant first), exactly as p4sim.engine.tables builds it, so every match kind reduces to
 * masked word compares: exact tables hash the whole key; lpm tables keep one hash per prefix
 * length, longest first; ternary/range/optional tables scan entries in priority order (larger
 * priority, then longer prefix, then the older handle).  Range keys are checked on the side
 * against the field values the generated code passes in `rv`.
 *
 * The control plane (Python) does the bookkeeping (handles, normalisation, duplicate checks)
 * and mirrors each change here under the switch lock. */
#include <stdlib.h>

#include "p4sim_rt.h"

static rt_entry *entry_new(const rt_table *t) {
    size_t words = (size_t)t->argw + 2 * (size_t)t->kw + 2 * (size_t)t->nranges;
    rt_entry *e = calloc(1, sizeof *e + words * 8);
    if (!e) return NULL;
    e->args = e->data;
    e->value = e->args + t->argw;
    e->mask = e->value + t->kw;
    e->rlo = e->mask + t->kw;
    e->rhi = e->rlo + t->nranges;
    e->action = -1;
    e->handle = -1;
    return e;
}

RT_EXPORT int rt_add_table(rt_switch *sw, int kind, int kw, int nranges, int argw, uint32_t max_size) {
    rt_table *tables = realloc(sw->tables, (size_t)(sw->ntables + 1) * sizeof *tables);
    if (!tables) return -1;
    sw->tables = tables;
    rt_table *t = &tables[sw->ntables];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->kw = kw;
    t->nranges = nranges;
    t->argw = argw;
    t->max_size = max_size;
    t->def = entry_new(t);
    if (!t->def) return -1;
    return (int)sw->ntables++;
}

static void free_chain(rt_entry **buckets, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        rt_entry *e = buckets[i];
        while (e) {
            rt_entry *next = e->chain;
            free(e);
            e = next;
        }
    }
}

void rt_table_free(rt_table *t) {
    if (t->buckets) free_chain(t->buckets, t->nbuckets);
    free(t->buckets);
    for (uint32_t i = 0; i < t->nlevels; i++) {
        free_chain(t->levels[i].buckets, t->levels[i].nbuckets);
        free(t->levels[i].buckets);
        free(t->levels[i].mask);
    }
    free(t->levels);
    for (uint32_t i = 0; i < t->nrows; i++) free(t->rows[i]);
    free(t->rows);
    free(t->def);
}

/* ---- hash buckets (exact tables and lpm levels) ------------------------------------------- */
static int same_key(const uint64_t *a, const uint64_t *b, int kw) {
    for (int i = 0; i < kw; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int bucket_insert(rt_entry ***buckets, uint32_t *nbuckets, uint32_t count, rt_entry *e, int kw) {
    if (count + 1 > *nbuckets) {  /* keep the load factor <= 1 */
        uint32_t n = *nbuckets ? *nbuckets * 2 : 16;
        rt_entry **nb = calloc(n, sizeof *nb);
        if (!nb) return -1;
        for (uint32_t i = 0; i < *nbuckets; i++) {
            rt_entry *x = (*buckets)[i];
            while (x) {
                rt_entry *next = x->chain;
                uint32_t h = (uint32_t)rt_key_hash(x->value, kw) & (n - 1);
                x->chain = nb[h];
                nb[h] = x;
                x = next;
            }
        }
        free(*buckets);
        *buckets = nb;
        *nbuckets = n;
    }
    uint32_t h = (uint32_t)rt_key_hash(e->value, kw) & (*nbuckets - 1);
    e->chain = (*buckets)[h];
    (*buckets)[h] = e;
    return 0;
}

static void bucket_remove(rt_entry **buckets, uint32_t nbuckets, rt_entry *e, int kw) {
    uint32_t h = (uint32_t)rt_key_hash(e->value, kw) & (nbuckets - 1);
    for (rt_entry **p = &buckets[h]; *p; p = &(*p)->chain) {
        if (*p == e) {
            *p = e->chain;
            return;
        }
    }
}

static rt_entry *bucket_find(rt_entry *const *buckets, uint32_t nbuckets, const uint64_t *key, int kw) {
    if (!nbuckets) return NULL;
    uint32_t h = (uint32_t)rt_key_hash(key, kw) & (nbuckets - 1);
    for (rt_entry *e = buckets[h]; e; e = e->chain)
        if (same_key(e->value, key, kw)) return e;
    return NULL;
}

/* ---- ternary rows ------------------------------------------------------------------------- */
static int ranks_before(const rt_entry *a, const rt_entry *b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->plen != b->plen) return a->plen > b->plen;
    return a->handle < b->handle;
}

static int row_insert(rt_table *t, rt_entry *e) {
    if (t->nrows == t->cap_rows) {
        uint32_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        rt_entry **rows = realloc(t->rows, (size_t)cap * sizeof *rows);
        if (!rows) return -1;
        t->rows = rows;
        t->cap_rows = cap;
    }
    uint32_t lo = 0, hi = t->nrows;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (ranks_before(t->rows[mid], e)) lo = mid + 1;
        else hi = mid;
    }
    memmove(&t->rows[lo + 1], &t->rows[lo], (size_t)(t->nrows - lo) * sizeof *t->rows);
    t->rows[lo] = e;
    t->nrows++;
    return 0;
}

static void row_remove(rt_table *t, rt_entry *e) {
    for (uint32_t i = 0; i < t->nrows; i++) {
        if (t->rows[i] == e) {
            memmove(&t->rows[i], &t->rows[i + 1], (size_t)(t->nrows - i - 1) * sizeof *t->rows);
            t->nrows--;
            return;
        }
    }
}

/* ---- lpm levels --------------------------------------------------------------------------- */
static rt_level *level_for(rt_table *t, const rt_entry *e, int create) {
    uint32_t i = 0;
    while (i < t->nlevels && t->levels[i].plen > e->plen) i++;
    if (i < t->nlevels && t->levels[i].plen == e->plen) return &t->levels[i];
    if (!create) return NULL;
    if (t->nlevels == t->cap_levels) {
        uint32_t cap = t->cap_levels ? t->cap_levels * 2 : 8;
        rt_level *lv = realloc(t->levels, (size_t)cap * sizeof *lv);
        if (!lv) return NULL;
        t->levels = lv;
        t->cap_levels = cap;
    }
    uint64_t *mask = malloc((size_t)t->kw * 8);
    if (!mask) return NULL;
    memcpy(mask, e->mask, (size_t)t->kw * 8);
    memmove(&t->levels[i + 1], &t->levels[i], (size_t)(t->nlevels - i) * sizeof *t->levels);
    t->levels[i] = (rt_level){.plen = e->plen, .mask = mask};
    t->nlevels++;
    return &t->levels[i];
}

/* ---- control plane ------------------------------------------------------------------------ */
static void set_action(rt_table *t, rt_entry *e, int action, const uint64_t *args) {
    e->action = action;
    if (t->argw) memcpy(e->args, args, (size_t)t->argw * 8);
}

/* -> the entry (an opaque token for the caller), or NULL when out of memory */
RT_EXPORT rt_entry *rt_tbl_add(rt_switch *sw, uint32_t tid, int32_t handle, const uint64_t *value,
                               const uint64_t *mask, const uint64_t *rlo, const uint64_t *rhi,
                               uint32_t priority, uint32_t plen, int action, const uint64_t *args) {
    rt_table *t = &sw->tables[tid];
    rt_entry *e = entry_new(t);
    if (!e) return NULL;
    e->handle = handle;
    e->priority = priority;
    e->plen = plen;
    memcpy(e->value, value, (size_t)t->kw * 8);
    memcpy(e->mask, mask, (size_t)t->kw * 8);
    if (t->nranges) {
        memcpy(e->rlo, rlo, (size_t)t->nranges * 8);
        memcpy(e->rhi, rhi, (size_t)t->nranges * 8);
    }
    set_action(t, e, action, args);
    int rc = -1;
    pthread_mutex_lock(&sw->lock);
    if (t->kind == RT_TBL_EXACT) {
        rc = bucket_insert(&t->buckets, &t->nbuckets, t->count, e, t->kw);
    } else if (t->kind == RT_TBL_LPM) {
        rt_level *lv = level_for(t, e, 1);
        if (lv) rc = bucket_insert(&lv->buckets, &lv->nbuckets, lv->count, e, t->kw);
        if (!rc) lv->count++;
    } else if (t->kind == RT_TBL_TERNARY) {
        rc = row_insert(t, e);
    } else {
        rc = 0;  /* a keyless table keeps entries it never matches (as the Python engine) */
    }
    if (!rc) t->count++;
    pthread_mutex_unlock(&sw->lock);
    if (rc) {
        free(e);
        return NULL;
    }
    return e;
}

RT_EXPORT void rt_tbl_modify(rt_switch *sw, uint32_t tid, rt_entry *e, int action, const uint64_t *args) {
    pthread_mutex_lock(&sw->lock);
    set_action(&sw->tables[tid], e, action, args);
    pthread_mutex_unlock(&sw->lock);
}

RT_EXPORT void rt_tbl_delete(rt_switch *sw, uint32_t tid, rt_entry *e) {
    rt_table *t = &sw->tables[tid];
    pthread_mutex_lock(&sw->lock);
    if (t->kind == RT_TBL_EXACT) {
        bucket_remove(t->buckets, t->nbuckets, e, t->kw);
    } else if (t->kind == RT_TBL_LPM) {
        rt_level *lv = level_for(t, e, 0);
        if (lv) {
            bucket_remove(lv->buckets, lv->nbuckets, e, t->kw);
            if (--lv->count == 0) {
                uint32_t i = (uint32_t)(lv - t->levels);
                free(lv->buckets);
                free(lv->mask);
                memmove(&t->levels[i], &t->levels[i + 1], (size_t)(t->nlevels - i - 1) * sizeof *t->levels);
                t->nlevels--;
            }
        }
    } else if (t->kind == RT_TBL_TERNARY) {
        row_remove(t, e);
    }
    t->count--;
    pthread_mutex_unlock(&sw->lock);
    free(e);
}

RT_EXPORT void rt_tbl_set_default(rt_switch *sw, uint32_t tid, int action, const uint64_t *args) {
    pthread_mutex_lock(&sw->lock);
    set_action(&sw->tables[tid], sw->tables[tid].def, action, args);
    pthread_mutex_unlock(&sw->lock);
}

RT_EXPORT void rt_tbl_counter(rt_switch *sw, rt_entry *e, int write, uint64_t *packets, uint64_t *bytes) {
    pthread_mutex_lock(&sw->lock);
    if (write) {
        e->packets = *packets;
        e->bytes = *bytes;
    } else {
        *packets = e->packets;
        *bytes = e->bytes;
    }
    pthread_mutex_unlock(&sw->lock);
}

/* ---- the packet path ---------------------------------------------------------------------- */
static int ranges_ok(const rt_entry *e, const uint64_t *rv, int n) {
    for (int i = 0; i < n; i++)
        if (rv[i] < e->rlo[i] || rv[i] > e->rhi[i]) return 0;
    return 1;
}

const rt_entry *rt_lookup(const rt_table *t, const uint64_t *key, const uint64_t *rv) {
    const int kw = t->kw;
    switch (t->kind) {
    case RT_TBL_EXACT: {
        const rt_entry *e = bucket_find(t->buckets, t->nbuckets, key, kw);
        return e ? e : t->def;
    }
    case RT_TBL_LPM: {
        uint64_t k[kw];
        for (uint32_t l = 0; l < t->nlevels; l++) {
            const rt_level *lv = &t->levels[l];
            for (int i = 0; i < kw; i++) k[i] = key[i] & lv->mask[i];
            const rt_entry *e = bucket_find(lv->buckets, lv->nbuckets, k, kw);
            if (e) return e;
        }
        return t->def;
    }
    case RT_TBL_TERNARY:
        for (uint32_t r = 0; r < t->nrows; r++) {
            const rt_entry *e = t->rows[r];
            int i = 0;
            while (i < kw && (key[i] & e->mask[i]) == e->value[i]) i++;
            if (i == kw && ranges_ok(e, rv, t->nranges)) return e;
        }
        return t->def;
    default:
        return t->def;
    }
}
