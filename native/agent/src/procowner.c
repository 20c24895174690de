/* Which process owns a TCP socket: its inode from /proc/net/tcp, then /proc/<pid>/fd links. */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/net/tcp prints addresses as the raw 32-bit value in host order (%08X) and ports as
 * numbers (%04X): "0100007F:0C38" is 127.0.0.1:3128 on little-endian machines. */
static unsigned long find_inode(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport) {
    FILE *f = fopen("/proc/net/tcp", "re");
    if (!f) return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return 0; } /* header */
    while (fgets(line, sizeof line, f)) {
        unsigned la, lp, ra, rp, st;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %x:%x %x:%x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &la, &lp, &ra, &rp,
                   &st, &inode) != 6)
            continue;
        if (la == laddr && lp == lport && ra == raddr && rp == rport && inode != 0) {
            found = inode;
            break;
        }
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

int proc_find_tcp_owner(uint32_t local_addr_be, uint16_t local_port, uint32_t rem_addr_be,
                        uint16_t rem_port, char *name, size_t name_len) {
    name[0] = 0;
    unsigned long inode = find_inode(local_addr_be, local_port, rem_addr_be, rem_port);
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
