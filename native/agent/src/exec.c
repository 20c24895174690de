/* exec streams: one command with pipes for stdin, stdout and stderr. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void fail_start(struct stream *s, const char *what, const char *arg, int err) {
    char line[512];
    int n = snprintf(line, sizeof line, AGENT_NAME ": %s%s%.300s: %s\n", what, *arg ? " " : "", arg,
                     strerror(err));
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    send_frame(s->id, FT_DATA, 1, line, (size_t)n);
    s->send_window -= s->send_window >= (uint32_t)n ? (uint32_t)n : s->send_window;
    s->pid = -1; /* "a process" for the stream's end: it needs EXIT */
    s->exited = true;
    s->wstatus = 127 << 8;
    s->src_eof[0] = s->src_eof[1] = true;
    stream_send_exit(s);
    stream_send_close(s);
}

/* A command's bulk pipes hold a stream window rather than 64 KiB: with 64 KiB the writer and the
 * agent wake each other every few pages, each wakeup crossing vCPUs, and under TCG a 64 MiB exec
 * output went at 21-31 MiB/s where a 1 MiB pipe carried 86-307 (one guest, interleaved). Best
 * effort: a pipe that keeps its default size still works. */
static void widen_pipe(int fd) {
    if (fd >= 0) (void)fcntl(fd, F_SETPIPE_SZ, (int)STREAM_WINDOW);
}

static void close_pair(int p[2]) {
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
}

void exec_open(struct stream *s, const struct json_doc *doc, const struct json_node *msg) {
    const struct json_node *argv_n = json_get(doc, msg, "argv");
    if (!argv_n || argv_n->type != JSON_ARRAY || !json_child(doc, argv_n)) {
        fail_start(s, "exec needs a non-empty argv", "", EINVAL);
        return;
    }
    size_t argc = 0;
    for (const struct json_node *c = json_child(doc, argv_n); c; c = json_next(doc, c)) {
        if (!json_cstr(c)) {
            fail_start(s, "exec argv must hold strings without NUL", "", EINVAL);
            return;
        }
        argc++;
    }
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) {
        fail_start(s, "cannot run", "", ENOMEM);
        return;
    }
    size_t i = 0;
    for (const struct json_node *c = json_child(doc, argv_n); c; c = json_next(doc, c)) argv[i++] = c->str;
    const char *cwd = json_cstr(json_get(doc, msg, "cwd"));
    if (!cwd || !*cwd) cwd = g.workspace;
    const struct json_node *stdin_n = json_get(doc, msg, "stdin");
    bool want_stdin = stdin_n && stdin_n->type == JSON_BOOL && stdin_n->boolean;

    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, status[2] = { -1, -1 };
    if ((want_stdin ? pipe2(in, O_CLOEXEC) : 0) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0) {
        int e = errno;
        close_pair(in); close_pair(out); close_pair(err); close_pair(status);
        free(argv);
        fail_start(s, "cannot make pipes", "", e);
        return;
    }
    widen_pipe(in[0]);
    widen_pipe(out[0]);
    char **env = env_build(g.env, doc, json_get(doc, msg, "env"), NULL);
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        int code[2] = { 0, 0 };
        int devnull = want_stdin ? in[0] : open("/dev/null", O_RDONLY);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) {
            code[0] = 1; code[1] = errno;
        } else if (cwd && chdir(cwd) < 0) {
            code[0] = 2; code[1] = errno;
        } else {
            environ = env; /* execvp looks argv[0] up in this PATH */
            execvp(argv[0], argv);
            code[0] = 3; code[1] = errno;
        }
        ssize_t ignored = write(status[1], code, sizeof code);
        (void)ignored;
        _exit(127);
    }
    int fork_errno = errno;
    env_free(env);
    close(status[1]);
    if (in[0] >= 0) close(in[0]);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(status[0]);
        if (in[1] >= 0) close(in[1]);
        close(out[0]);
        close(err[0]);
        fail_start(s, "cannot fork for", argv[0], fork_errno);
        free(argv);
        return;
    }
    int code[2];
    ssize_t n;
    do n = read(status[0], code, sizeof code); while (n < 0 && errno == EINTR);
    close(status[0]);
    setpgid(pid, pid); /* also here, so a kill(-pid) right after fork cannot miss */
    s->pid = pid;
    if (n == (ssize_t)sizeof code) {
        /* It never ran: its pipes carry nothing, and the reaper finds no stream for it. */
        close(out[0]);
        close(err[0]);
        if (in[1] >= 0) close(in[1]);
        const char *what = code[0] == 2 ? "cannot change directory to" : "cannot run";
        fail_start(s, what, code[0] == 2 ? cwd : argv[0], code[1]);
        free(argv);
        return;
    }
    free(argv);
    s->src_fd[0] = out[0];
    s->src_fd[1] = err[0];
    s->sink_fd = in[1];
    set_nonblock(out[0]);
    set_nonblock(err[0]);
    if (in[1] >= 0) set_nonblock(in[1]);
}

void exec_check_done(struct stream *s) {
    if (s->exited && s->src_eof[0] && s->src_eof[1] && !s->exit_sent) {
        stream_send_exit(s);
        stream_send_close(s);
    }
}

bool exec_on_child_exit(pid_t pid, int status) {
    for (int i = 0; i < g.nstreams; i++) {
        struct stream *s = g.streams[i];
        if (s->kind != SK_EXEC || s->pid != pid || s->exited || s->dead) continue;
        s->exited = true;
        s->wstatus = status;
        exec_check_done(s);
        return true;
    }
    return false;
}

void exec_terminate(int sig) {
    for (int i = 0; i < g.nstreams; i++) {
        struct stream *s = g.streams[i];
        if (s->kind == SK_EXEC && s->pid > 0 && !s->exited) kill(-s->pid, sig);
    }
}

bool exec_any_running(void) {
    for (int i = 0; i < g.nstreams; i++) {
        struct stream *s = g.streams[i];
        /* running, or ended with output still draining towards its EXIT */
        if (s->kind == SK_EXEC && s->pid > 0 && !s->dead && (!s->exited || !s->exit_sent)) return true;
    }
    return false;
}
