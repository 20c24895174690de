/* libFuzzer target: the frame decoder (fed in uneven chunks) and the JSON reader/writer. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "json.h"

static void walk(const struct json_doc *doc, const struct json_node *n, int depth) {
    for (const struct json_node *c = json_child(doc, n); c; c = json_next(doc, c)) {
        int64_t v;
        (void)json_int(c, INT64_MIN / 2, INT64_MAX / 2, &v);
        (void)json_cstr(c);
        if (depth < 80) walk(doc, c, depth + 1);
    }
}

static void check_json(const uint8_t *p, size_t n) {
    struct json_doc doc;
    const char *err;
    if (json_parse(&doc, (const char *)p, n, &err) < 0) return;
    const struct json_node *r = json_root(&doc);
    static const char *keys[] = { "type", "kind", "argv", "env", "protocol", "id", "cols", "time_ms", "dst", "address", "port", "transport" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) (void)json_get(&doc, r, keys[i]);
    walk(&doc, r, 0);
    /* Whatever string came in must survive the writer and the reader again. */
    if (r->type == JSON_STRING) {
        struct buf b;
        buf_init(&b);
        jw_str(&b, r->str, r->len);
        struct json_doc again;
        if (json_parse(&again, buf_head(&b), b.len, &err) != 0) abort();
        if (json_root(&again)->len != r->len || memcmp(json_root(&again)->str, r->str, r->len) != 0) abort();
        json_free(&again);
        buf_free(&b);
    }
    json_free(&doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_json(data, size);
    if (size == 0) return 0;
    size_t step = (size_t)data[0] % 37 + 1;
    struct frame_decoder d;
    frame_decoder_init(&d);
    for (size_t off = 1; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        /* Every other chunk is read in place, as the port is, the rest fed. */
        if (((off - 1) / step + (data[0] >> 7)) & 1) {
            char *space = frame_decoder_space(&d, n);
            if (!space) abort();
            memcpy(space, data + off, n);
            frame_decoder_commit(&d, n);
        } else {
            frame_decoder_feed(&d, data + off, n);
        }
        struct frame f;
        int r;
        while ((r = frame_decoder_next(&d, &f)) == 1) {
            if (f.len > FRAME_MAX_PAYLOAD) abort();
            if (f.type == FT_HELLO || f.type == FT_CONTROL || f.type == FT_OPEN || f.type == FT_EXIT ||
                f.type == FT_EVENT)
                check_json(f.payload, f.len);
        }
        if (r < 0 && !d.error[0]) abort();
        if (r < 0) break;
    }
    frame_decoder_free(&d);
    return 0;
}
