/* The net listener on 127.0.0.1:proxy_port: each accepted connection becomes a guest stream. */
#define _GNU_SOURCE
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listener = -1;

int net_listener_fd(void) { return listener; }

int net_listen(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    listener = fd;
    log_msg("net: listening on 127.0.0.1:%d", port);
    return 0;
}

void net_close(void) {
    if (listener >= 0) close(listener);
    listener = -1;
}

static void accept_one(int fd) {
    struct sockaddr_in peer, self;
    socklen_t pl = sizeof peer, sl = sizeof self;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || getsockname(fd, (struct sockaddr *)&self, &sl) < 0) {
        close(fd);
        return;
    }
    char name[64];
    /* The client's socket: local = the peer's address, remote = ours. */
    int pid = proc_find_tcp_owner(peer.sin_addr.s_addr, ntohs(peer.sin_port), self.sin_addr.s_addr,
                                  ntohs(self.sin_port), name, sizeof name);
    uint32_t id = g.next_guest_id;
    g.next_guest_id += 2;
    struct stream *s = stream_new(id, SK_NET);
    if (!s) {
        close(fd);
        return;
    }
    s->src_fd[0] = s->sink_fd = fd;
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "{\"kind\":\"net\",\"process\":");
    if (pid > 0 && name[0]) jw_cstr(&b, name);
    else buf_puts(&b, "null");
    if (pid > 0) buf_printf(&b, ",\"pid\":%d}", pid);
    else buf_puts(&b, ",\"pid\":null}");
    send_json(id, FT_OPEN, &b);
    buf_free(&b);
}

void net_on_accept(void) {
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
        accept_one(fd);
    }
}
