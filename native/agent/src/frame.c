#define _GNU_SOURCE
#include "frame.h"

#include <stdio.h>
#include <string.h>

void frame_decoder_init(struct frame_decoder *d) {
    buf_init(&d->in);
    d->error[0] = 0;
}

void frame_decoder_free(struct frame_decoder *d) { buf_free(&d->in); }

int frame_decoder_feed(struct frame_decoder *d, const void *p, size_t n) {
    if (d->error[0]) return 0; /* broken: input is ignored */
    return buf_append(&d->in, p, n);
}

void *frame_decoder_space(struct frame_decoder *d, size_t want) { return buf_space(&d->in, want); }

void frame_decoder_commit(struct frame_decoder *d, size_t n) {
    if (!d->error[0]) buf_commit(&d->in, n);
}

const char *frame_type_name(uint8_t type) {
    switch (type) {
    case FT_HELLO: return "HELLO";
    case FT_CONTROL: return "CONTROL";
    case FT_OPEN: return "OPEN";
    case FT_DATA: return "DATA";
    case FT_WINDOW: return "WINDOW";
    case FT_CLOSE: return "CLOSE";
    case FT_RESET: return "RESET";
    case FT_EXIT: return "EXIT";
    case FT_RESIZE: return "RESIZE";
    case FT_EVENT: return "EVENT";
    case FT_ERROR: return "ERROR";
    default: return NULL;
    }
}

const char *frame_check_header(uint32_t len, uint32_t stream, uint8_t type, uint16_t reserved) {
    static char msg[160];
    const char *name = frame_type_name(type);
    if (len > FRAME_MAX_PAYLOAD) {
        snprintf(msg, sizeof msg, "frame payload length %u over the maximum %u", len, FRAME_MAX_PAYLOAD);
        return msg;
    }
    if (!name) {
        snprintf(msg, sizeof msg, "unknown frame type 0x%02x", type);
        return msg;
    }
    if (reserved != 0) {
        snprintf(msg, sizeof msg, "%s frame with reserved field 0x%04x (must be 0)", name, reserved);
        return msg;
    }
    int control = type == FT_HELLO || type == FT_CONTROL || type == FT_EVENT || type == FT_ERROR;
    if (control && stream != 0) {
        snprintf(msg, sizeof msg, "%s frame on stream %u (must be 0)", name, stream);
        return msg;
    }
    if (!control && stream == 0) {
        snprintf(msg, sizeof msg, "%s frame on stream 0 (must be a stream > 0)", name);
        return msg;
    }
    if ((type == FT_WINDOW && len != 4) || (type == FT_RESIZE && len != 4) ||
        (type == FT_CLOSE && len != 0)) {
        snprintf(msg, sizeof msg, "%s frame with a %u-byte payload (must be %d)", name, len,
                 type == FT_CLOSE ? 0 : 4);
        return msg;
    }
    return NULL;
}

int frame_decoder_next(struct frame_decoder *d, struct frame *f) {
    if (d->error[0]) return -1;
    if (d->in.len < FRAME_HEADER_LEN) return 0;
    const uint8_t *h = (const uint8_t *)buf_head(&d->in);
    uint32_t len = get_u32le(h);
    uint32_t stream = get_u32le(h + 4);
    uint8_t type = h[8];
    uint8_t flags = h[9];
    uint16_t reserved = get_u16le(h + 10);
    const char *err = frame_check_header(len, stream, type, reserved);
    if (err) {
        snprintf(d->error, sizeof d->error, "%s", err);
        buf_free(&d->in);
        return -1;
    }
    if (d->in.len < FRAME_HEADER_LEN + (size_t)len) return 0;
    f->stream = stream;
    f->type = type;
    f->flags = flags;
    f->len = len;
    f->payload = h + FRAME_HEADER_LEN;
    /* The payload stays readable: consume only moves the offset; the next feed may move it. */
    buf_consume(&d->in, FRAME_HEADER_LEN + (size_t)len);
    return 1;
}

int frame_encode(struct buf *out, uint32_t stream, uint8_t type, uint8_t flags,
                 const void *payload, size_t len) {
    if (len > FRAME_MAX_PAYLOAD) return -1;
    uint8_t h[FRAME_HEADER_LEN];
    put_u32le(h, (uint32_t)len);
    put_u32le(h + 4, stream);
    h[8] = type;
    h[9] = flags;
    put_u16le(h + 10, 0);
    if (buf_append(out, h, sizeof h) < 0) return -1;
    if (buf_append(out, payload, len) < 0) {
        out->len -= sizeof h;
        return -1;
    }
    return 0;
}
