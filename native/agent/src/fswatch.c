/* The workspace watcher: recursive inotify, 100 ms debounce, coalescing, EVENT frames. */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEBOUNCE_MS 100   /* send once the workspace has been quiet this long... */
#define MAX_DELAY_MS 1000 /* ...or this long after the batch's first change */
#define EVENTS_PER_FRAME 256
#define MAX_PENDING 100000
#define MAX_DEPTH 64
#define HASH_BUCKETS 4096

enum fs_action { FA_NONE, FA_CREATED, FA_MODIFIED, FA_DELETED };

struct watch { int wd; char *rel; }; /* rel: "" for the root; NULL once removed */
struct pending { char *path; enum fs_action action; bool is_dir; int64_t ts_real; int next; };

static struct {
    int fd;
    char *root;
    struct watch *w; int nw, capw;       /* sorted by wd: the kernel hands out rising wds */
    struct pending *p; int np, capp;
    int buckets[HASH_BUCKETS];
    int64_t first_mono;                   /* when the oldest pending change arrived */
    int64_t last_mono;                    /* when the newest one did */
    bool overflow_logged;
} fw = { .fd = -1 };

int fswatch_fd(void) { return fw.fd; }

static const uint32_t WATCH_MASK = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE |
                                   IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR |
                                   IN_DONT_FOLLOW | IN_EXCL_UNLINK;

static struct watch *watch_find(int wd) {
    int lo = 0, hi = fw.nw - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (fw.w[mid].wd == wd) return &fw.w[mid];
        if (fw.w[mid].wd < wd) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

static void watch_put(int wd, const char *rel) {
    struct watch *w = watch_find(wd);
    char *copy = strdup(rel);
    if (!copy) return;
    if (w) { /* the same directory again (or a recycled wd): take the new path */
        free(w->rel);
        w->rel = copy;
        return;
    }
    if (fw.nw == fw.capw) {
        int cap = fw.capw ? fw.capw * 2 : 64;
        struct watch *n = realloc(fw.w, (size_t)cap * sizeof *n);
        if (!n) { free(copy); return; }
        fw.w = n;
        fw.capw = cap;
    }
    int i = fw.nw;
    while (i > 0 && fw.w[i - 1].wd > wd) { fw.w[i] = fw.w[i - 1]; i--; }
    fw.w[i].wd = wd;
    fw.w[i].rel = copy;
    fw.nw++;
}

static void watch_drop(int wd) {
    struct watch *w = watch_find(wd);
    if (!w) return;
    free(w->rel);
    int i = (int)(w - fw.w);
    memmove(&fw.w[i], &fw.w[i + 1], (size_t)(fw.nw - i - 1) * sizeof *fw.w);
    fw.nw--;
}

static int join(char *out, size_t n, const char *a, const char *b) {
    int r = *a ? snprintf(out, n, "%s/%s", a, b) : snprintf(out, n, "%s", b);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

static uint32_t hash_path(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void note(const char *path, enum fs_action a, bool is_dir) {
    if (!*path) return;
    uint32_t b = hash_path(path) % HASH_BUCKETS;
    struct pending *e = NULL;
    for (int i = fw.buckets[b]; i >= 0; i = fw.p[i].next)
        if (strcmp(fw.p[i].path, path) == 0) { e = &fw.p[i]; break; }
    int64_t now = now_real_ms();
    fw.last_mono = now_mono_ms();
    if (e) {
        /* One event per path per window: created+modified is created, created+deleted is
         * dropped, anything+deleted is deleted, deleted+created is modified. */
        switch (e->action) {
        case FA_NONE:
        case FA_CREATED: e->action = a == FA_DELETED ? FA_NONE : FA_CREATED; break;
        case FA_MODIFIED:
        case FA_DELETED: e->action = a == FA_DELETED ? FA_DELETED : FA_MODIFIED; break;
        }
        e->is_dir = is_dir;
        e->ts_real = now;
        return;
    }
    if (fw.np >= MAX_PENDING) {
        if (!fw.overflow_logged) send_log("warn", "fs watcher: over %d pending changes, some dropped", MAX_PENDING);
        fw.overflow_logged = true;
        return;
    }
    if (fw.np == fw.capp) {
        int cap = fw.capp ? fw.capp * 2 : 64;
        struct pending *n = realloc(fw.p, (size_t)cap * sizeof *n);
        if (!n) return;
        fw.p = n;
        fw.capp = cap;
    }
    char *copy = strdup(path);
    if (!copy) return;
    if (fw.np == 0) fw.first_mono = now_mono_ms();
    fw.p[fw.np] = (struct pending){ copy, a, is_dir, now, fw.buckets[b] };
    fw.buckets[b] = fw.np++;
}

/* Watches dir (relative rel) and everything below; with report, notes what is already inside
 * as created (it appeared before the watch could see it). */
static void add_tree(const char *rel, int depth, bool report) {
    char full[PATH_MAX];
    if (join(full, sizeof full, fw.root, rel) < 0 && *rel) return;
    if (!*rel) snprintf(full, sizeof full, "%s", fw.root);
    int wd = inotify_add_watch(fw.fd, full, WATCH_MASK);
    if (wd < 0) {
        if (errno == ENOSPC) send_log("warn", "fs watcher: out of inotify watches at %s", rel);
        return;
    }
    watch_put(wd, rel);
    if (depth >= MAX_DEPTH) return;
    DIR *d = opendir(full);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char child[PATH_MAX];
        if (join(child, sizeof child, rel, de->d_name) < 0) continue;
        bool is_dir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN) {
            char cf[PATH_MAX];
            struct stat st;
            if (join(cf, sizeof cf, fw.root, child) == 0 && lstat(cf, &st) == 0) is_dir = S_ISDIR(st.st_mode);
        }
        if (report) note(child, FA_CREATED, is_dir);
        if (is_dir) add_tree(child, depth + 1, report);
    }
    closedir(d);
}

static void drop_tree(const char *rel) {
    size_t n = strlen(rel);
    for (int i = fw.nw - 1; i >= 0; i--) {
        const char *r = fw.w[i].rel;
        if (strncmp(r, rel, n) == 0 && (r[n] == 0 || r[n] == '/')) {
            inotify_rm_watch(fw.fd, fw.w[i].wd);
            watch_drop(fw.w[i].wd);
        }
    }
}

int fswatch_start(const char *root) {
    fw.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fw.fd < 0) return -1;
    fw.root = strdup(root);
    while (fw.root && strlen(fw.root) > 1 && fw.root[strlen(fw.root) - 1] == '/') fw.root[strlen(fw.root) - 1] = 0;
    for (int i = 0; i < HASH_BUCKETS; i++) fw.buckets[i] = -1;
    struct stat st;
    if (!fw.root || stat(fw.root, &st) < 0 || !S_ISDIR(st.st_mode)) {
        int e = fw.root ? (errno ? errno : ENOTDIR) : ENOMEM;
        fswatch_stop();
        errno = e;
        return -1;
    }
    add_tree("", 0, false);
    log_msg("fs: watching %s (%d directories)", fw.root, fw.nw);
    return 0;
}

static void clear_pending(void) {
    for (int i = 0; i < fw.np; i++) free(fw.p[i].path);
    fw.np = 0;
    for (int i = 0; i < HASH_BUCKETS; i++) fw.buckets[i] = -1;
}

void fswatch_stop(void) {
    if (fw.fd >= 0) close(fw.fd);
    fw.fd = -1;
    for (int i = 0; i < fw.nw; i++) free(fw.w[i].rel);
    fw.nw = 0;
    clear_pending();
    free(fw.root);
    fw.root = NULL;
}

void fswatch_on_readable(void) {
    char ev[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(fw.fd, ev, sizeof ev);
        if (n <= 0) return;
        for (char *p = ev; p < ev + n;) {
            struct inotify_event *ie = (struct inotify_event *)p;
            p += sizeof *ie + ie->len;
            if (ie->mask & IN_Q_OVERFLOW) {
                send_log("warn", "fs watcher: the kernel's event queue overflowed; some changes were lost");
                continue;
            }
            if (ie->mask & IN_IGNORED) { watch_drop(ie->wd); continue; }
            struct watch *w = watch_find(ie->wd);
            if (!w) continue;
            if (ie->mask & IN_DELETE_SELF) continue; /* the parent reports the deletion */
            if (ie->len == 0 || !ie->name[0]) continue;
            char rel[PATH_MAX];
            if (join(rel, sizeof rel, w->rel, ie->name) < 0) continue;
            bool is_dir = ie->mask & IN_ISDIR;
            if (ie->mask & (IN_CREATE | IN_MOVED_TO)) {
                note(rel, FA_CREATED, is_dir);
                if (is_dir) add_tree(rel, 1, true);
            } else if (ie->mask & (IN_DELETE | IN_MOVED_FROM)) {
                note(rel, FA_DELETED, is_dir);
                if (is_dir && (ie->mask & IN_MOVED_FROM)) drop_tree(rel);
            } else if (ie->mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB)) {
                if (is_dir && (ie->mask & IN_ATTRIB)) continue;
                note(rel, FA_MODIFIED, is_dir);
            }
        }
    }
}

int64_t fswatch_deadline_ms(void) {
    if (fw.np == 0) return -1;
    int64_t quiet = fw.last_mono + DEBOUNCE_MS, cap = fw.first_mono + MAX_DELAY_MS;
    return quiet < cap ? quiet : cap;
}

static void send_batch(struct buf *b, int count) {
    if (count == 0) return;
    buf_puts(b, "]}");
    send_json(0, FT_EVENT, b);
}

void fswatch_flush_due(int64_t now) {
    if (fw.np == 0 || now < fswatch_deadline_ms()) return;
    static const char head[] = "{\"type\":\"fs\",\"events\":[";
    struct buf frame, ev;
    buf_init(&frame);
    buf_init(&ev);
    buf_puts(&frame, head);
    int count = 0;
    for (int i = 0; i < fw.np; i++) {
        struct pending *e = &fw.p[i];
        if (e->action == FA_NONE) continue;
        static const char *names[] = { "", "created", "modified", "deleted" };
        buf_clear(&ev);
        buf_printf(&ev, "{\"action\":\"%s\",\"path\":", names[e->action]);
        jw_cstr(&ev, e->path);
        char full[PATH_MAX];
        struct stat st;
        if (e->action != FA_DELETED && join(full, sizeof full, fw.root, e->path) == 0 && lstat(full, &st) == 0)
            buf_printf(&ev, ",\"size\":%lld", (long long)st.st_size);
        else
            buf_puts(&ev, ",\"size\":null");
        buf_printf(&ev, ",\"is_dir\":%s,\"ts_ms\":%lld}", e->is_dir ? "true" : "false", (long long)e->ts_real);
        if (count == EVENTS_PER_FRAME || frame.len + ev.len + 3 > FRAME_MAX_PAYLOAD) {
            send_batch(&frame, count);
            buf_clear(&frame);
            buf_puts(&frame, head);
            count = 0;
        }
        if (count > 0) buf_puts(&frame, ",");
        buf_append(&frame, buf_head(&ev), ev.len);
        count++;
    }
    send_batch(&frame, count);
    buf_free(&frame);
    buf_free(&ev);
    clear_pending();
    fw.overflow_logged = false;
}
