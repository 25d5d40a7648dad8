/* p4sim native runtime: the port loop.  One C thread (no Python, no GIL) moves frames between
 * AF_PACKET sockets and the switch: recvmmsg() batches from every readable port go through the
 * program in one locked batch (rt_process), and the outputs leave in sendmmsg() batches per port.
 *
 * What Python must see goes through one queue of records it drains when an eventfd fires:
 * frames for the CPU port (PacketIn), pcap copies of every frame in and out, trace text, log
 * lines, and -- while the current engine is not native (a program on the Python engine) --
 * every received frame, which Python then processes and sends back out with rt_ports_send().
 * A full queue drops records (counted), never blocks the loop.
 *
 * Sockets are opened and configured by Python (p4sim/ports/af_packet.py: bound, promiscuous,
 * auxdata on).  Each gets a PACKET_MMAP receive ring (TPACKET_V2: one frame per slot, so no
 * batching delay): the kernel copies frames into it in the sender's context, which leaves the
 * switch's core only the program and the sends; frames larger than a ring slot arrive whole on
 * the socket queue (PACKET_COPY_THRESH).  Without a ring (setup refused) the loop reads with
 * recvmmsg().  The loop reinserts 802.1Q tags the kernel stripped, skips the host's own
 * outgoing frames, and stops polling a port whose interface disappeared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "p4sim_rt.h"

#define RX_SLOTS 64
#define VLAN_ROOM 4
#define SLOT_BYTES (65536 + 128)
#define MAX_PORT 512
#define RING_FRAME_MIN 2048      /* ring slot: header + a 1500-byte frame and then some */
#define RING_BLOCK (1u << 20)
#define RING_BLOCKS 8

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { Q_RX = 1, Q_CPU = 2, Q_PCAP_IN = 3, Q_PCAP_OUT = 4, Q_TRACE = 5, Q_LOG = 6 };
enum { PS_RX, PS_TX, PS_TX_DROPPED, PS_TO_CPU, PS_UNKNOWN_PORT, PS_QUEUE_DROPPED, PS_TRUNCATED,
       PS_BATCHES, PS_RINGS, PS_RX_COPIED, PS_N };

typedef struct {
    uint32_t kind, port, len, pad;
    uint64_t ts_ns;
} qrec;

typedef struct {
    int fd, ifindex, alive;
    uint16_t number;
    char name[IF_NAMESIZE];
    uint8_t *ring;             /* NULL: no receive ring, recvmmsg() */
    uint32_t ring_frames, head;
    uint32_t ring_frame;       /* bytes per ring slot: the port's MTU fits one */
    uint32_t held[RX_SLOTS];   /* ring slots the current batch points into */
    uint32_t nheld;
} rt_port;

typedef struct rt_ports {
    pthread_t thread;
    int running;
    volatile int stop;
    int wake_fd, event_fd;
    uint32_t n;
    rt_port *ports;
    int16_t by_number[MAX_PORT];
    int cpu_port, pcap;
    pthread_mutex_t sw_lock;       /* held while a batch runs: swapping engines waits for it */
    rt_switch *sw;                 /* NULL: received frames go to Python */
    pthread_mutex_t qlock;
    uint8_t *q;
    size_t qcap, qused;
    uint64_t stats[PS_N];
    uint8_t *rx;
    struct mmsghdr msgs[RX_SLOTS];
    struct iovec iov[RX_SLOTS];
    struct sockaddr_ll addr[RX_SLOTS];
    union { char buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))]; struct cmsghdr align; } ctl[RX_SLOTS];
    const uint8_t *frames[RX_SLOTS];
    uint32_t len[RX_SLOTS];
    uint16_t pnum[RX_SLOTS];
    rt_outbuf *ob;
    struct mmsghdr tx[RX_SLOTS];
    struct iovec txiov[RX_SLOTS];
} rt_ports;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- the queue to Python ------------------------------------------------------------------- */
static void q_put(rt_ports *p, uint32_t kind, uint32_t port, const void *data, uint32_t len) {
    size_t need = sizeof(qrec) + ((len + 7u) & ~7u);
    pthread_mutex_lock(&p->qlock);
    int was_empty = p->qused == 0;
    if (p->qused + need > p->qcap) {
        p->stats[PS_QUEUE_DROPPED]++;
        pthread_mutex_unlock(&p->qlock);
        return;
    }
    qrec h = {.kind = kind, .port = port, .len = len, .ts_ns = now_ns()};
    memcpy(p->q + p->qused, &h, sizeof h);
    if (len) memcpy(p->q + p->qused + sizeof h, data, len);
    p->qused += need;
    pthread_mutex_unlock(&p->qlock);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t w = write(p->event_fd, &one, sizeof one);
        (void)w;
    }
}

static void q_log(rt_ports *p, const char *fmt, const char *name, int number) {
    char line[256];
    int n = snprintf(line, sizeof line, fmt, number, name);
    q_put(p, Q_LOG, (uint32_t)number, line, n < 0 ? 0 : (uint32_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
}

/* whole records, up to cap bytes, into out; -> bytes copied */
RT_EXPORT size_t rt_ports_take(rt_ports *p, uint8_t *out, size_t cap) {
    pthread_mutex_lock(&p->qlock);
    size_t n = 0;
    while (n < p->qused) {
        const qrec *h = (const qrec *)(p->q + n);
        size_t rec = sizeof(qrec) + ((h->len + 7u) & ~7u);
        if (n + rec > cap) break;
        n += rec;
    }
    memcpy(out, p->q, n);
    memmove(p->q, p->q + n, p->qused - n);
    p->qused -= n;
    pthread_mutex_unlock(&p->qlock);
    return n;
}

RT_EXPORT int rt_ports_event_fd(rt_ports *p) { return p->event_fd; }

RT_EXPORT int rt_ports_nstats(void) { return PS_N; }

RT_EXPORT void rt_ports_stats(rt_ports *p, uint64_t *out) {
    pthread_mutex_lock(&p->qlock);
    memcpy(out, p->stats, sizeof p->stats);
    pthread_mutex_unlock(&p->qlock);
}

/* ---- setup ----------------------------------------------------------------------------------- */
/* bytes per ring slot for a port: ring and link headers, VLAN room and a frame of the port's MTU,
 * rounded up to a power of two (a divisor of RING_BLOCK); a larger frame still arrives, copied
 * to the socket (TP_STATUS_COPY), only slower */
static uint32_t ring_frame_size(const rt_port *port) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", port->name);
    uint32_t need = RING_FRAME_MIN;
    if (ioctl(port->fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
        need = (uint32_t)TPACKET_ALIGN(TPACKET2_HDRLEN) + VLAN_ROOM + 18 + (uint32_t)ifr.ifr_mtu;
    uint32_t frame = RING_FRAME_MIN;
    while (frame < need && frame < RING_BLOCK) frame <<= 1;
    return frame;
}

/* a TPACKET_V2 receive ring on the port's socket; -> 1 if it is there */
static int ring_setup(rt_port *port) {
    int v = TPACKET_V2, reserve = VLAN_ROOM, thresh = 1;
    uint32_t frame = ring_frame_size(port);
    struct tpacket_req req = {.tp_block_size = RING_BLOCK, .tp_block_nr = RING_BLOCKS,
                              .tp_frame_size = frame,
                              .tp_frame_nr = RING_BLOCK / frame * RING_BLOCKS};
    if (setsockopt(port->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) ||
        setsockopt(port->fd, SOL_PACKET, PACKET_RESERVE, &reserve, sizeof reserve) ||
        setsockopt(port->fd, SOL_PACKET, PACKET_COPY_THRESH, &thresh, sizeof thresh) ||
        setsockopt(port->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req))
        return 0;
    void *ring = mmap(NULL, (size_t)RING_BLOCK * RING_BLOCKS, PROT_READ | PROT_WRITE, MAP_SHARED, port->fd, 0);
    if (ring == MAP_FAILED) return 0;
    port->ring = ring;
    port->ring_frames = req.tp_frame_nr;
    port->ring_frame = frame;
    return 1;
}

static struct tpacket2_hdr *ring_frame(const rt_port *port, uint32_t i) {
    return (struct tpacket2_hdr *)(port->ring + (size_t)i * port->ring_frame);
}

/* give the ring slots of the last batch back to the kernel */
static void ring_release(rt_ports *p) {
    for (uint32_t i = 0; i < p->n; i++) {
        rt_port *port = &p->ports[i];
        if (!port->nheld) continue;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        for (uint32_t k = 0; k < port->nheld; k++) ring_frame(port, port->held[k])->tp_status = TP_STATUS_KERNEL;
        port->nheld = 0;
    }
}

RT_EXPORT rt_ports *rt_ports_new(uint32_t n, const int *fds, const uint16_t *numbers, const char *const *names,
                                 int cpu_port, int pcap, size_t queue_bytes) {
    rt_ports *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ports = calloc(n ? n : 1, sizeof *p->ports);
    p->rx = malloc((size_t)RX_SLOTS * SLOT_BYTES);
    p->q = malloc(queue_bytes);
    p->ob = rt_outbuf_new();
    p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->event_fd = eventfd(0, EFD_CLOEXEC);
    if (!p->ports || !p->rx || !p->q || !p->ob || p->wake_fd < 0 || p->event_fd < 0) {
        free(p->ports);
        free(p->rx);
        free(p->q);
        if (p->ob) rt_outbuf_free(p->ob);
        if (p->wake_fd >= 0) close(p->wake_fd);
        if (p->event_fd >= 0) close(p->event_fd);
        free(p);
        return NULL;
    }
    p->qcap = queue_bytes;
    p->n = n;
    p->cpu_port = cpu_port;
    p->pcap = pcap;
    pthread_mutex_init(&p->sw_lock, NULL);
    pthread_mutex_init(&p->qlock, NULL);
    for (int i = 0; i < MAX_PORT; i++) p->by_number[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        rt_port *port = &p->ports[i];
        port->fd = fds[i];
        port->number = numbers[i];
        port->alive = 1;
        snprintf(port->name, sizeof port->name, "%s", names[i]);
        port->ifindex = (int)if_nametoindex(port->name);
        if (numbers[i] < MAX_PORT) p->by_number[numbers[i]] = (int16_t)i;
        int one = 1;
        setsockopt(port->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);  /* kernel >= 4.20 */
        setsockopt(port->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
        if (!getenv("P4SIM_NO_RING") && ring_setup(port)) p->stats[PS_RINGS]++;
    }
    for (int i = 0; i < RX_SLOTS; i++) {
        p->iov[i].iov_base = p->rx + (size_t)i * SLOT_BYTES + VLAN_ROOM;
        p->iov[i].iov_len = SLOT_BYTES - VLAN_ROOM;
    }
    return p;
}

/* the engine packets go through (NULL: to Python); returns once no batch uses the old one */
RT_EXPORT void rt_ports_set_switch(rt_ports *p, rt_switch *sw) {
    pthread_mutex_lock(&p->sw_lock);
    p->sw = sw;
    pthread_mutex_unlock(&p->sw_lock);
}

/* ---- moving frames ---------------------------------------------------------------------------- */
static void send_one(rt_ports *p, const rt_port *port, const uint8_t *data, uint32_t len) {
    if (p->pcap) q_put(p, Q_PCAP_OUT, port->number, data, len);
    if (send(port->fd, data, len, MSG_DONTWAIT) < 0) p->stats[PS_TX_DROPPED]++;
    else p->stats[PS_TX]++;
}

/* a frame Python wants out of a port (PacketOut results, the Python engine's outputs) */
RT_EXPORT int rt_ports_send(rt_ports *p, uint32_t number, const uint8_t *data, uint32_t len) {
    if (number >= MAX_PORT || p->by_number[number] < 0) return -1;
    send_one(p, &p->ports[p->by_number[number]], data, len);
    return 0;
}

static void flush_port(rt_ports *p, const rt_port *port, uint32_t k) {
    uint32_t sent = 0;
    while (sent < k) {
        int r = sendmmsg(port->fd, p->tx + sent, k - sent, MSG_DONTWAIT);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            p->stats[PS_TX_DROPPED] += k - sent;  /* queue full or interface down: dropped, as a switch */
            return;
        }
        sent += (uint32_t)r;
        p->stats[PS_TX] += (uint64_t)r;
    }
}

static void dispatch(rt_ports *p, rt_outbuf *ob) {
    /* outputs grouped by port, in order within each port */
    for (uint32_t first = 0; first < ob->nrec; first++) {
        const rt_outrec *r = &ob->recs[first];
        if (r->port == UINT32_MAX) continue;
        const uint8_t *data = ob->data + r->off;
        if (p->cpu_port >= 0 && r->port == (uint32_t)p->cpu_port) {
            p->stats[PS_TO_CPU]++;
            q_put(p, Q_CPU, r->port, data, r->len);
            continue;
        }
        if (r->port >= MAX_PORT || p->by_number[r->port] < 0) {
            p->stats[PS_UNKNOWN_PORT]++;
            continue;
        }
        const rt_port *port = &p->ports[p->by_number[r->port]];
        uint32_t k = 0;
        for (uint32_t i = first; i < ob->nrec && k < RX_SLOTS; i++) {
            rt_outrec *o = &ob->recs[i];
            if (o->port != r->port) continue;
            p->txiov[k].iov_base = ob->data + o->off;
            p->txiov[k].iov_len = o->len;
            memset(&p->tx[k].msg_hdr, 0, sizeof p->tx[k].msg_hdr);
            p->tx[k].msg_hdr.msg_iov = &p->txiov[k];
            p->tx[k].msg_hdr.msg_iovlen = 1;
            if (p->pcap) q_put(p, Q_PCAP_OUT, o->port, ob->data + o->off, o->len);
            if (i != first) o->port = UINT32_MAX;  /* taken */
            k++;
        }
        flush_port(p, port, k);
    }
}

static void run_batch(rt_ports *p, uint32_t k) {
    pthread_mutex_lock(&p->sw_lock);
    rt_switch *sw = p->sw;
    if (!sw) {
        for (uint32_t i = 0; i < k; i++) q_put(p, Q_RX, p->pnum[i], p->frames[i], p->len[i]);
        pthread_mutex_unlock(&p->sw_lock);
        ring_release(p);
        return;
    }
    rt_outbuf_reset(p->ob);
    pthread_mutex_lock(&sw->lock);
    if (sw->batch) sw->batch(sw, p->frames, p->len, p->pnum, k, p->ob);
    if (UNLIKELY(sw->trace_on && sw->tused)) {
        q_put(p, Q_TRACE, 0, sw->tbuf, (uint32_t)sw->tused);
        sw->tused = 0;
    }
    pthread_mutex_unlock(&sw->lock);
    p->stats[PS_BATCHES]++;
    dispatch(p, p->ob);
    pthread_mutex_unlock(&p->sw_lock);
    ring_release(p);
}

/* frames of one port into slots [*slots, RX_SLOTS), batch entries from k on (frames skipped leave
 * their slot unused); -> entries added */
static uint32_t receive(rt_ports *p, rt_port *port, uint32_t *slots, uint32_t k) {
    uint32_t at = *slots, want = RX_SLOTS - at;
    for (uint32_t i = at; i < RX_SLOTS; i++) {
        struct msghdr *m = &p->msgs[i].msg_hdr;
        memset(m, 0, sizeof *m);
        m->msg_iov = &p->iov[i];
        m->msg_iovlen = 1;
        m->msg_name = &p->addr[i];
        m->msg_namelen = sizeof p->addr[i];
        m->msg_control = p->ctl[i].buf;
        m->msg_controllen = sizeof p->ctl[i].buf;
    }
    int r = recvmmsg(port->fd, p->msgs + at, want, MSG_DONTWAIT, NULL);
    if (r <= 0) return 0;
    *slots = at + (uint32_t)r;
    uint32_t kept = 0;
    for (uint32_t i = at; i < at + (uint32_t)r; i++) {
        struct msghdr *m = &p->msgs[i].msg_hdr;
        uint32_t len = p->msgs[i].msg_len;
        if (p->addr[i].sll_pkttype == PACKET_OUTGOING) continue;
        if (m->msg_flags & MSG_TRUNC) {
            p->stats[PS_TRUNCATED]++;
            continue;
        }
        uint8_t *slot = p->rx + (size_t)i * SLOT_BYTES;
        uint8_t *frame = slot + VLAN_ROOM;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
            if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
            struct tpacket_auxdata aux;
            memcpy(&aux, CMSG_DATA(c), sizeof aux);
            if ((aux.tp_status & TP_STATUS_VLAN_VALID) && len >= 12) {
                uint16_t tpid = (aux.tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux.tp_vlan_tpid : 0x8100;
                memmove(slot, frame, 12);
                rt_put_be(slot + 12, 2, tpid);
                rt_put_be(slot + 14, 2, aux.tp_vlan_tci);
                frame = slot;
                len += 4;
            }
        }
        uint32_t j = k + kept;
        p->frames[j] = frame;
        p->len[j] = len;
        p->pnum[j] = port->number;
        if (p->pcap) q_put(p, Q_PCAP_IN, port->number, frame, len);
        kept++;
    }
    p->stats[PS_RX] += kept;
    return kept;
}

/* frames waiting in the port's ring, batch entries from k on; a frame too big for its slot is
 * read whole from the socket into an rx slot */
static uint32_t receive_ring(rt_ports *p, rt_port *port, uint32_t *slots, uint32_t k) {
    uint32_t kept = 0;
    while (k + kept < RX_SLOTS && port->nheld < RX_SLOTS) {
        struct tpacket2_hdr *h = ring_frame(port, port->head);
        if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
        port->held[port->nheld++] = port->head;
        port->head = port->head + 1 == port->ring_frames ? 0 : port->head + 1;
        const struct sockaddr_ll *sll = (const void *)((uint8_t *)h + TPACKET_ALIGN(sizeof *h));
        if (sll->sll_pkttype == PACKET_OUTGOING) continue;
        uint8_t *frame = (uint8_t *)h + h->tp_mac;
        uint32_t len = h->tp_snaplen;
        if (h->tp_status & TP_STATUS_COPY) {  /* the whole frame is on the socket queue */
            if (*slots == RX_SLOTS) break;
            uint8_t *slot = p->rx + (size_t)(*slots)++ * SLOT_BYTES + VLAN_ROOM;
            ssize_t r = recv(port->fd, slot, SLOT_BYTES - VLAN_ROOM, MSG_DONTWAIT | MSG_TRUNC);
            if (r <= 0 || r > SLOT_BYTES - VLAN_ROOM) {
                p->stats[PS_TRUNCATED]++;
                continue;
            }
            frame = slot;
            len = (uint32_t)r;
            p->stats[PS_RX_COPIED]++;
        } else if (h->tp_snaplen < h->tp_len) {
            p->stats[PS_TRUNCATED]++;
            continue;
        }
        if ((h->tp_status & TP_STATUS_VLAN_VALID) && len >= 12) {  /* 4 bytes are free before frame */
            uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) ? h->tp_vlan_tpid : 0x8100;
            memmove(frame - 4, frame, 12);
            frame -= 4;
            rt_put_be(frame + 12, 2, tpid);
            rt_put_be(frame + 14, 2, h->tp_vlan_tci);
            len += 4;
        }
        uint32_t j = k + kept++;
        p->frames[j] = frame;
        p->len[j] = len;
        p->pnum[j] = port->number;
        if (p->pcap) q_put(p, Q_PCAP_IN, port->number, frame, len);
    }
    p->stats[PS_RX] += kept;
    return kept;
}

static void check_port(rt_ports *p, rt_port *port) {
    char sink[64];
    ssize_t r = recv(port->fd, sink, sizeof sink, MSG_DONTWAIT);  /* reading clears a socket error */
    (void)r;
    if ((int)if_nametoindex(port->name) != port->ifindex) {
        port->alive = 0;
        q_log(p, "port %d: interface '%s' is gone; no longer polled", port->name, port->number);
    }
}

static void *loop(void *arg) {
    rt_ports *p = arg;
    struct pollfd pfd[p->n + 1];
    rt_port *owner[p->n + 1];
    while (!p->stop) {
        nfds_t np = 0;
        for (uint32_t i = 0; i < p->n; i++) {
            if (!p->ports[i].alive) continue;
            pfd[np] = (struct pollfd){.fd = p->ports[i].fd, .events = POLLIN};
            owner[np++] = &p->ports[i];
        }
        pfd[np] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
        owner[np++] = NULL;
        int r = poll(pfd, np, 500);
        if (r <= 0) continue;
        uint32_t k = 0, slots = 0;
        int more = 1;
        for (int round = 0; more && round < 8; round++) {  /* drain a little before polling again */
            more = 0;
            for (nfds_t i = 0; i + 1 < np; i++) {
                if (!pfd[i].revents) continue;
                if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                    check_port(p, owner[i]);
                    if (!owner[i]->alive) {
                        pfd[i].revents = 0;
                        continue;
                    }
                }
                uint32_t before = slots, before_k = k, held = owner[i]->nheld;
                if (owner[i]->ring) k += receive_ring(p, owner[i], &slots, k);
                else k += receive(p, owner[i], &slots, k);
                if (slots != before || k != before_k || owner[i]->nheld != held) more = 1;
                else pfd[i].revents = 0;
                if (slots == RX_SLOTS || k == RX_SLOTS || owner[i]->nheld == RX_SLOTS) {
                    if (k) run_batch(p, k);
                    else ring_release(p);
                    k = slots = 0;
                }
            }
        }
        if (k) run_batch(p, k);
        else ring_release(p);
        if (pfd[np - 1].revents) {
            uint64_t v;
            ssize_t n = read(p->wake_fd, &v, sizeof v);
            (void)n;
        }
    }
    return NULL;
}

RT_EXPORT int rt_ports_start(rt_ports *p) {
    if (p->running) return 0;
    p->stop = 0;
    if (pthread_create(&p->thread, NULL, loop, p)) return -1;
    p->running = 1;
    return 0;
}

RT_EXPORT void rt_ports_stop(rt_ports *p) {
    if (!p->running) return;
    p->stop = 1;
    uint64_t one = 1;
    ssize_t w = write(p->wake_fd, &one, sizeof one);
    (void)w;
    pthread_join(p->thread, NULL);
    p->running = 0;
}

RT_EXPORT void rt_ports_free(rt_ports *p) {
    if (!p) return;
    rt_ports_stop(p);
    for (uint32_t i = 0; i < p->n; i++)
        if (p->ports[i].ring) munmap(p->ports[i].ring, (size_t)RING_BLOCK * RING_BLOCKS);
    rt_outbuf_free(p->ob);
    close(p->wake_fd);
    close(p->event_fd);
    free(p->ports);
    free(p->rx);
    free(p->q);
    pthread_mutex_destroy(&p->sw_lock);
    pthread_mutex_destroy(&p->qlock);
    free(p);
}

/* wakes a Python reader blocked on the event fd (at shutdown) */
RT_EXPORT void rt_ports_notify(rt_ports *p) {
    uint64_t one = 1;
    ssize_t w = write(p->event_fd, &one, sizeof one);
    (void)w;
}
