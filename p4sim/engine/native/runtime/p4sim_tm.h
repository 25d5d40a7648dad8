/* p4sim native runtime: the v1model traffic manager, included by every generated program.
 *
 * The packet path of simple_switch, one received frame at a time: parse -> verify checksums ->
 * ingress -> [I2E clone, resubmit, multicast or unicast, drop on drop_port] -> egress ->
 * [E2E clone, drop on drop_port] -> update checksums -> deparse -> [recirculate] -> emit.
 * Follow-up passes (replicas, clones, resubmits, recirculations) wait in a FIFO; at most
 * TM_MAX_PASSES passes run per received frame (the loop guard of p4sim.engine.switch), so a
 * program that recirculates forever ends that packet, counted in RT_ST_PASS_LIMIT.
 *
 * What each copy carries is what simple_switch gives it (as p4sim.engine.switch documents):
 * resubmitted and recirculated packets enter ingress on port 0 with zeroed metadata except
 * their field list; unicast leaves ingress with instance_type 0; an I2E clone is the packet as
 * received, parsed again, with zeroed metadata; an E2E clone keeps its original's egress headers
 * and is made even when the original is dropped in egress; resubmit beats mark_to_drop in
 * ingress; egress_spec starts as drop_port + 1 in egress.
 *
 * The generated program defines before including this file: pstate, pstate_fresh, copy_headers,
 * preserve, parse, verify_checksums, run_ingress, run_egress, update_checksums, deparse,
 * DEPARSE_MAX, sm_get/sm_set (standard metadata by SM_* id), HID(st, name) and the stage
 * results R_OK (continue), R_EXIT (a control ended by exit), R_DROP (assert, stack index),
 * R_ABORT (ends the whole run, like an exception in the Python engine), R_LOOP (parser bound).
 */
#ifndef P4SIM_TM_H
#define P4SIM_TM_H

#define TM_MAX_PASSES 64
enum { IT_NORMAL = 0, IT_I2E = 1, IT_E2E = 2, IT_RECIRC = 4, IT_REPL = 5, IT_RESUB = 6 };

typedef struct {
    int ingress;
    uint32_t port, len, itype;
    const uint8_t *data;      /* ingress: the frame; egress: the payload after the headers */
    const pstate *pres;       /* ingress: state whose field list is preserved (or NULL) */
    int64_t fl;
    pstate *st;               /* egress: the packet state */
} tm_job;

typedef struct {
    tm_job q[TM_MAX_PASSES];
    uint32_t head, tail, overflow;
} tm_queue;

static inline void tm_push(tm_queue *q, const tm_job *j) {
    if (q->tail < TM_MAX_PASSES) q->q[q->tail++] = *j;
    else q->overflow++;
}

static inline int tm_has_room(const tm_queue *q) { return q->tail < TM_MAX_PASSES; }

static inline void tm_event(rt_outbuf *ob, uint32_t kind, uint32_t port, uint64_t value) {
    if (!ob->events++) {
        ob->ev_kind = kind;
        ob->ev_port = port;
        ob->ev_value = value;
    }
}

static inline uint64_t tm_stamp(rt_switch *sw) { return rt_now_us(sw) & ((1ULL << 48) - 1); }

static void tm_internal(rt_switch *sw, const char *what) {
    sw->stats[RT_ST_INTERNAL]++;
    rt_set_error(sw, what);
    RT_TRACE(sw, "Internal error, packet dropped: %s", what);
}

static pstate *tm_state(rt_switch *sw) {
    pstate *st = rt_arena(sw, sizeof(pstate));
    if (UNLIKELY(!st)) sw->stats[RT_ST_ARENA]++;
    return st;
}

/* the copies clone session HID(clone_session) asks for: the headers of `hdrs` (I2E: the packet
 * as received, parsed again; E2E: the original at the end of egress), zeroed metadata except the
 * field list of `f` */
static int tm_clone(rt_switch *sw, tm_queue *q, const pstate *f, int egress, uint32_t port,
                    const uint8_t *data, uint32_t len) {
    int64_t sid = HID(f, clone_session);
    const rt_group *s = (sid >= 0 && sid < 65536) ? sw->clone[sid] : NULL;
    if (!s) {
        RT_TRACE(sw, "Clone session %lld does not exist: no clone", (long long)sid);
        return R_OK;
    }
    const pstate *hdrs = f;
    uint64_t plength = sm_get(f, SM_PACKET_LENGTH);
    if (!egress) {
        pstate *tmp = tm_state(sw);
        if (!tmp) return R_DROP;
        pstate_fresh(tmp);
        sm_set(tmp, SM_INGRESS_PORT, port & 0x1FF);
        uint32_t off = 0;
        int rc = parse(sw, tmp, data, len, &off);
        if (rc == R_LOOP) return R_OK;  /* parsed once already without looping: cannot happen */
        if (rc != R_OK) return rc;
        hdrs = tmp;
        plength = len;
        data += off;
        len -= off;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        if (!tm_has_room(q)) {
            q->overflow++;
            continue;
        }
        pstate *g = tm_state(sw);
        if (!g) return R_DROP;
        pstate_fresh(g);
        copy_headers(g, hdrs);
        preserve(g, f, HID(f, clone_field_list));
        sm_set(g, SM_INSTANCE_TYPE, egress ? IT_E2E : IT_I2E);
        sm_set(g, SM_PACKET_LENGTH, plength);
        sm_set(g, SM_EGRESS_PORT, s->r[i].port);
        sm_set(g, SM_EGRESS_RID, s->r[i].rid);
        if (s->truncate) HID(g, truncate) = s->truncate;
        RT_TRACE(sw, "Cloning packet at %s to port %u (session %lld)", egress ? "egress" : "ingress",
                 s->r[i].port, (long long)sid);
        tm_job j = {.ingress = 0, .st = g, .data = data, .len = len};
        tm_push(q, &j);
    }
    return R_OK;
}

static int tm_ingress(rt_switch *sw, tm_queue *q, const tm_job *j) {
    pstate *f = tm_state(sw);
    if (!f) return R_DROP;
    pstate_fresh(f);
    if (j->pres) preserve(f, j->pres, j->fl);
    sm_set(f, SM_INGRESS_PORT, j->port & 0x1FF);
    sm_set(f, SM_INSTANCE_TYPE, j->itype);
    sm_set(f, SM_PACKET_LENGTH, j->len);
    if (j->itype == IT_NORMAL) sm_set(f, SM_INGRESS_GLOBAL_TIMESTAMP, tm_stamp(sw));
    RT_TRACE(sw, "Processing packet received on port %u (%u bytes, instance_type %u)", j->port, j->len, j->itype);
    uint32_t off = 0;
    int rc = parse(sw, f, j->data, j->len, &off);
    if (rc != R_OK) return rc;
    const uint8_t *pl = j->data + off;
    uint32_t plen = j->len - off;
    rc = verify_checksums(sw, f, pl, plen);
    if (rc != R_OK) return rc;
    rc = run_ingress(sw, f);
    if (rc == R_DROP) {
        RT_TRACE(sw, "Dropping packet in ingress: %s", sw->drop_msg ? sw->drop_msg : "");
        return R_DROP;
    }
    if (rc == R_ABORT) return rc;
    HID(f, exit) = 0;
    if (HID(f, clone_pending)) {
        HID(f, clone_pending) = 0;
        rc = tm_clone(sw, q, f, 0, j->port, j->data, j->len);
        if (rc != R_OK) return rc;
    }
    if (HID(f, resubmit)) {
        RT_TRACE(sw, "Resubmitting packet");
        tm_job r = {.ingress = 1, .port = 0, .data = j->data, .len = j->len, .itype = IT_RESUB,
                    .pres = f, .fl = HID(f, resubmit_field_list)};
        tm_push(q, &r);
        return R_OK;
    }
    uint64_t mgid = sm_get(f, SM_MCAST_GRP);
    if (mgid) {
        const rt_group *g = mgid < 65536 ? sw->mc[mgid] : NULL;
        if (!g || !g->n) {
            RT_TRACE(sw, "Multicast group %llu does not exist or is empty: packet dropped", (unsigned long long)mgid);
            return R_DROP;
        }
        RT_TRACE(sw, "Multicast to group %llu: %u replicas", (unsigned long long)mgid, g->n);
        for (uint32_t i = 0; i < g->n; i++) {
            if (!tm_has_room(q)) {
                q->overflow++;
                continue;
            }
            pstate *c = tm_state(sw);
            if (!c) return R_DROP;
            *c = *f;
            sm_set(c, SM_EGRESS_PORT, g->r[i].port);
            sm_set(c, SM_EGRESS_RID, g->r[i].rid);
            sm_set(c, SM_INSTANCE_TYPE, IT_REPL);
            tm_job e = {.ingress = 0, .st = c, .data = pl, .len = plen};
            tm_push(q, &e);
        }
        return R_OK;
    }
    uint64_t espec = sm_get(f, SM_EGRESS_SPEC);
    if (espec == sw->drop_port) {
        RT_TRACE(sw, "Dropping packet at the end of ingress (egress_spec is the drop port %llu)",
                 (unsigned long long)espec);
        return R_DROP;
    }
    sm_set(f, SM_EGRESS_PORT, espec);
    sm_set(f, SM_INSTANCE_TYPE, IT_NORMAL);
    RT_TRACE(sw, "Egress port is %llu", (unsigned long long)espec);
    tm_job e = {.ingress = 0, .st = f, .data = pl, .len = plen};
    tm_push(q, &e);
    return R_OK;
}

static int tm_egress(rt_switch *sw, tm_queue *q, const tm_job *j, rt_outbuf *ob, uint32_t input) {
    pstate *f = j->st;
    HID(f, exit) = 0;
    HID(f, clone_pending) = 0;
    HID(f, resubmit) = 0;
    sm_set(f, SM_EGRESS_SPEC, sw->drop_port + 1);
    sm_set(f, SM_EGRESS_GLOBAL_TIMESTAMP, tm_stamp(sw));
    RT_TRACE(sw, "Egress: port %llu, instance_type %llu, egress_rid %llu",
             (unsigned long long)sm_get(f, SM_EGRESS_PORT), (unsigned long long)sm_get(f, SM_INSTANCE_TYPE),
             (unsigned long long)sm_get(f, SM_EGRESS_RID));
    int rc = run_egress(sw, f);
    if (rc == R_DROP) {
        RT_TRACE(sw, "Dropping packet in egress: %s", sw->drop_msg ? sw->drop_msg : "");
        return R_DROP;
    }
    if (rc == R_ABORT) return rc;
    if (HID(f, clone_pending)) {
        rc = tm_clone(sw, q, f, 1, 0, j->data, j->len);
        if (rc != R_OK) return rc;
    }
    if (sm_get(f, SM_EGRESS_SPEC) == sw->drop_port) {
        RT_TRACE(sw, "Dropping packet at the end of egress (egress_spec is the drop port)");
        return R_DROP;
    }
    rc = update_checksums(sw, f, j->data, j->len);
    if (rc != R_OK) return rc;
    size_t cap = (size_t)DEPARSE_MAX + j->len;
    if (HID(f, recirculate)) {
        uint8_t *buf = rt_arena(sw, cap);
        if (!buf) {
            sw->stats[RT_ST_ARENA]++;
            return R_DROP;
        }
        uint32_t n = deparse(f, buf);
        memcpy(buf + n, j->data, j->len);
        n += j->len;
        RT_TRACE(sw, "Recirculating packet (%u bytes)", n);
        tm_job r = {.ingress = 1, .port = 0, .data = buf, .len = n, .itype = IT_RECIRC,
                    .pres = f, .fl = HID(f, recirculate_field_list)};
        tm_push(q, &r);
        return R_OK;
    }
    uint8_t *out = rt_out_reserve(ob, cap);
    if (!out) {
        tm_internal(sw, "out of memory for output packets");
        return R_DROP;
    }
    uint32_t n = deparse(f, out);
    memcpy(out + n, j->data, j->len);
    n += j->len;
    int64_t trunc = HID(f, truncate);
    if (trunc && trunc < (int64_t)n) n = trunc > 0 ? (uint32_t)trunc : (uint32_t)((int64_t)n + trunc > 0 ? (int64_t)n + trunc : 0);
    uint64_t eport = sm_get(f, SM_EGRESS_PORT);
    RT_TRACE(sw, "Transmitting packet of size %u out of port %llu", n, (unsigned long long)eport);
    rt_out_commit(ob, (uint32_t)eport, n, input);
    sw->stats[RT_ST_EMITTED]++;
    return R_OK;
}

static void tm_run(rt_switch *sw, uint32_t port, const uint8_t *data, uint32_t len, rt_outbuf *ob, uint32_t input) {
    tm_queue q;
    q.head = q.tail = q.overflow = 0;
    rt_arena_reset(sw);
    sw->abort = 0;
    tm_job first = {.ingress = 1, .port = port, .data = data, .len = len, .itype = IT_NORMAL};
    tm_push(&q, &first);
    while (q.head < q.tail) {
        const tm_job *j = &q.q[q.head++];
        sw->abort = 0;
        int rc = j->ingress ? tm_ingress(sw, &q, j) : tm_egress(sw, &q, j, ob, input);
        if (rc == R_DROP) {
            sw->stats[RT_ST_DROPPED]++;
            if (sw->drop_kind == RT_EV_ACTION_LOOP) tm_event(ob, RT_EV_ACTION_LOOP, j->port, 0);
        } else if (rc == R_LOOP) {
            tm_event(ob, RT_EV_PARSER_LOOP, j->port, (uint64_t)j->len + PARSER_SLACK);
            sw->stats[RT_ST_PARSER_LOOP]++;
            sw->stats[RT_ST_DROPPED]++;
            RT_TRACE(sw, "packet from port %u dropped: parser visited %llu states without ending (a loop in "
                     "the parse graph)", j->port, (unsigned long long)j->len + PARSER_SLACK);
        } else if (rc == R_ABORT) {
            sw->stats[RT_ST_INTERNAL]++;
            RT_TRACE(sw, "Internal error, packet dropped: %s", sw->last_error);
            return;
        }
        sw->drop_kind = RT_EV_NONE;
    }
    if (q.overflow) {
        tm_event(ob, RT_EV_PASS_LIMIT, port, q.overflow);
        sw->stats[RT_ST_PASS_LIMIT]++;
        sw->stats[RT_ST_DROPPED] += q.overflow;
        RT_TRACE(sw, "packet from port %u dropped after %d resubmit/recirculate/clone passes (%u copies left)",
                 port, TM_MAX_PASSES, q.overflow);
    }
}

/* the program's batch entry point: every frame of the batch, outputs appended to `ob` */
RT_EXPORT uint32_t p4prog_batch(rt_switch *sw, const uint8_t *const *frames, const uint32_t *len,
                                const uint16_t *port, uint32_t n, rt_outbuf *ob) {
    for (uint32_t i = 0; i < n; i++) {
        sw->pkt_id++;
        sw->stats[RT_ST_RECEIVED]++;
        tm_run(sw, port[i], frames[i], len[i], ob, i);
    }
    return n;
}

RT_EXPORT size_t p4prog_state_size(void) { return sizeof(pstate); }
RT_EXPORT int p4prog_abi(void) { return RT_ABI; }

#endif
