/* Frame codec: a 12-byte little-endian header and its payload (PROTOCOL.md, "Frames").
 * Sans-io: the decoder is fed bytes and hands back whole, validated frames. */
#ifndef CAPSEM_FRAME_H
#define CAPSEM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define FRAME_HEADER_LEN 12
#define FRAME_MAX_PAYLOAD 65536u

enum frame_type {
    FT_HELLO = 0x01,
    FT_CONTROL = 0x02,
    FT_OPEN = 0x03,
    FT_DATA = 0x04,
    FT_WINDOW = 0x05,
    FT_CLOSE = 0x06,
    FT_RESET = 0x07,
    FT_EXIT = 0x08,
    FT_RESIZE = 0x09,
    FT_EVENT = 0x0A,
    FT_ERROR = 0x0F,
};

struct frame {
    uint32_t stream;
    uint8_t type;
    uint8_t flags;
    uint32_t len;
    const uint8_t *payload; /* valid until the next decoder call */
};

struct frame_decoder {
    struct buf in;
    char error[160]; /* set once the input broke a rule; the decoder then stays broken */
};

void frame_decoder_init(struct frame_decoder *d);
void frame_decoder_free(struct frame_decoder *d);
/* Adds bytes read from the port. Returns -1 when memory runs out. */
int frame_decoder_feed(struct frame_decoder *d, const void *p, size_t n);
/* Room for up to `want` bytes read from the port straight into the decoder, then
 * frame_decoder_commit with how many came: no copy from a scratch buffer, as a feed makes. NULL
 * when memory runs out. Like a feed, it may move the last frame's payload. */
void *frame_decoder_space(struct frame_decoder *d, size_t want);
/* Adds n bytes written at frame_decoder_space; a broken decoder ignores them, as it does a feed. */
void frame_decoder_commit(struct frame_decoder *d, size_t n);
/* 1: *f holds the next frame. 0: more bytes needed. -1: protocol error, see d->error. */
int frame_decoder_next(struct frame_decoder *d, struct frame *f);

const char *frame_type_name(uint8_t type);
/* Checks one header against the rules; returns NULL or a message. */
const char *frame_check_header(uint32_t len, uint32_t stream, uint8_t type, uint16_t reserved);

/* Appends one frame to out. Returns -1 when memory runs out or len is over the maximum. */
int frame_encode(struct buf *out, uint32_t stream, uint8_t type, uint8_t flags,
                 const void *payload, size_t len);

static inline uint32_t get_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint16_t get_u16le(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline void put_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void put_u16le(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

#endif
