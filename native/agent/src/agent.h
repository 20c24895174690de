/* The agent's shared state: the port, the stream table, and the duties' entry points. */
#ifndef CAPSEM_AGENT_H
#define CAPSEM_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "frame.h"
#include "json.h"
#include "util.h"

/* Bytes of DATA a sender may have outstanding on a stream. The guest's is small, so what a stream
 * holds in host memory stays bounded; the host's is larger, because a download into the guest under
 * TCG is bound by window / round trip: 1 MiB held plain HTTP at 121-138 MiB/s, 4 MiB let it
 * reach 160-184, and 8 MiB gave no more. */
#define STREAM_WINDOW 1048576u
#define RECEIVE_WINDOW 4194304u
#define OUTQ_SOFT_LIMIT (1024 * 1024) /* stop reading streams while this much waits for the port */

/* SK_NET: a TCP connection (to the proxy listener, redirected, or to the DNS answerer over TCP).
 * SK_DNS_UDP: one datagram query; the answer goes back to `peer` from the answerer's socket. */
enum stream_kind { SK_PTY, SK_EXEC, SK_NET, SK_DNS_UDP };

struct stream {
    uint32_t id;
    enum stream_kind kind;
    /* guest -> host: up to two sources (flags 0 and 1) */
    int src_fd[2];
    bool src_eof[2];
    /* host -> guest */
    int sink_fd;
    struct buf sink_buf;
    bool sink_shut_pending;   /* host sent CLOSE: end the sink once sink_buf is written */
    bool borrowed_fds;        /* pty: the fds belong to the shell, not to the stream */
    uint32_t send_window;     /* bytes we may still send */
    uint32_t recv_window;     /* bytes the host may still send */
    uint32_t recv_consumed;   /* consumed bytes not yet granted back */
    bool host_closed, guest_closed, exit_sent, dead;
    pid_t pid;                /* exec: the process; 0 when none */
    bool exited;
    int wstatus;
    struct sockaddr_storage peer; /* SK_DNS_UDP: the client the answer goes to */
    socklen_t peer_len;
};

enum agent_phase { PH_HELLO, PH_RUNNING, PH_STOPPING };

struct agent {
    /* options */
    const char *port_path;
    const char *connect_path;
    const char *shell;
    char *workspace;
    int proxy_port;
    int transparent_port;    /* 0: no transparent listener (init's redirect rules name this port) */
    const char *dns_address; /* NULL: no DNS answerer (init points resolv.conf at this address) */
    bool is_pid1;
    bool system_settings; /* clock and hostname: only in the VM (--port) */

    int port_fd;
    bool port_read_stopped; /* after a protocol error */
    struct frame_decoder dec;
    struct buf outq;

    enum agent_phase phase;
    int64_t hello_next_ms;
    int64_t start_boot_ms;
    bool configured;
    int exit_code;
    int64_t stop_deadline_ms;

    char **env; /* NULL-terminated, the environment every child starts from */

    struct stream **streams;
    int nstreams, cap_streams;
    uint32_t next_guest_id;
};

extern struct agent g;

/* mux.c: the stream table, frames out, flow control */
void send_frame(uint32_t stream, uint8_t type, uint8_t flags, const void *p, size_t n);
void send_json(uint32_t stream, uint8_t type, struct buf *json);
void send_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void protocol_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct stream *stream_new(uint32_t id, enum stream_kind kind);
struct stream *stream_find(uint32_t id);
void stream_send_close(struct stream *s);
void stream_send_reset(struct stream *s, const char *reason);
void stream_send_exit(struct stream *s);
void stream_release_fds(struct stream *s);
void stream_sweep(void);
bool stream_wants_read(const struct stream *s, int which);
void stream_on_readable(struct stream *s, int which);
void stream_on_writable(struct stream *s);
void stream_on_host_frame(const struct frame *f);

/* control.c */
void control_on_frame(const struct frame *f);
void send_hello(void);
void begin_stop(int code);

/* env.c */
char **env_build(char *const *base, const struct json_doc *doc, const struct json_node *extra,
                 const char *term);
void env_free(char **env);
void env_set_base(const struct json_doc *doc, const struct json_node *cfg_env);

/* pty.c */
void pty_open(struct stream *s, const struct json_doc *doc, const struct json_node *msg);
void pty_resize(struct stream *s, uint16_t cols, uint16_t rows);
void pty_on_detach(struct stream *s);
bool pty_on_child_exit(pid_t pid, int status);
void pty_on_eof(struct stream *s);
void pty_terminate(int sig);
int pty_master_fd(void);
bool pty_stream_is(const struct stream *s);
bool pty_running(void);

/* exec.c */
void exec_open(struct stream *s, const struct json_doc *doc, const struct json_node *msg);
bool exec_on_child_exit(pid_t pid, int status);
void exec_check_done(struct stream *s);
void exec_terminate(int sig);
bool exec_any_running(void);

/* A listening or datagram socket the poll loop watches while the agent runs. */
struct listener {
    int fd;
    void (*on_ready)(int fd);
};
#define MAX_LISTENERS 8

/* net.c */
int net_listen(int port);
void net_close(void);
int net_listener_fd(void);
int net_listen_transparent(int port);
bool net_transparent_listening(void);
int net_listeners(struct listener *out, int max);
struct stream *net_stream_for(int fd, const char *kind, const struct sockaddr *dst);

/* dns.c */
int dns_start(const char *address);
bool dns_started(void);
int dns_listeners(struct listener *out, int max);
void dns_on_host_data(struct stream *s);

/* netopen.c: the OPEN payloads the guest sends for net and dns streams */
int open_payload(struct buf *b, const char *kind, const char *process, int pid,
                 const struct sockaddr *dst, const char *transport);

/* procowner.c */
enum owner_proto { OWNER_TCP, OWNER_UDP };
/* The process owning the socket whose own address is `local` and whose peer is `remote` (for
 * UDP, any peer). Returns the pid (its name in `name`), or -1. */
int proc_find_owner(enum owner_proto proto, const struct sockaddr *local, const struct sockaddr *remote,
                    char *name, size_t name_len);

/* fswatch.c */
int fswatch_start(const char *root);
void fswatch_stop(void);
int fswatch_fd(void);
void fswatch_on_readable(void);
int64_t fswatch_deadline_ms(void); /* -1 when nothing waits */
void fswatch_flush_due(int64_t now);

#endif
