/* The stream table: frames out to the port, DATA in and out of fds, and flow control. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void send_frame(uint32_t stream, uint8_t type, uint8_t flags, const void *p, size_t n) {
    if (g.port_fd < 0) return;
    if (frame_encode(&g.outq, stream, type, flags, p, n) < 0)
        log_msg("dropped a %s frame on stream %u: out of memory or too long", frame_type_name(type), stream);
}

void send_json(uint32_t stream, uint8_t type, struct buf *json) {
    send_frame(stream, type, 0, buf_head(json), json->len);
}

void send_log(const char *level, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_msg("%s: %s", level, msg);
    if (g.phase != PH_RUNNING) return;
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "{\"type\":\"log\",\"level\":");
    jw_cstr(&b, level);
    buf_puts(&b, ",\"message\":");
    jw_cstr(&b, msg);
    buf_puts(&b, "}");
    send_json(0, FT_CONTROL, &b);
    buf_free(&b);
}

void protocol_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_msg("protocol error: %s", msg);
    send_frame(0, FT_ERROR, 0, msg, strlen(msg));
    g.port_read_stopped = true;
    begin_stop(4);
}

struct stream *stream_new(uint32_t id, enum stream_kind kind) {
    if (g.nstreams == g.cap_streams) {
        int cap = g.cap_streams ? g.cap_streams * 2 : 16;
        struct stream **n = realloc(g.streams, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        g.streams = n;
        g.cap_streams = cap;
    }
    struct stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    s->kind = kind;
    s->src_fd[0] = s->src_fd[1] = s->sink_fd = -1;
    buf_init(&s->sink_buf);
    s->send_window = STREAM_WINDOW;
    s->recv_window = RECEIVE_WINDOW;
    g.streams[g.nstreams++] = s;
    return s;
}

struct stream *stream_find(uint32_t id) {
    for (int i = 0; i < g.nstreams; i++)
        if (g.streams[i]->id == id && !g.streams[i]->dead) return g.streams[i];
    return NULL;
}

static void stream_check_end(struct stream *s) {
    if (s->guest_closed && s->host_closed && (s->pid == 0 || s->exit_sent)) s->dead = true;
}

void stream_send_close(struct stream *s) {
    if (s->guest_closed || s->dead) return;
    s->guest_closed = true;
    send_frame(s->id, FT_CLOSE, 0, NULL, 0);
    stream_check_end(s);
}

void stream_send_reset(struct stream *s, const char *reason) {
    if (s->dead) return;
    send_frame(s->id, FT_RESET, 0, reason, strlen(reason));
    s->dead = true;
}

static void signal_name(int sig, char *out, size_t n) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev) snprintf(out, n, "SIG%s", abbrev);
    else snprintf(out, n, "SIG%d", sig);
}

void stream_send_exit(struct stream *s) {
    if (s->exit_sent || s->dead) return;
    struct buf b;
    buf_init(&b);
    if (WIFSIGNALED(s->wstatus)) {
        char name[32];
        signal_name(WTERMSIG(s->wstatus), name, sizeof name);
        buf_puts(&b, "{\"code\":null,\"signal\":");
        jw_cstr(&b, name);
        buf_puts(&b, "}");
    } else {
        buf_printf(&b, "{\"code\":%d,\"signal\":null}", WEXITSTATUS(s->wstatus));
    }
    send_json(s->id, FT_EXIT, &b);
    buf_free(&b);
    s->exit_sent = true;
    stream_check_end(s);
}

void stream_release_fds(struct stream *s) {
    if (!s->borrowed_fds) {
        int fds[3] = { s->src_fd[0], s->src_fd[1], s->sink_fd };
        for (int i = 0; i < 3; i++) {
            bool seen = fds[i] < 0;
            for (int j = 0; j < i && !seen; j++) seen = fds[j] == fds[i];
            if (!seen) close(fds[i]);
        }
    }
    s->src_fd[0] = s->src_fd[1] = s->sink_fd = -1;
}

void stream_sweep(void) {
    int j = 0;
    for (int i = 0; i < g.nstreams; i++) {
        struct stream *s = g.streams[i];
        if (!s->dead) {
            g.streams[j++] = s;
            continue;
        }
        if (s->kind == SK_PTY) pty_on_detach(s);
        if (s->kind == SK_EXEC && s->pid > 0 && !s->exited) kill(-s->pid, SIGKILL);
        stream_release_fds(s);
        buf_free(&s->sink_buf);
        free(s);
    }
    g.nstreams = j;
}

bool stream_wants_read(const struct stream *s, int which) {
    return !s->dead && s->src_fd[which] >= 0 && !s->src_eof[which] && s->send_window > 0 &&
           !s->guest_closed && g.outq.len < OUTQ_SOFT_LIMIT;
}

/* The guest has consumed n of the host's bytes: give window back once half of it is used. */
static void stream_consumed(struct stream *s, size_t n) {
    s->recv_consumed += (uint32_t)n;
    if (s->recv_consumed >= RECEIVE_WINDOW / 2 && !s->dead) {
        uint8_t p[4];
        put_u32le(p, s->recv_consumed);
        send_frame(s->id, FT_WINDOW, 0, p, 4);
        s->recv_window += s->recv_consumed;
        s->recv_consumed = 0;
    }
}

static void stream_src_eof(struct stream *s, int which) {
    s->src_eof[which] = true;
    switch (s->kind) {
    case SK_EXEC:
        close(s->src_fd[which]);
        s->src_fd[which] = -1;
        exec_check_done(s);
        break;
    case SK_NET:
        stream_send_close(s);
        break;
    case SK_PTY:
        pty_on_eof(s);
        break;
    case SK_DNS_UDP:
        break; /* no fd: its query went out whole when it was opened */
    }
}

void stream_on_readable(struct stream *s, int which) {
    static uint8_t tmp[FRAME_MAX_PAYLOAD];
    size_t want = s->send_window < sizeof tmp ? s->send_window : sizeof tmp;
    if (want == 0) return;
    ssize_t n = read(s->src_fd[which], tmp, want);
    if (n > 0) {
        send_frame(s->id, FT_DATA, (uint8_t)which, tmp, (size_t)n);
        s->send_window -= (uint32_t)n;
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0 && s->kind == SK_NET) {
        char reason[128];
        snprintf(reason, sizeof reason, "socket error: %s", strerror(errno));
        stream_send_reset(s, reason);
        return;
    }
    stream_src_eof(s, which); /* EOF, or EIO from a pty whose shell has gone */
}

static void stream_sink_shut(struct stream *s) {
    s->sink_shut_pending = false;
    if (s->sink_fd < 0) return;
    if (s->kind == SK_EXEC) {
        close(s->sink_fd);
        s->sink_fd = -1;
    } else if (s->kind == SK_NET) {
        shutdown(s->sink_fd, SHUT_WR);
    }
}

/* The sink cannot take more (stdin closed by the process, pty gone): drop what waits, and
 * count it as consumed so the host's window keeps moving. */
static void stream_sink_discard(struct stream *s) {
    size_t n = s->sink_buf.len;
    buf_clear(&s->sink_buf);
    if (s->kind == SK_EXEC && s->sink_fd >= 0) {
        close(s->sink_fd);
        s->sink_fd = -1;
    }
    stream_consumed(s, n);
}

void stream_on_writable(struct stream *s) {
    while (s->sink_buf.len > 0 && s->sink_fd >= 0) {
        ssize_t n = write(s->sink_fd, buf_head(&s->sink_buf), s->sink_buf.len);
        if (n > 0) {
            buf_consume(&s->sink_buf, (size_t)n);
            stream_consumed(s, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (s->kind == SK_NET) {
            char reason[128];
            snprintf(reason, sizeof reason, "socket error: %s", strerror(n < 0 ? errno : EPIPE));
            stream_send_reset(s, reason);
            return;
        }
        stream_sink_discard(s);
        return;
    }
    if (s->sink_buf.len == 0 && s->sink_shut_pending) stream_sink_shut(s);
}

/* The host's bytes for the sink go straight from the frame while nothing waits before them, so
 * most are copied once, into the kernel; only what the sink cannot take yet is kept. */
static void stream_sink_data(struct stream *s, const uint8_t *p, size_t n) {
    ssize_t w = s->sink_buf.len == 0 ? write(s->sink_fd, p, n) : 0;
    bool failed = w < 0 && errno != EAGAIN;
    size_t done = w > 0 ? (size_t)w : 0;
    if (done > 0) stream_consumed(s, done);
    if (done == n) return;
    if (buf_append(&s->sink_buf, p + done, n - done) < 0) {
        stream_send_reset(s, "out of memory");
        return;
    }
    /* A full sink (a short write, EAGAIN, or bytes already waiting) is polled for; any other
     * failure is stream_on_writable's to handle. */
    if (failed) stream_on_writable(s);
}

static void host_open(const struct frame *f) {
    if (f->stream % 2 == 0) {
        protocol_error("OPEN on stream %u: the host opens odd ids", f->stream);
        return;
    }
    for (int i = 0; i < g.nstreams; i++)
        if (g.streams[i]->id == f->stream) {
            protocol_error("OPEN on stream %u, which is already open", f->stream);
            return;
        }
    struct json_doc doc;
    const char *err = NULL;
    if (json_parse(&doc, (const char *)f->payload, f->len, &err) < 0) {
        char reason[160];
        snprintf(reason, sizeof reason, "bad OPEN payload: %s", err);
        send_frame(f->stream, FT_RESET, 0, reason, strlen(reason));
        return;
    }
    const struct json_node *root = json_root(&doc);
    const char *kind = json_cstr(json_get(&doc, root, "kind"));
    enum stream_kind k;
    if (kind && strcmp(kind, "pty") == 0) k = SK_PTY;
    else if (kind && strcmp(kind, "exec") == 0) k = SK_EXEC;
    else {
        const char *reason = kind && strcmp(kind, "net") == 0 ? "net streams are opened by the guest"
                                                               : "OPEN: unknown or missing kind";
        send_frame(f->stream, FT_RESET, 0, reason, strlen(reason));
        json_free(&doc);
        return;
    }
    struct stream *s = stream_new(f->stream, k);
    if (!s) {
        send_frame(f->stream, FT_RESET, 0, "out of memory", 13);
    } else if (k == SK_PTY) {
        pty_open(s, &doc, root);
    } else {
        exec_open(s, &doc, root);
    }
    json_free(&doc);
}

void stream_on_host_frame(const struct frame *f) {
    if (f->type == FT_OPEN) {
        host_open(f);
        return;
    }
    struct stream *s = stream_find(f->stream);
    if (!s) {
        /* A stream that just ended here (RESET or both closed) can still receive frames in
         * flight; DATA for it is simply dropped. */
        return;
    }
    switch (f->type) {
    case FT_DATA:
        if (s->host_closed) {
            protocol_error("DATA on stream %u after the host's CLOSE", s->id);
            return;
        }
        if (f->len > s->recv_window) {
            protocol_error("DATA on stream %u exceeds the window (%u bytes sent, %u allowed)", s->id,
                           f->len, s->recv_window);
            return;
        }
        s->recv_window -= f->len;
        if (s->kind == SK_DNS_UDP) {
            /* One answer is at most 64 KiB and its length; the host owes no more than that. */
            if (s->sink_buf.len + f->len > 2 + 65535 || buf_append(&s->sink_buf, f->payload, f->len) < 0) {
                stream_send_reset(s, "dns: the host's answer is too long");
                return;
            }
            dns_on_host_data(s);
            stream_consumed(s, f->len);
        } else if (s->sink_fd < 0) {
            stream_consumed(s, f->len);
        } else {
            stream_sink_data(s, f->payload, f->len);
        }
        break;
    case FT_WINDOW: {
        uint32_t v = get_u32le(f->payload);
        s->send_window = v > UINT32_MAX - s->send_window ? UINT32_MAX : s->send_window + v;
        break;
    }
    case FT_CLOSE:
        if (s->host_closed) return;
        s->host_closed = true;
        s->sink_shut_pending = true;
        if (s->sink_buf.len == 0) stream_sink_shut(s);
        stream_check_end(s);
        break;
    case FT_RESET:
        s->dead = true; /* stream_sweep ends the process or the socket */
        break;
    case FT_RESIZE:
        if (s->kind == SK_PTY) pty_resize(s, get_u16le(f->payload), get_u16le(f->payload + 2));
        break;
    default:
        log_msg("ignored a %s frame from the host on stream %u", frame_type_name(f->type), f->stream);
        break;
    }
}
