/* The environment children start with: the agent's own, the config's, then per-stream extras. */
#define _GNU_SOURCE
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

struct envlist {
    char **v;
    size_t n, cap;
};

static int env_put(struct envlist *e, const char *key, size_t klen, const char *val) {
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], key, klen) == 0 && e->v[i][klen] == '=') {
            char *s;
            if (asprintf(&s, "%.*s=%s", (int)klen, key, val) < 0) return -1;
            free(e->v[i]);
            e->v[i] = s;
            return 0;
        }
    }
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 32;
        char **v = realloc(e->v, cap * sizeof *v);
        if (!v) return -1;
        e->v = v;
        e->cap = cap;
    }
    char *s;
    if (asprintf(&s, "%.*s=%s", (int)klen, key, val) < 0) return -1;
    e->v[e->n++] = s;
    e->v[e->n] = NULL;
    return 0;
}

static void env_put_entry(struct envlist *e, const char *entry) {
    const char *eq = strchr(entry, '=');
    if (!eq || eq == entry) return;
    env_put(e, entry, (size_t)(eq - entry), eq + 1);
}

static bool valid_key(const char *k) {
    return k && *k && !strchr(k, '=');
}

static void env_put_object(struct envlist *e, const struct json_doc *doc, const struct json_node *obj) {
    if (!obj || obj->type != JSON_OBJECT) return;
    for (const struct json_node *c = json_child(doc, obj); c; c = json_next(doc, c)) {
        const char *v = json_cstr(c);
        if (!v || strlen(c->key) != c->key_len || !valid_key(c->key)) continue;
        env_put(e, c->key, c->key_len, v);
    }
}

char **env_build(char *const *base, const struct json_doc *doc, const struct json_node *extra,
                 const char *term) {
    struct envlist e = { 0 };
    env_put(&e, "PATH", 4, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (char *const *p = base; p && *p; p++) env_put_entry(&e, *p);
    env_put_object(&e, doc, extra);
    if (term) env_put(&e, "TERM", 4, term);
    if (!e.v) { /* keep a valid empty list */
        e.v = calloc(1, sizeof *e.v);
    }
    return e.v;
}

void env_free(char **env) {
    if (!env) return;
    for (char **p = env; *p; p++) free(*p);
    free(env);
}

#define GUEST_NO_PROXY "localhost,127.0.0.1,::1,[::1]"

/* Sets the base environment from the agent's own (minus what init passed to the agent only),
 * the config's env, and the proxy variables. */
void env_set_base(const struct json_doc *doc, const struct json_node *cfg_env) {
    struct envlist e = { 0 };
    env_put(&e, "PATH", 4, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    if (!getenv("HOME")) env_put(&e, "HOME", 4, "/root");
    for (char **p = environ; p && *p; p++)
        if (strncmp(*p, "CAPSEM_INIT_", 12) != 0) env_put_entry(&e, *p);
    env_put_object(&e, doc, cfg_env);
    if (g.proxy_port > 0) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", g.proxy_port);
        env_put(&e, "HTTP_PROXY", 10, url);
        env_put(&e, "HTTPS_PROXY", 11, url);
        env_put(&e, "http_proxy", 10, url);
        env_put(&e, "https_proxy", 11, url);
        /* The guest's loopback is its own: the host's proxy cannot reach a server the guest runs,
         * so clients that honour NO_PROXY go to it directly. Tools spell IPv6 differently. */
        env_put(&e, "NO_PROXY", 8, GUEST_NO_PROXY);
        env_put(&e, "no_proxy", 8, GUEST_NO_PROXY);
    }
    env_free(g.env);
    g.env = e.v;
}
