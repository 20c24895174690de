/* Stream 0: the handshake and the control messages (config, ping, shutdown, ready). */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

void send_hello(void) {
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "{\"protocol\":%d,\"role\":\"guest\",\"agent\":\"%s %s\"}", PROTOCOL_VERSION,
               AGENT_NAME, AGENT_VERSION);
    send_json(0, FT_HELLO, &b);
    buf_free(&b);
}

void begin_stop(int code) {
    if (g.phase == PH_STOPPING) return;
    g.phase = PH_STOPPING;
    g.exit_code = code;
    g.stop_deadline_ms = now_mono_ms() + 2000;
    exec_terminate(SIGTERM);
    pty_terminate(SIGTERM);
}

static void on_hello(const struct frame *f) {
    if (g.phase != PH_HELLO) return; /* repeats are ignored */
    struct json_doc doc;
    const char *err = NULL;
    if (json_parse(&doc, (const char *)f->payload, f->len, &err) < 0) {
        protocol_error("bad HELLO from the host: %s", err);
        return;
    }
    int64_t version;
    const struct json_node *root = json_root(&doc);
    if (!json_int(json_get(&doc, root, "protocol"), -2147483648LL, 2147483647LL, &version)) {
        json_free(&doc);
        protocol_error("bad HELLO from the host: no integer \"protocol\"");
        return;
    }
    json_free(&doc);
    if (version != PROTOCOL_VERSION) {
        char msg[128];
        snprintf(msg, sizeof msg, "protocol mismatch: host %lld, guest %d", (long long)version,
                 PROTOCOL_VERSION);
        log_msg("%s (this agent speaks protocol %d; the host and the guest image must be built "
                "from the same version)", msg, PROTOCOL_VERSION);
        send_frame(0, FT_ERROR, 0, msg, strlen(msg));
        g.port_read_stopped = true;
        begin_stop(3);
        return;
    }
    g.phase = PH_RUNNING;
    log_msg("host HELLO received, protocol %d", PROTOCOL_VERSION);
}

static int64_t env_ms(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < 0) return -1;
    return x;
}

/* Where init mounts the virtiofs share (build/guest/init-common.sh); a prepared VM's share starts
 * empty, and the host binds the session's folder into it under a name given in `workspace_source`. */
#define SHARE_ROOT "/run/capsem/share"

/* Why the last config could not be applied in full (sent as `error` in `ready`), or NULL. */
static char *config_error;

static void set_config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_config_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(config_error);
    config_error = strdup(msg);
    log_msg("config: %s", msg);
}

/* Binds the share's entry `name` over the workspace: the session's folder appears at the workspace
 * only once the VM is adopted. The name is one path component the host chose at random. */
static void bind_workspace_source(const char *name) {
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        set_config_error("workspace_source \"%.64s\" is not one path component", name);
        return;
    }
    if (!g.workspace) {
        set_config_error("workspace_source without a workspace to mount it on");
        return;
    }
    char source[512];
    snprintf(source, sizeof source, "%s/%s", SHARE_ROOT, name);
    if (mount(source, g.workspace, NULL, MS_BIND, NULL) < 0)
        set_config_error("cannot bind %s on %s: %s", source, g.workspace, strerror(errno));
}

static void send_ready(void) {
    int64_t now = now_boot_ms();
    int64_t init_start = env_ms("CAPSEM_INIT_START_MS");
    int64_t init_end = env_ms("CAPSEM_INIT_END_MS");
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "{\"type\":\"ready\",\"stages\":{");
    const char *sep = "";
    if (init_start >= 0) {
        buf_printf(&b, "\"kernel_ms\":%lld", (long long)init_start);
        sep = ",";
    }
    if (init_start >= 0 && init_end >= init_start) {
        buf_printf(&b, "%s\"init_ms\":%lld", sep, (long long)(init_end - init_start));
        sep = ",";
    }
    buf_printf(&b, "%s\"agent_ms\":%lld},\"uptime_ms\":%lld", sep,
               (long long)(now - g.start_boot_ms), (long long)now);
    if (config_error) {
        buf_puts(&b, ",\"error\":");
        jw_cstr(&b, config_error);
    }
    buf_puts(&b, "}");
    send_json(0, FT_CONTROL, &b);
    buf_free(&b);
}

static void apply_config(const struct json_doc *doc, const struct json_node *msg) {
    int64_t v;
    if (json_int(json_get(doc, msg, "time_ms"), 0, INT64_MAX / 1000000, &v)) {
        if (g.system_settings) {
            struct timespec ts = { .tv_sec = v / 1000, .tv_nsec = (long)(v % 1000) * 1000000 };
            if (clock_settime(CLOCK_REALTIME, &ts) < 0)
                send_log("warn", "clock_settime: %s", strerror(errno));
        }
    }
    const char *hostname = json_cstr(json_get(doc, msg, "hostname"));
    if (hostname && g.system_settings && sethostname(hostname, strlen(hostname)) < 0)
        send_log("warn", "sethostname: %s", strerror(errno));

    int old_port = g.proxy_port;
    if (json_int(json_get(doc, msg, "proxy_port"), 0, 65535, &v)) g.proxy_port = (int)v;
    const char *ws = json_cstr(json_get(doc, msg, "workspace"));
    bool ws_changed = false;
    if (ws && *ws && (!g.workspace || strcmp(ws, g.workspace) != 0)) {
        free(g.workspace);
        g.workspace = strdup(ws);
        ws_changed = true;
    }
    env_set_base(doc, json_get(doc, msg, "env"));
    free(config_error);
    config_error = NULL;
    const char *source = json_cstr(json_get(doc, msg, "workspace_source"));
    if (source) {
        bind_workspace_source(source);
        ws_changed = true; /* the watcher must watch the bound folder, not what lay under it */
    }

    if (g.workspace && (ws_changed || fswatch_fd() < 0)) {
        fswatch_stop();
        if (fswatch_start(g.workspace) < 0)
            send_log("warn", "fs watcher not started on %s: %s", g.workspace, strerror(errno));
    }
    if (g.proxy_port > 0 && (old_port != g.proxy_port || net_listener_fd() < 0)) {
        net_close();
        if (net_listen(g.proxy_port) < 0)
            send_log("warn", "net listener not started on 127.0.0.1:%d: %s", g.proxy_port, strerror(errno));
    }
    if (g.transparent_port > 0 && !net_transparent_listening() && net_listen_transparent(g.transparent_port) < 0)
        send_log("warn", "transparent listener not started on 127.0.0.1:%d: %s", g.transparent_port, strerror(errno));
    if (g.dns_address && !dns_started() && dns_start(g.dns_address) < 0)
        send_log("warn", "DNS answerer not started on %s:53: %s", g.dns_address, strerror(errno));
    g.configured = true;
}

static void on_control(const struct frame *f) {
    struct json_doc doc;
    const char *err = NULL;
    if (json_parse(&doc, (const char *)f->payload, f->len, &err) < 0) {
        protocol_error("bad CONTROL payload: %s", err);
        return;
    }
    const struct json_node *root = json_root(&doc);
    const char *type = json_cstr(json_get(&doc, root, "type"));
    if (!type) {
        send_log("warn", "CONTROL message without a type");
    } else if (strcmp(type, "config") == 0) {
        apply_config(&doc, root);
        send_ready();
    } else if (strcmp(type, "ping") == 0) {
        struct buf b;
        buf_init(&b);
        const struct json_node *id = json_get(&doc, root, "id");
        int64_t v;
        if (json_int(id, INT64_MIN / 2, INT64_MAX / 2, &v)) buf_printf(&b, "{\"type\":\"pong\",\"id\":%lld}", (long long)v);
        else if (json_cstr(id)) { buf_puts(&b, "{\"type\":\"pong\",\"id\":"); jw_cstr(&b, id->str); buf_puts(&b, "}"); }
        else buf_puts(&b, "{\"type\":\"pong\",\"id\":null}");
        send_json(0, FT_CONTROL, &b);
        buf_free(&b);
    } else if (strcmp(type, "shutdown") == 0) {
        static const char msg[] = "{\"type\":\"shutting_down\"}";
        send_frame(0, FT_CONTROL, 0, msg, sizeof msg - 1);
        log_msg("shutdown requested by the host");
        begin_stop(0);
    } else {
        send_log("warn", "unknown CONTROL type \"%.64s\"", type);
    }
    json_free(&doc);
}

void control_on_frame(const struct frame *f) {
    if (f->type == FT_ERROR) {
        log_msg("host sent ERROR: %.*s", (int)(f->len > 400 ? 400 : f->len), (const char *)f->payload);
        g.port_read_stopped = true;
        begin_stop(5);
        return;
    }
    if (g.phase == PH_HELLO) {
        if (f->type == FT_HELLO) on_hello(f);
        else protocol_error("%s frame before the host's HELLO", frame_type_name(f->type));
        return;
    }
    if (g.phase == PH_STOPPING) {
        /* No new work, but WINDOW and CLOSE still let the last output and EXITs through. */
        if (f->stream != 0 && f->type != FT_OPEN) stream_on_host_frame(f);
        return;
    }
    switch (f->type) {
    case FT_HELLO: break; /* repeats are ignored */
    case FT_CONTROL: on_control(f); break;
    case FT_EVENT: log_msg("ignored an EVENT frame from the host"); break;
    default: stream_on_host_frame(f); break;
    }
}
