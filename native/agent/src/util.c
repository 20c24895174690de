#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void buf_init(struct buf *b) { memset(b, 0, sizeof *b); }

void buf_free(struct buf *b) {
    free(b->data);
    buf_init(b);
}

void buf_clear(struct buf *b) { b->len = b->off = 0; }

static int buf_reserve(struct buf *b, size_t extra) {
    if (b->off > 0 && b->off + b->len + extra > b->cap) {
        memmove(b->data, b->data + b->off, b->len);
        b->off = 0;
    }
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

char *buf_space(struct buf *b, size_t n) {
    if (buf_reserve(b, n) < 0) return NULL;
    return b->data + b->off + b->len;
}

int buf_append(struct buf *b, const void *p, size_t n) {
    if (n == 0) return 0;
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->off + b->len, p, n);
    b->len += n;
    return 0;
}

int buf_puts(struct buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_printf(struct buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof tmp) return buf_append(b, tmp, (size_t)n);
    if (buf_reserve(b, (size_t)n + 1) < 0) return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->off + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void buf_consume(struct buf *b, size_t n) {
    if (n >= b->len) {
        b->len = b->off = 0;
    } else {
        b->off += n;
        b->len -= n;
    }
}

static int64_t clock_ms(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) < 0) return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }
int64_t now_boot_ms(void) { return clock_ms(CLOCK_BOOTTIME); }
int64_t now_real_ms(void) { return clock_ms(CLOCK_REALTIME); }

void log_msg(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int saved = errno;
    fprintf(stderr, AGENT_NAME ": %s\n", line);
    errno = saved;
}

int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return -1;
    return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int set_cloexec(int fd) {
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0) return -1;
    return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}
