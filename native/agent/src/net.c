/* The net listeners: the proxy listener on 127.0.0.1:proxy_port, and the transparent listener on
 * 127.0.0.1 and [::1] at transparent_port, where init's nftables rules redirect every other TCP
 * connection of the guest. Each accepted connection becomes a guest stream. */
#define _GNU_SOURCE
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>, whose other contents
 * clash with libc's headers: the destination a connection had before NAT redirected it. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

static int proxy_listener = -1;
static int transparent4 = -1, transparent6 = -1;

int net_listener_fd(void) { return proxy_listener; }
bool net_transparent_listening(void) { return transparent4 >= 0; }

static int listen_on(int family, int port) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        *a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        len = sizeof *a;
    } else {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        *a = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                                    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        len = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int net_listen(int port) {
    int fd = listen_on(AF_INET, port);
    if (fd < 0) return -1;
    proxy_listener = fd;
    log_msg("net: listening on 127.0.0.1:%d", port);
    return 0;
}

void net_close(void) {
    if (proxy_listener >= 0) close(proxy_listener);
    proxy_listener = -1;
}

int net_listen_transparent(int port) {
    int fd4 = listen_on(AF_INET, port);
    if (fd4 < 0) return -1;
    /* A guest without IPv6 has no [::1]; its IPv4 connections are served all the same. */
    int fd6 = listen_on(AF_INET6, port);
    if (fd6 < 0) log_msg("net: no transparent listener on [::1]:%d: %s", port, strerror(errno));
    transparent4 = fd4;
    transparent6 = fd6;
    log_msg("net: transparent listener on 127.0.0.1:%d%s", port, fd6 >= 0 ? " and [::1]" : "");
    return 0;
}

/* A new guest stream for a connected socket: OPEN names the process at the other end (found by
 * the client's socket: its own address is our peer, its peer is `dst`, or our address when the
 * connection was not redirected) and, for a redirected connection, where it was going. */
struct stream *net_stream_for(int fd, const char *kind, const struct sockaddr *dst) {
    struct sockaddr_storage peer, self;
    socklen_t pl = sizeof peer, sl = sizeof self;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || getsockname(fd, (struct sockaddr *)&self, &sl) < 0) {
        close(fd);
        return NULL;
    }
    char name[64];
    int pid = proc_find_owner(OWNER_TCP, (struct sockaddr *)&peer, dst ? dst : (struct sockaddr *)&self, name, sizeof name);
    struct buf b;
    buf_init(&b);
    if (open_payload(&b, kind, name, pid, dst, strcmp(kind, "dns") == 0 ? "tcp" : NULL) < 0) {
        buf_free(&b);
        close(fd);
        return NULL;
    }
    uint32_t id = g.next_guest_id;
    struct stream *s = stream_new(id, SK_NET);
    if (!s) {
        buf_free(&b);
        close(fd);
        return NULL;
    }
    g.next_guest_id += 2;
    s->src_fd[0] = s->sink_fd = fd;
    send_json(id, FT_OPEN, &b);
    buf_free(&b);
    return s;
}

/* Where a redirected connection was going; false for one that came to the listener itself. */
static bool original_destination(int fd, int family, struct sockaddr_storage *dst) {
    memset(dst, 0, sizeof *dst);
    socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    int r = family == AF_INET ? getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, dst, &len)
                              : getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, dst, &len);
    if (r < 0) return false;
    /* Loopback is never redirected: such a connection dialled this port directly. */
    if (dst->ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)dst)->sin_addr.s_addr) >> 24) != 127;
    return dst->ss_family == AF_INET6 && !IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)dst)->sin6_addr);
}

static void accept_all(int listener, int transparent_family) {
    for (int i = 0; i < 64; i++) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_msg("net: accept: %s", strerror(errno));
            return;
        }
        if (g.phase != PH_RUNNING) {
            close(fd);
            continue;
        }
        if (!transparent_family) {
            net_stream_for(fd, "net", NULL);
            continue;
        }
        struct sockaddr_storage dst;
        if (!original_destination(fd, transparent_family, &dst)) {
            log_msg("net: refused a connection made to the transparent listener itself");
            close(fd);
            continue;
        }
        net_stream_for(fd, "net", (struct sockaddr *)&dst);
    }
}

static void on_proxy_listener(int fd) { accept_all(fd, 0); }
static void on_transparent4(int fd) { accept_all(fd, AF_INET); }
static void on_transparent6(int fd) { accept_all(fd, AF_INET6); }

int net_listeners(struct listener *out, int max) {
    int n = 0;
    if (proxy_listener >= 0 && n < max) out[n++] = (struct listener){ proxy_listener, on_proxy_listener };
    if (transparent4 >= 0 && n < max) out[n++] = (struct listener){ transparent4, on_transparent4 };
    if (transparent6 >= 0 && n < max) out[n++] = (struct listener){ transparent6, on_transparent6 };
    return n;
}
