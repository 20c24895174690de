/* capsem-agent: command line, the port, and the single-threaded poll() loop. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct agent g;

static int sigfd = -1;
static bool port_up = true;          /* port mode: false while the host side is not connected */
static int64_t port_recheck_ms = 0;

static void usage(FILE *f) {
    fprintf(f, "usage: " AGENT_NAME " (--port DEVICE | --connect SOCKET) [--workspace DIR]\n"
               "       [--proxy-port N] [--shell PATH] [--transparent-port N] [--dns ADDRESS]\n"
               "       " AGENT_NAME " --version\n");
}

static void power_off_or_exit(int code) {
    sync();
    if (g.is_pid1) {
        reboot(RB_POWER_OFF);
        log_msg("reboot(RB_POWER_OFF): %s", strerror(errno));
        for (;;) pause();
    }
    exit(code);
}

static int open_port(void) {
    int64_t until = now_mono_ms() + 10000;
    for (;;) {
        int fd;
        if (g.port_path) {
            fd = open(g.port_path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
            if (fd >= 0) return fd;
        } else {
            fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) return -1;
            struct sockaddr_un a = { .sun_family = AF_UNIX };
            if (strlen(g.connect_path) >= sizeof a.sun_path) {
                close(fd);
                errno = ENAMETOOLONG;
                return -1;
            }
            strcpy(a.sun_path, g.connect_path);
            if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
                set_nonblock(fd);
                return fd;
            }
            int e = errno;
            close(fd);
            errno = e;
        }
        if ((errno != ENOENT && errno != ECONNREFUSED) || now_mono_ms() > until) return -1;
        usleep(50000);
    }
}

/* The host went away (port mode): forget the session, keep the shell, wait for a new HELLO. */
static void session_reset(void) {
    log_msg("host disconnected; waiting for a new handshake");
    for (int i = 0; i < g.nstreams; i++) g.streams[i]->dead = true;
    stream_sweep();
    buf_clear(&g.outq);
    frame_decoder_free(&g.dec);
    frame_decoder_init(&g.dec);
    g.port_read_stopped = false;
    g.phase = PH_HELLO;
    g.hello_next_ms = 0;
}

static void host_gone(void) {
    if (g.port_path) {
        port_up = false;
        port_recheck_ms = now_mono_ms() + 100;
        if (g.phase == PH_RUNNING) session_reset();
        return;
    }
    log_msg("the host closed the connection");
    close(g.port_fd);
    g.port_fd = -1;
    buf_clear(&g.outq);
    begin_stop(g.phase == PH_STOPPING ? g.exit_code : 0);
}

static void flush_outq(void) {
    while (g.port_fd >= 0 && g.outq.len > 0) {
        ssize_t n = write(g.port_fd, buf_head(&g.outq), g.outq.len);
        if (n > 0) {
            buf_consume(&g.outq, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        log_msg("writing the port: %s", n < 0 ? strerror(errno) : "no progress");
        host_gone();
        return;
    }
}

/* A read of a virtio port returns at most one of its buffers (a page); readv, which the port runs
 * as one read per iovec until one comes back short, takes up to 16 in one system call, so a wakeup
 * of the loop can take in a stream window. On a socket (--connect) readv is an ordinary read.
 * The reads land in the frame decoder's own buffer: a copy through a scratch buffer cost the
 * agent's vCPU a pass over every byte the host sends. */
#define PORT_IOV_LEN 4096
#define PORT_READ_LEN 65536

static void read_port(void) {
    for (int round = 0; round < 16 && !g.port_read_stopped && g.port_fd >= 0; round++) {
        char *space = frame_decoder_space(&g.dec, PORT_READ_LEN);
        if (!space) {
            protocol_error("out of memory reading the port");
            return;
        }
        struct iovec iov[PORT_READ_LEN / PORT_IOV_LEN];
        for (size_t i = 0; i < sizeof iov / sizeof iov[0]; i++)
            iov[i] = (struct iovec){ space + i * PORT_IOV_LEN, PORT_IOV_LEN };
        ssize_t n = readv(g.port_fd, iov, (int)(sizeof iov / sizeof iov[0]));
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            if (n < 0) log_msg("reading the port: %s", strerror(errno));
            host_gone();
            return;
        }
        frame_decoder_commit(&g.dec, (size_t)n);
        struct frame f;
        int r;
        while (!g.port_read_stopped && (r = frame_decoder_next(&g.dec, &f)) != 0) {
            if (r < 0) {
                protocol_error("%s", g.dec.error);
                return;
            }
            control_on_frame(&f);
        }
        /* The WINDOWs those frames earned go out now, or the host waits for the rest of the drain. */
        if (g.outq.len > 0) flush_outq();
    }
}

static void reap_children(void) {
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {}
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (!exec_on_child_exit(pid, status) && !pty_on_child_exit(pid, status) && !g.is_pid1)
            log_msg("reaped pid %d", (int)pid);
    }
}

static void finish(void) {
    exec_terminate(SIGKILL);
    pty_terminate(SIGKILL);
    /* Let the last frames (shutting_down, ERROR, EXITs) reach the host. */
    int64_t until = now_mono_ms() + 1000;
    while (g.port_fd >= 0 && g.outq.len > 0 && now_mono_ms() < until) {
        struct pollfd p = { g.port_fd, POLLOUT, 0 };
        poll(&p, 1, 50);
        flush_outq();
    }
    log_msg("exiting (code %d)", g.exit_code);
    power_off_or_exit(g.exit_code);
}

enum slot_kind { SL_PORT, SL_SIG, SL_LISTEN, SL_FS, SL_SRC0, SL_SRC1, SL_SINK };
struct slot { enum slot_kind kind; struct stream *s; void (*on_ready)(int fd); };

static void loop(void) {
    struct pollfd *pfd = NULL;
    struct slot *slots = NULL;
    int cap = 0;
    for (;;) {
        int64_t now = now_mono_ms();
        if (g.phase == PH_HELLO && now >= g.hello_next_ms && port_up) {
            if (g.outq.len == 0) send_hello();
            g.hello_next_ms = now + 100;
        }
        if (g.phase == PH_STOPPING &&
            ((!exec_any_running() && !pty_running()) || now >= g.stop_deadline_ms))
            return;
        if (g.phase == PH_RUNNING) fswatch_flush_due(now);
        if (port_up) flush_outq();
        stream_sweep();

        if (!port_up && now >= port_recheck_ms) {
            struct pollfd p = { g.port_fd, POLLIN, 0 };
            if (poll(&p, 1, 0) >= 0 && !(p.revents & POLLHUP)) {
                port_up = true;
                log_msg("host connected");
            }
            port_recheck_ms = now + 100;
        }

        struct listener listeners[MAX_LISTENERS];
        int nlisteners = 0;
        if (g.phase == PH_RUNNING) {
            nlisteners = net_listeners(listeners, MAX_LISTENERS);
            nlisteners += dns_listeners(listeners + nlisteners, MAX_LISTENERS - nlisteners);
        }
        int need = 3 + nlisteners + 3 * g.nstreams;
        if (need > cap) {
            cap = need * 2;
            pfd = realloc(pfd, (size_t)cap * sizeof *pfd);
            slots = realloc(slots, (size_t)cap * sizeof *slots);
            if (!pfd || !slots) {
                log_msg("out of memory");
                power_off_or_exit(1);
            }
        }
        int n = 0;
#define ADD(fd_, ev_, kind_, s_) do { pfd[n] = (struct pollfd){ (fd_), (short)(ev_), 0 }; \
        slots[n] = (struct slot){ (kind_), (s_), NULL }; n++; } while (0)
        if (g.port_fd >= 0 && port_up) {
            short ev = (short)((g.port_read_stopped ? 0 : POLLIN) | (g.outq.len ? POLLOUT : 0));
            ADD(g.port_fd, ev, SL_PORT, NULL);
        }
        ADD(sigfd, POLLIN, SL_SIG, NULL);
        for (int i = 0; i < nlisteners; i++) {
            ADD(listeners[i].fd, POLLIN, SL_LISTEN, NULL);
            slots[n - 1].on_ready = listeners[i].on_ready;
        }
        if (fswatch_fd() >= 0) ADD(fswatch_fd(), POLLIN, SL_FS, NULL);
        for (int i = 0; i < g.nstreams; i++) {
            struct stream *s = g.streams[i];
            if (stream_wants_read(s, 0)) ADD(s->src_fd[0], POLLIN, SL_SRC0, s);
            if (stream_wants_read(s, 1)) ADD(s->src_fd[1], POLLIN, SL_SRC1, s);
            if (s->sink_fd >= 0 && s->sink_buf.len > 0) ADD(s->sink_fd, POLLOUT, SL_SINK, s);
        }
#undef ADD
        int64_t deadline = -1;
        if (g.phase == PH_HELLO) deadline = g.hello_next_ms;
        int64_t fs = g.phase == PH_RUNNING ? fswatch_deadline_ms() : -1;
        if (fs >= 0 && (deadline < 0 || fs < deadline)) deadline = fs;
        if (g.phase == PH_STOPPING && (deadline < 0 || g.stop_deadline_ms < deadline)) deadline = g.stop_deadline_ms;
        if (!port_up && (deadline < 0 || port_recheck_ms < deadline)) deadline = port_recheck_ms;
        int timeout = deadline < 0 ? -1 : deadline <= now ? 0 : (int)(deadline - now);

        int r = poll(pfd, (nfds_t)n, timeout);
        if (r < 0) {
            if (errno != EINTR) log_msg("poll: %s", strerror(errno));
            continue;
        }
        for (int i = 0; i < n; i++) {
            short re = pfd[i].revents;
            if (!re) continue;
            struct stream *s = slots[i].s;
            if (s && s->dead) continue;
            switch (slots[i].kind) {
            case SL_PORT:
                if (re & (POLLIN | POLLHUP | POLLERR)) {
                    if (g.port_path && (re & POLLHUP) && !(re & POLLIN)) host_gone();
                    else read_port();
                }
                if ((re & POLLOUT) && port_up) flush_outq();
                break;
            case SL_SIG: reap_children(); break;
            case SL_LISTEN: slots[i].on_ready(pfd[i].fd); break;
            case SL_FS: fswatch_on_readable(); break;
            case SL_SRC0:
            case SL_SRC1: {
                int which = slots[i].kind == SL_SRC1;
                if (s->src_fd[which] == pfd[i].fd && !s->src_eof[which]) stream_on_readable(s, which);
                break;
            }
            case SL_SINK:
                if (s->sink_fd == pfd[i].fd) stream_on_writable(s);
                break;
            }
        }
    }
}

int main(int argc, char **argv) {
    memset(&g, 0, sizeof g);
    g.port_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--version") == 0) {
            printf(AGENT_NAME " " AGENT_VERSION " protocol %d\n", PROTOCOL_VERSION);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (v && strcmp(a, "--port") == 0) {
            g.port_path = v; i++;
        } else if (v && strcmp(a, "--connect") == 0) {
            g.connect_path = v; i++;
        } else if (v && strcmp(a, "--workspace") == 0) {
            g.workspace = strdup(v); i++;
        } else if (v && strcmp(a, "--proxy-port") == 0) {
            char *end;
            long p = strtol(v, &end, 10);
            if (*end || p < 0 || p > 65535) {
                fprintf(stderr, AGENT_NAME ": bad --proxy-port %s\n", v);
                return 2;
            }
            g.proxy_port = (int)p; i++;
        } else if (v && strcmp(a, "--transparent-port") == 0) {
            char *end;
            long p = strtol(v, &end, 10);
            if (*end || p < 1 || p > 65535) {
                fprintf(stderr, AGENT_NAME ": bad --transparent-port %s\n", v);
                return 2;
            }
            g.transparent_port = (int)p; i++;
        } else if (v && strcmp(a, "--dns") == 0) {
            g.dns_address = v; i++;
        } else if (v && strcmp(a, "--shell") == 0) {
            g.shell = v; i++;
        } else {
            fprintf(stderr, AGENT_NAME ": unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!g.port_path == !g.connect_path) {
        usage(stderr);
        return 2;
    }
    g.is_pid1 = getpid() == 1;
    g.system_settings = g.port_path != NULL;
    g.start_boot_ms = now_boot_ms();
    g.next_guest_id = 2;
    g.phase = PH_HELLO;
    buf_init(&g.outq);
    frame_decoder_init(&g.dec);
    signal(SIGPIPE, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        log_msg("signalfd: %s", strerror(errno));
        power_off_or_exit(1);
    }
    env_set_base(NULL, NULL);
    g.port_fd = open_port();
    if (g.port_fd < 0) {
        log_msg("cannot open %s: %s", g.port_path ? g.port_path : g.connect_path, strerror(errno));
        power_off_or_exit(1);
    }
    log_msg(AGENT_VERSION " protocol %d on %s%s", PROTOCOL_VERSION,
            g.port_path ? g.port_path : g.connect_path, g.is_pid1 ? " (pid 1)" : "");
    loop();
    finish();
    return g.exit_code;
}
