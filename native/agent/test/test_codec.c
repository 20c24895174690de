/* Unit test for the frame decoder and the JSON reader/writer: split, merged, garbage input. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "agent.h"
#include "frame.h"
#include "json.h"

static int failures, checks;
#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
    fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static void build_stream(struct buf *b) {
    frame_encode(b, 0, FT_HELLO, 0, "{\"protocol\":1}", 14);
    frame_encode(b, 1, FT_DATA, 1, "abc", 3);
    frame_encode(b, 1, FT_CLOSE, 0, NULL, 0);
    uint8_t w[4];
    put_u32le(w, 262144);
    frame_encode(b, 3, FT_WINDOW, 0, w, 4);
    static uint8_t big[FRAME_MAX_PAYLOAD];
    memset(big, 'x', sizeof big);
    frame_encode(b, 5, FT_DATA, 0, big, sizeof big);
}

static void check_frames(struct frame_decoder *d, int *seen) {
    struct frame f;
    int r;
    while ((r = frame_decoder_next(d, &f)) == 1) {
        switch (*seen) {
        case 0: CHECK(f.type == FT_HELLO && f.stream == 0 && f.len == 14 && memcmp(f.payload, "{\"protocol\":1}", 14) == 0); break;
        case 1: CHECK(f.type == FT_DATA && f.stream == 1 && f.flags == 1 && f.len == 3 && memcmp(f.payload, "abc", 3) == 0); break;
        case 2: CHECK(f.type == FT_CLOSE && f.len == 0); break;
        case 3: CHECK(f.type == FT_WINDOW && f.stream == 3 && get_u32le(f.payload) == 262144); break;
        case 4: CHECK(f.type == FT_DATA && f.stream == 5 && f.len == FRAME_MAX_PAYLOAD && f.payload[0] == 'x' && f.payload[FRAME_MAX_PAYLOAD - 1] == 'x'); break;
        default: CHECK(!"too many frames");
        }
        (*seen)++;
    }
    CHECK(r == 0);
}

static void test_split_every_size(void) {
    struct buf all;
    buf_init(&all);
    build_stream(&all);
    size_t sizes[] = { 1, 2, 3, 5, 7, 11, 12, 13, 64, 4096, 65547, 1 << 20 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        struct frame_decoder d;
        frame_decoder_init(&d);
        int seen = 0;
        for (size_t off = 0; off < all.len; off += sizes[k]) {
            size_t n = all.len - off < sizes[k] ? all.len - off : sizes[k];
            CHECK(frame_decoder_feed(&d, buf_head(&all) + off, n) == 0);
            check_frames(&d, &seen);
        }
        CHECK(seen == 5);
        frame_decoder_free(&d);
    }
    /* every split point of the first 60 bytes into two pieces */
    for (size_t cut = 0; cut <= 60; cut++) {
        struct frame_decoder d;
        frame_decoder_init(&d);
        int seen = 0;
        frame_decoder_feed(&d, buf_head(&all), cut);
        check_frames(&d, &seen);
        frame_decoder_feed(&d, buf_head(&all) + cut, all.len - cut);
        check_frames(&d, &seen);
        CHECK(seen == 5);
        frame_decoder_free(&d);
    }
    buf_free(&all);
}

/* Reads straight into the decoder (space, then commit), as the port is read: every read size, each
 * read shorter than the room asked for, and a broken decoder taking nothing more in. */
static void test_read_in_place(void) {
    struct buf all;
    buf_init(&all);
    build_stream(&all);
    size_t sizes[] = { 1, 5, 12, 13, 4096, 65536, 65547, 1 << 20 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        struct frame_decoder d;
        frame_decoder_init(&d);
        int seen = 0;
        for (size_t off = 0; off < all.len; off += sizes[k]) {
            size_t n = all.len - off < sizes[k] ? all.len - off : sizes[k];
            char *space = frame_decoder_space(&d, 65536 > n ? 65536 : n);
            CHECK(space != NULL);
            memcpy(space, buf_head(&all) + off, n);
            frame_decoder_commit(&d, n);
            check_frames(&d, &seen);
        }
        CHECK(seen == 5);
        frame_decoder_free(&d);
    }
    buf_free(&all);

    struct frame_decoder d;
    frame_decoder_init(&d);
    char *space = frame_decoder_space(&d, 64);
    memcpy(space, "\x00\x00\x00\x00\x00\x00\x00\x00\xee\x00\x00\x00", 12);
    frame_decoder_commit(&d, 12);
    struct frame f;
    CHECK(frame_decoder_next(&d, &f) == -1);
    space = frame_decoder_space(&d, 64);
    CHECK(space != NULL);
    frame_decoder_commit(&d, 12);
    CHECK(d.in.len == 0 && frame_decoder_next(&d, &f) == -1);
    frame_decoder_free(&d);
}

static int decode_error(const uint8_t *h, size_t n, const char *want) {
    struct frame_decoder d;
    frame_decoder_init(&d);
    frame_decoder_feed(&d, h, n);
    struct frame f;
    int r = frame_decoder_next(&d, &f);
    int ok = r == -1 && strstr(d.error, want) != NULL;
    if (!ok) fprintf(stderr, "  decoder said %d '%s', wanted '%s'\n", r, d.error, want);
    /* a broken decoder stays broken */
    frame_decoder_feed(&d, h, n);
    ok = ok && frame_decoder_next(&d, &f) == -1;
    frame_decoder_free(&d);
    return ok;
}

static void test_garbage(void) {
    uint8_t h[16] = { 0 };
    put_u32le(h, 65537); h[8] = FT_DATA; put_u32le(h + 4, 1);
    CHECK(decode_error(h, 12, "over the maximum"));
    memset(h, 0, sizeof h); h[8] = 0x0B; put_u32le(h + 4, 1);
    CHECK(decode_error(h, 12, "unknown frame type 0x0b"));
    memset(h, 0, sizeof h); h[8] = FT_DATA; put_u32le(h + 4, 1); h[10] = 1;
    CHECK(decode_error(h, 12, "reserved"));
    memset(h, 0, sizeof h); h[8] = FT_CONTROL; put_u32le(h + 4, 9);
    CHECK(decode_error(h, 12, "on stream 9"));
    memset(h, 0, sizeof h); h[8] = FT_DATA;
    CHECK(decode_error(h, 12, "on stream 0"));
    memset(h, 0, sizeof h); h[8] = FT_WINDOW; put_u32le(h + 4, 1); put_u32le(h, 3);
    CHECK(decode_error(h, 15, "3-byte payload"));
    memset(h, 0, sizeof h); h[8] = FT_CLOSE; put_u32le(h + 4, 1); put_u32le(h, 1);
    CHECK(decode_error(h, 13, "1-byte payload"));
    memset(h, 0, sizeof h); h[8] = FT_RESIZE; put_u32le(h + 4, 1); put_u32le(h, 2);
    CHECK(decode_error(h, 14, "2-byte payload"));
    /* an incomplete header is not an error yet */
    struct frame_decoder d;
    struct frame f;
    frame_decoder_init(&d);
    frame_decoder_feed(&d, "\x01\x00\x00", 3);
    CHECK(frame_decoder_next(&d, &f) == 0);
    frame_decoder_free(&d);
    /* random bytes: never a crash, and an error or a wait for more */
    srand(1);
    for (int i = 0; i < 20000; i++) {
        uint8_t r[64];
        size_t n = (size_t)(rand() % 64);
        for (size_t j = 0; j < n; j++) r[j] = (uint8_t)rand();
        frame_decoder_init(&d);
        frame_decoder_feed(&d, r, n);
        int res;
        while ((res = frame_decoder_next(&d, &f)) == 1) {}
        CHECK(res == 0 || res == -1);
        frame_decoder_free(&d);
    }
}

static void test_json(void) {
    struct json_doc doc;
    const char *err;
    const char *t = "{\"type\":\"config\",\"time_ms\":1764420000000,\"env\":{\"K\":\"V\\n\\u00e9\\ud83d\\ude00\"},"
                    "\"argv\":[\"sh\",\"-c\"],\"stdin\":false,\"x\":null,\"f\":-1.5e2}";
    CHECK(json_parse(&doc, t, strlen(t), &err) == 0);
    const struct json_node *r = json_root(&doc);
    CHECK(strcmp(json_cstr(json_get(&doc, r, "type")), "config") == 0);
    int64_t v;
    CHECK(json_int(json_get(&doc, r, "time_ms"), 0, INT64_MAX / 1000000, &v) && v == 1764420000000LL);
    const char *k = json_cstr(json_get(&doc, json_get(&doc, r, "env"), "K"));
    CHECK(k && strcmp(k, "V\n\xc3\xa9\xf0\x9f\x98\x80") == 0);
    const struct json_node *a = json_get(&doc, r, "argv");
    CHECK(a && a->type == JSON_ARRAY && strcmp(json_child(&doc, a)->str, "sh") == 0 &&
          strcmp(json_next(&doc, json_child(&doc, a))->str, "-c") == 0);
    CHECK(json_get(&doc, r, "stdin")->type == JSON_BOOL && !json_get(&doc, r, "stdin")->boolean);
    CHECK(json_get(&doc, r, "x")->type == JSON_NULL);
    CHECK(json_int(json_get(&doc, r, "f"), INT32_MIN, INT32_MAX, &v) && v == -150);
    CHECK(!json_int(json_get(&doc, r, "time_ms"), INT32_MIN, INT32_MAX, &v));
    CHECK(json_get(&doc, r, "f")->number == -150.0);
    CHECK(json_get(&doc, r, "missing") == NULL);
    json_free(&doc);

    const char *bad[] = { "", "{", "{\"a\"}", "{\"a\":}", "[1,]", "\"abc", "tru", "01", "1.", "-",
                          "{\"a\":1}x", "\"\\x\"", "\"\\u12\"", "\"a\nb\"", "[1 2]", "{1:2}" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int r2 = json_parse(&doc, bad[i], strlen(bad[i]), &err);
        CHECK(r2 == -1);
        if (r2 == 0) { fprintf(stderr, "  accepted bad JSON '%s'\n", bad[i]); json_free(&doc); }
    }
    /* NUL inside a string: parsed, but not a C string */
    CHECK(json_parse(&doc, "\"a\\u0000b\"", 10, &err) == 0 && json_cstr(json_root(&doc)) == NULL);
    json_free(&doc);
    /* deep nesting is refused, not a stack overflow */
    char deep[20001];
    memset(deep, '[', 20000);
    deep[20000] = 0;
    CHECK(json_parse(&doc, deep, 20000, &err) == -1);

    struct buf b;
    buf_init(&b);
    jw_str(&b, "a\"b\\c\n\x01", 7);
    CHECK(b.len == strlen("\"a\\\"b\\\\c\\n\\u0001\"") && memcmp(buf_head(&b), "\"a\\\"b\\\\c\\n\\u0001\"", b.len) == 0);
    /* round trip */
    CHECK(json_parse(&doc, buf_head(&b), b.len, &err) == 0 && json_root(&doc)->len == 7 &&
          memcmp(json_root(&doc)->str, "a\"b\\c\n\x01", 7) == 0);
    json_free(&doc);
    buf_free(&b);
}

/* What the host reads from a net or dns OPEN: parsed back with the JSON reader. */
static void test_open_payloads(void) {
    struct json_doc doc;
    const char *err;
    struct buf b;
    int64_t v;

    struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(443) };
    inet_pton(AF_INET, "198.18.0.7", &v4.sin_addr);
    buf_init(&b);
    CHECK(open_payload(&b, "net", "py\"th\\on\n", 321, (struct sockaddr *)&v4, NULL) == 0);
    CHECK(json_parse(&doc, buf_head(&b), b.len, &err) == 0);
    const struct json_node *r = json_root(&doc);
    CHECK(strcmp(json_cstr(json_get(&doc, r, "kind")), "net") == 0);
    CHECK(strcmp(json_cstr(json_get(&doc, r, "process")), "py\"th\\on\n") == 0);
    CHECK(json_int(json_get(&doc, r, "pid"), 0, INT32_MAX, &v) && v == 321);
    const struct json_node *dst = json_get(&doc, r, "dst");
    CHECK(dst && strcmp(json_cstr(json_get(&doc, dst, "address")), "198.18.0.7") == 0);
    CHECK(json_int(json_get(&doc, dst, "port"), 1, 65535, &v) && v == 443);
    CHECK(json_get(&doc, r, "transport") == NULL);
    json_free(&doc);
    buf_free(&b);

    struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(8443) };
    inet_pton(AF_INET6, "64:ff9b::7f00:1", &v6.sin6_addr);
    buf_init(&b);
    CHECK(open_payload(&b, "net", "curl", -1, (struct sockaddr *)&v6, NULL) == 0);
    CHECK(json_parse(&doc, buf_head(&b), b.len, &err) == 0);
    r = json_root(&doc);
    CHECK(json_get(&doc, r, "process")->type == JSON_NULL && json_get(&doc, r, "pid")->type == JSON_NULL);
    dst = json_get(&doc, r, "dst");
    CHECK(dst && strcmp(json_cstr(json_get(&doc, dst, "address")), "64:ff9b::7f00:1") == 0);
    CHECK(json_int(json_get(&doc, dst, "port"), 1, 65535, &v) && v == 8443);
    json_free(&doc);
    buf_free(&b);

    buf_init(&b);
    CHECK(open_payload(&b, "dns", "node", 9, NULL, "udp") == 0);
    CHECK(b.len == strlen("{\"kind\":\"dns\",\"process\":\"node\",\"pid\":9,\"transport\":\"udp\"}") &&
          memcmp(buf_head(&b), "{\"kind\":\"dns\",\"process\":\"node\",\"pid\":9,\"transport\":\"udp\"}", b.len) == 0);
    buf_free(&b);

    struct sockaddr unknown = { .sa_family = AF_UNIX };
    buf_init(&b);
    CHECK(open_payload(&b, "net", NULL, 0, &unknown, NULL) == -1);
    buf_free(&b);
}

int main(void) {
    test_open_payloads();
    test_split_every_size();
    test_read_in_place();
    test_garbage();
    test_json();
    printf("test_codec: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
