/* Small shared pieces: a growable byte buffer, clocks, logging, fd flags. */
#ifndef CAPSEM_UTIL_H
#define CAPSEM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define AGENT_NAME "capsem-agent"
#define AGENT_VERSION "0.1.0"
#define PROTOCOL_VERSION 2

struct buf {
    char *data;
    size_t len;   /* bytes held, from data + off */
    size_t off;   /* bytes already consumed at the front */
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_clear(struct buf *b);
/* Returns 0, or -1 when memory runs out (the buffer is unchanged then). */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline const char *buf_head(const struct buf *b) { return b->data + b->off; }
/* Room for n more bytes at the end, to be filled in place and then buf_commit'ed: NULL when
 * memory runs out (the buffer is unchanged then). */
char *buf_space(struct buf *b, size_t n);
static inline void buf_commit(struct buf *b, size_t n) { b->len += n; }
void buf_consume(struct buf *b, size_t n);

int64_t now_mono_ms(void);     /* CLOCK_MONOTONIC */
int64_t now_boot_ms(void);     /* CLOCK_BOOTTIME, what /proc/uptime shows */
int64_t now_real_ms(void);     /* CLOCK_REALTIME */

void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int set_nonblock(int fd);
int set_cloexec(int fd);

#endif
