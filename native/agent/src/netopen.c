/* The OPEN payloads the guest sends for its streams (PROTOCOL.md, "net" and "dns"). Pure, so
 * test_codec checks them against the JSON reader the host's side mirrors. */
#define _GNU_SOURCE
#include "agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>

/* {"kind":K,"process":P|null,"pid":N|null[,"dst":{"address":A,"port":N}][,"transport":T]} */
int open_payload(struct buf *b, const char *kind, const char *process, int pid,
                 const struct sockaddr *dst, const char *transport) {
    int r = buf_puts(b, "{\"kind\":");
    r |= jw_cstr(b, kind);
    r |= buf_puts(b, ",\"process\":");
    if (pid > 0 && process && process[0]) r |= jw_cstr(b, process);
    else r |= buf_puts(b, "null");
    if (pid > 0) r |= buf_printf(b, ",\"pid\":%d", pid);
    else r |= buf_puts(b, ",\"pid\":null");
    if (dst) {
        char text[INET6_ADDRSTRLEN];
        unsigned port;
        if (dst->sa_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)dst;
            if (!inet_ntop(AF_INET, &a->sin_addr, text, sizeof text)) return -1;
            port = ntohs(a->sin_port);
        } else if (dst->sa_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)dst;
            if (!inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text)) return -1;
            port = ntohs(a->sin6_port);
        } else {
            return -1;
        }
        r |= buf_puts(b, ",\"dst\":{\"address\":");
        r |= jw_cstr(b, text);
        r |= buf_printf(b, ",\"port\":%u}", port);
    }
    if (transport) {
        r |= buf_puts(b, ",\"transport\":");
        r |= jw_cstr(b, transport);
    }
    r |= buf_puts(b, "}");
    return r ? -1 : 0;
}
