/* A tiny JSON reader (into a node tree) and writer, enough for the protocol's messages. */
#ifndef CAPSEM_JSON_H
#define CAPSEM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_node {
    enum json_type type;
    bool boolean;
    double number;
    char *str;          /* decoded string (NUL-terminated; may hold NULs, see len) */
    size_t len;
    char *key;          /* member name when the parent is an object */
    size_t key_len;
    int first_child;    /* index, -1 when none */
    int next;           /* next sibling, -1 when none */
};

struct json_doc {
    struct json_node *nodes;
    int count, cap;
    char *strings;      /* one block holding every decoded string */
    size_t strings_len, strings_cap;
};

/* Parses text (not NUL-terminated). Returns 0 and fills doc, or -1 with *err set. */
int json_parse(struct json_doc *doc, const char *text, size_t len, const char **err);
void json_free(struct json_doc *doc);

/* The root node, or NULL. */
const struct json_node *json_root(const struct json_doc *doc);
/* Member of an object by name, or NULL. */
const struct json_node *json_get(const struct json_doc *doc, const struct json_node *obj, const char *key);
const struct json_node *json_child(const struct json_doc *doc, const struct json_node *n);
const struct json_node *json_next(const struct json_doc *doc, const struct json_node *n);
/* A string with no NUL inside, or NULL. */
const char *json_cstr(const struct json_node *n);
/* An integral number within [min, max]. */
bool json_int(const struct json_node *n, int64_t min, int64_t max, int64_t *out);

/* Writer helpers: append to a buffer; they return -1 when memory runs out. */
int jw_str(struct buf *b, const char *s, size_t len);
int jw_cstr(struct buf *b, const char *s);

#endif
