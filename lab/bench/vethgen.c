/* Traffic generator for the veth switch-rate benchmark (bench/veth_rate.py): C, so that the
 * figure measures the switch, not the generator.  Run on the host side of the veth pairs,
 * pinned to a core the switch does not use.
 *
 *   vethgen SPEC   (SPEC: a file bench/veth_rate.py writes; results as one JSON line on stdout)
 *
 * l2:  open loop.  Frames go out of one interface as fast as the socket takes them, in
 *      sendmmsg() batches; frames arriving on the other interface are counted by its kernel
 *      counter (rx_packets), so receiving costs nothing.  forwarded/s is what the switch forwarded.
 * agg: closed loop, SwitchML style.  Every worker keeps `window` slots busy: it sends its
 *      contribution for a slot, and when the slot's result comes back (multicast to all
 *      workers) it sends its next contribution on that slot with the version bit flipped.  A
 *      slot silent for retx_ms is sent again (the switch answers duplicates).  Every result's
 *      lanes are compared with the expected sum (wrong results are counted).  contributions/s
 *      counts the contributions the switch aggregated: completed rounds x workers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAX_IF 16
#define RXBUF 2048

typedef struct { uint32_t len; uint8_t *data; } frame_t;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static FILE *spec;
static uint32_t u32(void) {
    uint32_t v;
    if (fread(&v, 4, 1, spec) != 1) { fprintf(stderr, "vethgen: truncated spec\n"); exit(2); }
    return v;
}
static frame_t frame_in(void) {
    frame_t f = {.len = u32()};
    f.data = malloc(f.len ? f.len : 1);
    if (!f.data || fread(f.data, 1, f.len, spec) != f.len) { fprintf(stderr, "vethgen: truncated frame\n"); exit(2); }
    return f;
}

static int open_if(const char *name) {
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) { perror("vethgen: socket"); exit(1); }
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                            .sll_ifindex = (int)if_nametoindex(name)};
    if (!a.sll_ifindex || bind(fd, (struct sockaddr *)&a, sizeof a)) { fprintf(stderr, "vethgen: %s: %s\n", name, strerror(errno)); exit(1); }
    int one = 1, big = 8 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    setsockopt(fd, SOL_PACKET, 23 /* PACKET_IGNORE_OUTGOING */, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    return fd;
}

/* drain one socket; -> frames received (those passing `keep`, when given) */
static struct mmsghdr rmsg[BATCH];
static struct iovec riov[BATCH];
static uint8_t rbuf[BATCH][RXBUF];
static struct sockaddr_ll raddr[BATCH];

static int recv_batch(int fd) {
    for (int i = 0; i < BATCH; i++) {
        riov[i] = (struct iovec){rbuf[i], RXBUF};
        memset(&rmsg[i].msg_hdr, 0, sizeof rmsg[i].msg_hdr);
        rmsg[i].msg_hdr.msg_iov = &riov[i];
        rmsg[i].msg_hdr.msg_iovlen = 1;
        rmsg[i].msg_hdr.msg_name = &raddr[i];
        rmsg[i].msg_hdr.msg_namelen = sizeof raddr[i];
    }
    int r = recvmmsg(fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
    return r < 0 ? 0 : r;
}

/* frames the interface received, from its kernel counter (no socket on the receiving side) */
static uint64_t rx_counter(const char *name) {
    char path[128];
    snprintf(path, sizeof path, "/sys/class/net/%s/statistics/rx_packets", name);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1) v = 0;
        fclose(f);
    }
    return v;
}

static int run_l2(uint32_t duration_ms, uint32_t warmup_ms, int tx, const char *rx_name, frame_t *frames,
                  uint32_t n) {
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    uint64_t sent = 0, sent0 = 0, got0 = 0, t0 = now_ns();
    uint64_t t_measure = t0 + (uint64_t)warmup_ms * 1000000ULL, t_end = t_measure + (uint64_t)duration_ms * 1000000ULL;
    int measuring = 0;
    uint32_t next = 0;
    for (;;) {
        uint64_t t = now_ns();
        if (!measuring && t >= t_measure) { measuring = 1; sent0 = sent; got0 = rx_counter(rx_name); t_measure = t; }
        if (t >= t_end) break;
        for (int i = 0; i < BATCH; i++) {
            frame_t *f = &frames[next];
            next = next + 1 == n ? 0 : next + 1;
            iov[i] = (struct iovec){f->data, f->len};
            memset(&m[i].msg_hdr, 0, sizeof m[i].msg_hdr);
            m[i].msg_hdr.msg_iov = &iov[i];
            m[i].msg_hdr.msg_iovlen = 1;
        }
        int s = sendmmsg(tx, m, BATCH, MSG_DONTWAIT);
        if (s > 0) sent += (uint64_t)s;
    }
    uint64_t got = rx_counter(rx_name) - got0;
    double secs = (double)(now_ns() - t_measure) / 1e9;
    printf("{\"mode\": \"l2\", \"seconds\": %.3f, \"sent\": %llu, \"forwarded\": %llu, \"sent_per_s\": %.0f, "
           "\"forwarded_per_s\": %.0f}\n", secs, (unsigned long long)(sent - sent0), (unsigned long long)got,
           (double)(sent - sent0) / secs, (double)got / secs);
    return 0;
}

static int run_agg(uint32_t duration_ms, uint32_t warmup_ms, int *fds, uint32_t workers) {
    uint32_t window = u32(), p4r_off = u32(), result_type = u32(), slotver_off = u32(), slot_bits = u32();
    uint32_t retx_ms = u32();
    frame_t expect = frame_in();  /* the lanes every result must carry; compared at lanes_off */
    uint32_t lanes_off = u32();
    uint64_t wrong = 0;
    frame_t *fr = malloc(sizeof(frame_t) * workers * window * 2);
    for (uint32_t w = 0; w < workers; w++)
        for (uint32_t s = 0; s < window; s++)
            for (uint32_t v = 0; v < 2; v++) fr[(w * window + s) * 2 + v] = frame_in();
    uint8_t *ver = calloc((size_t)workers * window, 1);
    uint64_t *sent_at = calloc((size_t)workers * window, sizeof(uint64_t));
    uint64_t t = now_ns(), sent = 0, results = 0, retx = 0;
    for (uint32_t w = 0; w < workers; w++)
        for (uint32_t s = 0; s < window; s++) {
            frame_t *f = &fr[(w * window + s) * 2];
            if (send(fds[w], f->data, f->len, 0) > 0) sent++;
            sent_at[w * window + s] = t;
        }
    uint64_t t_measure = t + (uint64_t)warmup_ms * 1000000ULL, t_end = t_measure + (uint64_t)duration_ms * 1000000ULL;
    uint64_t retx_ns = (uint64_t)retx_ms * 1000000ULL, last_scan = t, sent0 = 0, results0 = 0;
    int measuring = 0;
    struct pollfd pfd[MAX_IF];
    for (uint32_t w = 0; w < workers; w++) pfd[w] = (struct pollfd){.fd = fds[w], .events = POLLIN};
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    uint32_t need = slotver_off + 2;
    for (;;) {
        t = now_ns();
        if (!measuring && t >= t_measure) { measuring = 1; sent0 = sent; results0 = results; t_measure = t; }
        if (t >= t_end) break;
        if (poll(pfd, workers, 20) <= 0) goto scan;
        for (uint32_t w = 0; w < workers; w++) {
            if (!pfd[w].revents) continue;
            int r;
            while ((r = recv_batch(fds[w])) > 0) {
                int k = 0;
                for (int i = 0; i < r; i++) {
                    const uint8_t *p = rbuf[i];
                    if (rmsg[i].msg_len < p4r_off + need || p[p4r_off] != result_type) continue;
                    uint32_t sv = ((uint32_t)p[p4r_off + slotver_off] << 8) | p[p4r_off + slotver_off + 1];
                    uint32_t slot = sv & ((1u << slot_bits) - 1), v = sv >> slot_bits;
                    if (slot >= window || v != ver[w * window + slot]) continue;  /* a late duplicate */
                    results++;
                    if (rmsg[i].msg_len < lanes_off + expect.len || memcmp(p + lanes_off, expect.data, expect.len)) wrong++;
                    ver[w * window + slot] ^= 1;
                    frame_t *f = &fr[(w * window + slot) * 2 + ver[w * window + slot]];
                    iov[k] = (struct iovec){f->data, f->len};
                    memset(&m[k].msg_hdr, 0, sizeof m[k].msg_hdr);
                    m[k].msg_hdr.msg_iov = &iov[k];
                    m[k].msg_hdr.msg_iovlen = 1;
                    sent_at[w * window + slot] = t;
                    k++;
                }
                int done = 0;
                while (done < k) {
                    int s = sendmmsg(fds[w], m + done, (unsigned)(k - done), 0);
                    if (s <= 0) break;
                    done += s;
                }
                sent += (uint64_t)done;
            }
        }
    scan:
        if (t - last_scan > retx_ns / 2) {
            last_scan = t;
            for (uint32_t w = 0; w < workers; w++)
                for (uint32_t s = 0; s < window; s++)
                    if (t - sent_at[w * window + s] > retx_ns) {
                        frame_t *f = &fr[(w * window + s) * 2 + ver[w * window + s]];
                        if (send(fds[w], f->data, f->len, MSG_DONTWAIT) > 0) { sent++; retx++; }
                        sent_at[w * window + s] = t;
                    }
        }
    }
    double secs = (double)(now_ns() - t_measure) / 1e9;
    /* each completed slot round is one result per worker: the switch aggregated `workers`
       contributions for it */
    double rounds = (double)(results - results0) / workers;
    printf("{\"mode\": \"agg\", \"seconds\": %.3f, \"workers\": %u, \"window\": %u, \"results\": %llu, "
           "\"sent\": %llu, \"retransmissions\": %llu, \"wrong_results\": %llu, \"rounds_per_s\": %.0f, "
           "\"contributions_per_s\": %.0f}\n",
           secs, workers, window, (unsigned long long)(results - results0), (unsigned long long)(sent - sent0),
           (unsigned long long)retx, (unsigned long long)wrong, rounds / secs, rounds * workers / secs);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: vethgen SPEC\n"); return 2; }
    spec = fopen(argv[1], "rb");
    if (!spec) { perror("vethgen: spec"); return 2; }
    char magic[4];
    if (fread(magic, 1, 4, spec) != 4 || memcmp(magic, "VGEN", 4)) { fprintf(stderr, "vethgen: not a spec\n"); return 2; }
    uint32_t mode = u32(), duration_ms = u32(), warmup_ms = u32(), nif = u32();
    if (!nif || nif > MAX_IF) { fprintf(stderr, "vethgen: 1..%d interfaces\n", MAX_IF); return 2; }
    int fds[MAX_IF];
    char names[MAX_IF][IF_NAMESIZE + 1];
    for (uint32_t i = 0; i < nif; i++) {
        memset(names[i], 0, sizeof names[i]);
        if (fread(names[i], 1, IF_NAMESIZE, spec) != IF_NAMESIZE) { fprintf(stderr, "vethgen: truncated spec\n"); return 2; }
    }
    if (mode == 1) {
        /* l2: send on the first interface; count what the second receives by its kernel counter,
           so no socket (and no copy) is spent on the receiving side */
        uint32_t n = u32();
        frame_t *frames = malloc(sizeof(frame_t) * (n ? n : 1));
        for (uint32_t i = 0; i < n; i++) frames[i] = frame_in();
        if (nif < 2 || !n) { fprintf(stderr, "vethgen: l2 needs 2 interfaces and frames\n"); return 2; }
        return run_l2(duration_ms, warmup_ms, open_if(names[0]), names[1], frames, n);
    }
    for (uint32_t i = 0; i < nif; i++) fds[i] = open_if(names[i]);
    return run_agg(duration_ms, warmup_ms, fds, nif);
}
