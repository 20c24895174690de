#define _GNU_SOURCE
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

struct parser {
    struct json_doc *doc;
    const char *p, *end;
    const char *err;
};

static int new_node(struct parser *ps, enum json_type t) {
    struct json_doc *d = ps->doc;
    if (d->count == d->cap) {
        int cap = d->cap ? d->cap * 2 : 16;
        struct json_node *n = realloc(d->nodes, (size_t)cap * sizeof *n);
        if (!n) { ps->err = "out of memory"; return -1; }
        d->nodes = n;
        d->cap = cap;
    }
    struct json_node *n = &d->nodes[d->count];
    memset(n, 0, sizeof *n);
    n->type = t;
    n->first_child = n->next = -1;
    return d->count++;
}

static void skip_ws(struct parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(struct parser *ps, unsigned *out) {
    if (ps->end - ps->p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(ps->p[i]);
        if (h < 0) return -1;
        v = v << 4 | (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return 0;
}

/* Strings are decoded into doc->strings, which only grows; offsets are fixed up at the end. */
static int put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* Parses a string at ps->p (on the opening quote); returns the offset into doc->strings. */
static int parse_string(struct parser *ps, size_t *off, size_t *len) {
    struct json_doc *d = ps->doc;
    ps->p++; /* opening quote */
    /* Decoded text is never longer than the raw text. */
    size_t need = (size_t)(ps->end - ps->p) + 1;
    if (d->strings_len + need > d->strings_cap) {
        size_t cap = d->strings_cap ? d->strings_cap : 256;
        while (cap < d->strings_len + need) cap *= 2;
        char *s = realloc(d->strings, cap);
        if (!s) { ps->err = "out of memory"; return -1; }
        d->strings = s;
        d->strings_cap = cap;
    }
    char *o = d->strings + d->strings_len;
    char *start = o;
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p++;
        if (c == '"') {
            *o = 0;
            *off = d->strings_len;
            *len = (size_t)(o - start);
            d->strings_len += *len + 1;
            return 0;
        }
        if (c < 0x20) { ps->err = "control character in string"; return -1; }
        if (c != '\\') { *o++ = (char)c; continue; }
        if (ps->p >= ps->end) break;
        char e = *ps->p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (read_hex4(ps, &cp) < 0) { ps->err = "bad \\u escape"; return -1; }
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                    ps->p += 2;
                    if (read_hex4(ps, &lo) < 0) { ps->err = "bad \\u escape"; return -1; }
                    if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    else cp = 0xFFFD;
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            /* \uXXXX is 6 raw bytes and at most 4 decoded ones, a pair 12 and 4: it fits. */
            o += put_utf8(o, cp);
            break;
        }
        default: ps->err = "bad escape in string"; return -1;
        }
    }
    ps->err = "unterminated string";
    return -1;
}

static int parse_value(struct parser *ps, int depth);

static int parse_number(struct parser *ps) {
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p >= ps->end) { ps->err = "bad number"; return -1; }
    if (*ps->p == '0') ps->p++;
    else if (*ps->p >= '1' && *ps->p <= '9') while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    else { ps->err = "bad number"; return -1; }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') { ps->err = "bad number"; return -1; }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') { ps->err = "bad number"; return -1; }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    char tmp[64];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof tmp) { ps->err = "number too long"; return -1; }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    int idx = new_node(ps, JSON_NUMBER);
    if (idx < 0) return -1;
    ps->doc->nodes[idx].number = strtod(tmp, NULL);
    return idx;
}

static int match_word(struct parser *ps, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0) { ps->err = "unexpected token"; return -1; }
    ps->p += n;
    return 0;
}

/* String offsets are stored in str/key as (char *)offset until the parse ends. */
#define OFF_TO_PTR(off) ((char *)(uintptr_t)((off) + 1))

static int parse_container(struct parser *ps, int depth, bool object) {
    int idx = new_node(ps, object ? JSON_OBJECT : JSON_ARRAY);
    if (idx < 0) return -1;
    ps->p++;
    skip_ws(ps);
    char close = object ? '}' : ']';
    if (ps->p < ps->end && *ps->p == close) { ps->p++; return idx; }
    int last = -1;
    for (;;) {
        size_t koff = 0, klen = 0;
        skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') { ps->err = "expected member name"; return -1; }
            if (parse_string(ps, &koff, &klen) < 0) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { ps->err = "expected ':'"; return -1; }
            ps->p++;
        }
        int child = parse_value(ps, depth + 1);
        if (child < 0) return -1;
        if (object) {
            ps->doc->nodes[child].key = OFF_TO_PTR(koff);
            ps->doc->nodes[child].key_len = klen;
        }
        if (last < 0) ps->doc->nodes[idx].first_child = child;
        else ps->doc->nodes[last].next = child;
        last = child;
        skip_ws(ps);
        if (ps->p >= ps->end) { ps->err = "unterminated container"; return -1; }
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == close) { ps->p++; return idx; }
        ps->err = "expected ',' or end of container";
        return -1;
    }
}

static int parse_value(struct parser *ps, int depth) {
    if (depth > JSON_MAX_DEPTH) { ps->err = "nested too deeply"; return -1; }
    skip_ws(ps);
    if (ps->p >= ps->end) { ps->err = "unexpected end"; return -1; }
    char c = *ps->p;
    int idx;
    switch (c) {
    case '{': return parse_container(ps, depth, true);
    case '[': return parse_container(ps, depth, false);
    case '"': {
        size_t off, len;
        if (parse_string(ps, &off, &len) < 0) return -1;
        idx = new_node(ps, JSON_STRING);
        if (idx < 0) return -1;
        ps->doc->nodes[idx].str = OFF_TO_PTR(off);
        ps->doc->nodes[idx].len = len;
        return idx;
    }
    case 't':
    case 'f':
        if (match_word(ps, c == 't' ? "true" : "false") < 0) return -1;
        idx = new_node(ps, JSON_BOOL);
        if (idx >= 0) ps->doc->nodes[idx].boolean = c == 't';
        return idx;
    case 'n':
        if (match_word(ps, "null") < 0) return -1;
        return new_node(ps, JSON_NULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(ps);
        ps->err = "unexpected character";
        return -1;
    }
}

int json_parse(struct json_doc *doc, const char *text, size_t len, const char **err) {
    memset(doc, 0, sizeof *doc);
    struct parser ps = { doc, text, text + len, NULL };
    int root = parse_value(&ps, 0);
    if (root >= 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) { ps.err = "trailing characters"; root = -1; }
    }
    if (root < 0) {
        if (err) *err = ps.err ? ps.err : "bad JSON";
        json_free(doc);
        return -1;
    }
    for (int i = 0; i < doc->count; i++) {
        struct json_node *n = &doc->nodes[i];
        if (n->str) n->str = doc->strings + ((uintptr_t)n->str - 1);
        if (n->key) n->key = doc->strings + ((uintptr_t)n->key - 1);
    }
    return 0;
}

void json_free(struct json_doc *doc) {
    free(doc->nodes);
    free(doc->strings);
    memset(doc, 0, sizeof *doc);
}

const struct json_node *json_root(const struct json_doc *doc) {
    return doc->count > 0 ? &doc->nodes[0] : NULL;
}

const struct json_node *json_child(const struct json_doc *doc, const struct json_node *n) {
    if (!n || n->first_child < 0) return NULL;
    return &doc->nodes[n->first_child];
}

const struct json_node *json_next(const struct json_doc *doc, const struct json_node *n) {
    if (!n || n->next < 0) return NULL;
    return &doc->nodes[n->next];
}

const struct json_node *json_get(const struct json_doc *doc, const struct json_node *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    const struct json_node *found = NULL;
    for (const struct json_node *c = json_child(doc, obj); c; c = json_next(doc, c))
        if (c->key_len == kl && memcmp(c->key, key, kl) == 0) found = c; /* last one wins */
    return found;
}

const char *json_cstr(const struct json_node *n) {
    if (!n || n->type != JSON_STRING || strlen(n->str) != n->len) return NULL;
    return n->str;
}

bool json_int(const struct json_node *n, int64_t min, int64_t max, int64_t *out) {
    if (!n || n->type != JSON_NUMBER) return false;
    double v = n->number;
    if (!(v >= (double)min && v <= (double)max) || v != floor(v)) return false;
    *out = (int64_t)v;
    return true;
}

int jw_str(struct buf *b, const char *s, size_t len) {
    if (buf_append(b, "\"", 1) < 0) return -1;
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[8];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c < 0x20 || c == 0x7F) {
            static const char hex[] = "0123456789abcdef";
            tmp[0] = '\\'; tmp[1] = 'u'; tmp[2] = '0'; tmp[3] = '0';
            tmp[4] = hex[c >> 4]; tmp[5] = hex[c & 15]; tmp[6] = 0;
            esc = tmp;
        }
        if (esc) {
            if (buf_append(b, s + i - run, run) < 0 || buf_puts(b, esc) < 0) return -1;
            run = 0;
        } else {
            run++;
        }
    }
    if (buf_append(b, s + len - run, run) < 0) return -1;
    return buf_append(b, "\"", 1);
}

int jw_cstr(struct buf *b, const char *s) { return jw_str(b, s, strlen(s)); }
