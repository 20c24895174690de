/* The DNS answerer: UDP and TCP on dns_address:53 (resolv.conf names it). The agent answers
 * nothing itself: each query goes to the host as a `dns` stream, which resolves, records and
 * answers it. Both transports carry DNS-over-TCP framing on the stream (a 16-bit big-endian
 * length before each message), so the host reads one format. */
#define _GNU_SOURCE
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Queries waiting for the host: past this, a new datagram is dropped and the client retries. */
#define DNS_MAX_PENDING 128
/* A classic DNS message over UDP; EDNS clients accept more, but the host's answers are small. */
#define DNS_UDP_MAX 4096

static int udp_fd = -1, tcp_fd = -1;

bool dns_started(void) { return udp_fd >= 0; }

static int bind_socket(int type, const struct sockaddr *a, socklen_t len) {
    int fd = socket(a->sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a, len) < 0 || (type == SOCK_STREAM && listen(fd, 64) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int dns_start(const char *address) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(53);
        len = sizeof *a4;
    } else if (inet_pton(AF_INET6, address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(53);
        len = sizeof *a6;
    } else {
        errno = EINVAL;
        return -1;
    }
    int u = bind_socket(SOCK_DGRAM, (struct sockaddr *)&ss, len);
    if (u < 0) return -1;
    int t = bind_socket(SOCK_STREAM, (struct sockaddr *)&ss, len);
    if (t < 0) log_msg("dns: no TCP answerer on %s:53: %s", address, strerror(errno));
    udp_fd = u;
    tcp_fd = t;
    log_msg("dns: answering on %s:53 (udp%s)", address, t >= 0 ? ", tcp" : "");
    return 0;
}

static int pending_queries(void) {
    int n = 0;
    for (int i = 0; i < g.nstreams; i++) n += g.streams[i]->kind == SK_DNS_UDP && !g.streams[i]->dead;
    return n;
}

static void on_datagram(int fd) {
    for (int round = 0; round < 64; round++) {
        uint8_t msg[2 + DNS_UDP_MAX];
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, msg + 2, DNS_UDP_MAX, MSG_TRUNC, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) log_msg("dns: recvfrom: %s", strerror(errno));
            return;
        }
        /* Too short for a header, or cut by our buffer: not a query the host could answer. */
        if (n < 12 || n > DNS_UDP_MAX || g.phase != PH_RUNNING || g.outq.len >= OUTQ_SOFT_LIMIT) continue;
        if (pending_queries() >= DNS_MAX_PENDING) {
            log_msg("dns: %d queries wait for the host; dropped one", DNS_MAX_PENDING);
            continue;
        }
        char name[64];
        int pid = proc_find_owner(OWNER_UDP, (struct sockaddr *)&from, NULL, name, sizeof name);
        struct buf b;
        buf_init(&b);
        if (open_payload(&b, "dns", name, pid, NULL, "udp") < 0) {
            buf_free(&b);
            continue;
        }
        struct stream *s = stream_new(g.next_guest_id, SK_DNS_UDP);
        if (!s) {
            buf_free(&b);
            continue;
        }
        g.next_guest_id += 2;
        memcpy(&s->peer, &from, fl);
        s->peer_len = fl;
        send_json(s->id, FT_OPEN, &b);
        buf_free(&b);
        msg[0] = (uint8_t)(n >> 8);
        msg[1] = (uint8_t)n;
        send_frame(s->id, FT_DATA, 0, msg, (size_t)n + 2);
        s->send_window -= (uint32_t)n + 2;
        stream_send_close(s);
    }
}

static void on_tcp_client(int fd) {
    for (int i = 0; i < 16; i++) {
        int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) log_msg("dns: accept: %s", strerror(errno));
            return;
        }
        if (g.phase != PH_RUNNING) {
            close(c);
            continue;
        }
        net_stream_for(c, "dns", NULL);
    }
}

/* The host's answers to a datagram query, length-prefixed as on TCP: each whole one goes back
 * to the client; a partial one waits for the rest. */
void dns_on_host_data(struct stream *s) {
    while (s->sink_buf.len >= 2) {
        const uint8_t *p = (const uint8_t *)buf_head(&s->sink_buf);
        size_t len = (size_t)p[0] << 8 | p[1];
        if (s->sink_buf.len < len + 2) return;
        if (udp_fd >= 0 && sendto(udp_fd, p + 2, len, 0, (struct sockaddr *)&s->peer, s->peer_len) < 0)
            log_msg("dns: answering a client: %s", strerror(errno));
        buf_consume(&s->sink_buf, len + 2);
    }
}

int dns_listeners(struct listener *out, int max) {
    int n = 0;
    if (udp_fd >= 0 && n < max) out[n++] = (struct listener){ udp_fd, on_datagram };
    if (tcp_fd >= 0 && n < max) out[n++] = (struct listener){ tcp_fd, on_tcp_client };
    return n;
}
