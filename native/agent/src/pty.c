/* The one interactive program on a pseudo-terminal (a login shell unless the OPEN names another
 * command), and which stream it is attached to. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static struct {
    pid_t pid;
    int master;
    bool exited, master_eof;
    int wstatus;
    struct stream *attached;
} sh = { 0, -1, false, false, 0, NULL };

int pty_master_fd(void) { return sh.master; }
bool pty_stream_is(const struct stream *s) { return sh.attached == s; }

static const char *pick_shell(void) {
    if (g.shell) return g.shell;
    if (access("/bin/bash", X_OK) == 0) return "/bin/bash";
    return "/bin/sh";
}

static void detach(struct stream *s) {
    s->src_fd[0] = s->sink_fd = -1;
    s->src_eof[0] = true;
    buf_clear(&s->sink_buf);
    if (sh.attached == s) sh.attached = NULL;
}

static void attach(struct stream *s) {
    s->borrowed_fds = true;
    s->src_fd[0] = s->sink_fd = sh.master;
    sh.attached = s;
}

/* argv NULL: the login shell. Otherwise argv[0] is looked up in the environment's PATH, which
 * holds the config's environment plus the OPEN's `env`. */
static int start_shell(char **argv, const struct json_doc *doc, const struct json_node *extra_env,
                       const char *term, struct winsize *ws) {
    int master;
    const char *shell = pick_shell();
    char **env = env_build(g.env, doc, extra_env, term);
    sigset_t all, old;
    sigfillset(&all);
    pid_t pid = forkpty(&master, NULL, NULL, ws);
    if (pid < 0) {
        env_free(env);
        return -1;
    }
    if (pid == 0) {
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, &old);
        signal(SIGPIPE, SIG_DFL);
        if (!g.workspace || chdir(g.workspace) < 0) {
            const char *home = getenv("HOME");
            if (!home || chdir(home) < 0) { int ignored = chdir("/"); (void)ignored; }
        }
        if (argv) {
            environ = env; /* execvp looks argv[0] up in this PATH */
            execvp(argv[0], argv);
            dprintf(2, AGENT_NAME ": cannot start %s: %s\r\n", argv[0], strerror(errno));
        } else {
            char *login[] = { (char *)shell, "-l", NULL };
            execve(shell, login, env);
            dprintf(2, AGENT_NAME ": cannot start the shell %s: %s\r\n", shell, strerror(errno));
        }
        _exit(127);
    }
    env_free(env);
    set_nonblock(master);
    set_cloexec(master);
    sh.pid = pid;
    sh.master = master;
    sh.exited = sh.master_eof = false;
    if (argv) log_msg("pty: started %s (pid %d)", argv[0], (int)pid);
    else log_msg("pty: started %s -l (pid %d)", shell, (int)pid);
    return 0;
}

static void fail_open(struct stream *s, const char *what, int err) {
    char line[200];
    int n = snprintf(line, sizeof line, AGENT_NAME ": %s: %s\r\n", what, strerror(err));
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    send_frame(s->id, FT_DATA, 0, line, (size_t)n);
    s->wstatus = 127 << 8;
    stream_send_exit(s);
    stream_send_close(s);
}

/* The OPEN's `argv`: absent is NULL with *ok set; present, a non-empty array of strings. */
static char **open_argv(const struct json_doc *doc, const struct json_node *msg, bool *ok) {
    const struct json_node *n = json_get(doc, msg, "argv");
    *ok = n == NULL;
    if (!n || n->type != JSON_ARRAY) return NULL;
    size_t argc = 0;
    for (const struct json_node *c = json_child(doc, n); c; c = json_next(doc, c), argc++)
        if (!json_cstr(c)) return NULL;
    char **argv = argc ? calloc(argc + 1, sizeof *argv) : NULL;
    if (!argv) return NULL;
    size_t i = 0;
    for (const struct json_node *c = json_child(doc, n); c; c = json_next(doc, c)) argv[i++] = c->str;
    *ok = true;
    return argv;
}

void pty_open(struct stream *s, const struct json_doc *doc, const struct json_node *msg) {
    int64_t cols = 80, rows = 24;
    json_int(json_get(doc, msg, "cols"), 1, 65535, &cols);
    json_int(json_get(doc, msg, "rows"), 1, 65535, &rows);
    const char *term = json_cstr(json_get(doc, msg, "term"));
    struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
    if (sh.attached) {
        struct stream *old = sh.attached;
        detach(old);
        stream_send_close(old);
    }
    if (sh.pid == 0) {
        bool ok;
        char **argv = open_argv(doc, msg, &ok);
        if (!ok) {
            fail_open(s, "pty argv must be a non-empty array of strings without NUL", EINVAL);
            return;
        }
        int started = start_shell(argv, doc, json_get(doc, msg, "env"), term ? term : "xterm-256color", &ws);
        int err = errno;
        free(argv);
        if (started < 0) {
            fail_open(s, "cannot open a pty", err);
            return;
        }
    } else {
        ioctl(sh.master, TIOCSWINSZ, &ws);
    }
    attach(s);
}

void pty_resize(struct stream *s, uint16_t cols, uint16_t rows) {
    if (sh.attached != s || sh.master < 0 || cols == 0 || rows == 0) return;
    struct winsize ws = { .ws_row = rows, .ws_col = cols };
    ioctl(sh.master, TIOCSWINSZ, &ws);
}

static void finish_shell(void) {
    struct stream *s = sh.attached;
    if (s) {
        s->wstatus = sh.wstatus;
        detach(s);
        stream_send_exit(s);
        stream_send_close(s);
    }
    if (sh.master >= 0) close(sh.master);
    log_msg("pty: shell (pid %d) ended", (int)sh.pid);
    sh.master = -1;
    sh.pid = 0;
    sh.exited = sh.master_eof = false;
}

void pty_on_eof(struct stream *s) {
    if (sh.attached != s) return;
    sh.master_eof = true;
    if (sh.exited) finish_shell();
}

bool pty_on_child_exit(pid_t pid, int status) {
    if (sh.pid == 0 || pid != sh.pid) return false;
    sh.exited = true;
    sh.wstatus = status;
    /* Wait for the output to drain (EIO on the master) while a stream can still take it. */
    if (sh.master_eof || !sh.attached) finish_shell();
    return true;
}

void pty_on_detach(struct stream *s) {
    if (sh.attached == s) sh.attached = NULL;
    if (sh.exited && !sh.attached) finish_shell();
}

void pty_terminate(int sig) {
    if (sh.pid > 0 && !sh.exited) {
        kill(-sh.pid, sig);
        kill(sh.pid, sig);
        if (sig == SIGTERM) kill(sh.pid, SIGHUP); /* interactive shells ignore SIGTERM */
    }
}

bool pty_running(void) { return sh.pid > 0 && !sh.exited; }
