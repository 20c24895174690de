/* Which process owns a socket: its inode from /proc/net/{tcp,udp}[6], then /proc/<pid>/fd links. */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An address as the IPv6 tables hold it: IPv4 as ::ffff:a.b.c.d, so one comparison serves both. */
struct endpoint {
    uint8_t addr[16];
    uint16_t port;
};

static const uint8_t V4_MAPPED[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool endpoint_of(const struct sockaddr *sa, struct endpoint *e) {
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        memcpy(e->addr, V4_MAPPED, 12);
        memcpy(e->addr + 12, &a->sin_addr, 4);
        e->port = ntohs(a->sin_port);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        memcpy(e->addr, &a->sin6_addr, 16);
        e->port = ntohs(a->sin6_port);
        return true;
    }
    return false;
}

static bool unspecified(const uint8_t *addr) {
    static const uint8_t zero[16];
    return memcmp(addr, zero, 16) == 0 || (memcmp(addr, V4_MAPPED, 12) == 0 && memcmp(addr + 12, zero, 4) == 0);
}

/* The tables print each 32-bit word of an address as its in-memory value (%08X): "0100007F" is
 * 127.0.0.1 on little-endian machines. Copying the parsed word back to memory undoes it. */
static bool parse_address(const char *hex, size_t words, uint8_t out[16]) {
    if (strlen(hex) != words * 8) return false;
    uint8_t raw[16];
    for (size_t i = 0; i < words; i++) {
        char part[9];
        memcpy(part, hex + i * 8, 8);
        part[8] = 0;
        char *end;
        uint32_t w = (uint32_t)strtoul(part, &end, 16);
        if (*end) return false;
        memcpy(raw + i * 4, &w, 4);
    }
    if (words == 1) {
        memcpy(out, V4_MAPPED, 12);
        memcpy(out + 12, raw, 4);
    } else {
        memcpy(out, raw, 16);
    }
    return true;
}

/* A UDP socket that sends with sendto() is bound to the wildcard address and connected nowhere:
 * for UDP the local port decides, with the address when the socket has one. */
static unsigned long find_inode(const char *table, size_t words, enum owner_proto proto, const struct endpoint *local,
                                const struct endpoint *remote) {
    FILE *f = fopen(table, "re");
    if (!f) return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return 0; } /* header */
    while (fgets(line, sizeof line, f)) {
        char la[33], ra[33];
        unsigned lp, rp;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %32[0-9A-Fa-f]:%x %32[0-9A-Fa-f]:%x %*x %*x:%*x %*x:%*x %*x %*u %*u %lu", la, &lp, ra,
                   &rp, &inode) != 5 || inode == 0)
            continue;
        struct endpoint l, r;
        if (!parse_address(la, words, l.addr) || !parse_address(ra, words, r.addr)) continue;
        if (lp != local->port) continue;
        if (proto == OWNER_UDP) {
            if (!unspecified(l.addr) && memcmp(l.addr, local->addr, 16) != 0) continue;
        } else if (memcmp(l.addr, local->addr, 16) != 0 || rp != remote->port || memcmp(r.addr, remote->addr, 16) != 0) {
            continue;
        }
        found = inode;
        break;
    }
    fclose(f);
    return found;
}

static pid_t find_pid(unsigned long inode) {
    char want[64];
    int wl = snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    pid_t self = getpid();
    pid_t found = -1;
    struct dirent *de;
    while (found < 0 && (de = readdir(proc))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/fd", pid);
        DIR *fds = opendir(path);
        if (!fds) continue;
        struct dirent *fe;
        while ((fe = readdir(fds))) {
            if (fe->d_name[0] == '.') continue;
            char link[320], target[64];
            snprintf(link, sizeof link, "/proc/%ld/fd/%s", pid, fe->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n == wl && memcmp(target, want, (size_t)wl) == 0) {
                found = (pid_t)pid;
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return found;
}

int proc_find_owner(enum owner_proto proto, const struct sockaddr *local, const struct sockaddr *remote,
                    char *name, size_t name_len) {
    name[0] = 0;
    struct endpoint l, r = { { 0 }, 0 };
    if (!endpoint_of(local, &l) || (remote && !endpoint_of(remote, &r))) return -1;
    if (proto == OWNER_TCP && !remote) return -1;
    /* An IPv4 connection may belong to an IPv6 socket (dual-stack, ::ffff:a.b.c.d). */
    bool v4 = local->sa_family == AF_INET;
    const char *v4_table = proto == OWNER_TCP ? "/proc/net/tcp" : "/proc/net/udp";
    const char *v6_table = proto == OWNER_TCP ? "/proc/net/tcp6" : "/proc/net/udp6";
    unsigned long inode = v4 ? find_inode(v4_table, 1, proto, &l, &r) : 0;
    if (!inode) inode = find_inode(v6_table, 4, proto, &l, &r);
    if (!inode) return -1;
    pid_t pid = find_pid(inode);
    if (pid <= 0) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, name_len - 1);
        close(fd);
        if (n < 0) n = 0;
        while (n > 0 && (name[n - 1] == '\n')) n--;
        name[n] = 0;
    }
    return (int)pid;
}
