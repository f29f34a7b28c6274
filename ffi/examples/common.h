/* Helpers shared by the mpquic C examples: clock, addresses, sockets. */
#ifndef MPQUIC_EXAMPLES_COMMON_H
#define MPQUIC_EXAMPLES_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mpquic.h>

/* The clock every mpquic time argument uses: CLOCK_MONOTONIC in ns. */
static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Parse "IP:PORT" or "[IPv6]:PORT" (numeric only). Returns 0 on success. */
static inline int parse_addr(const char *s, struct sockaddr_storage *out, socklen_t *len) {
    char host[256];
    const char *port;
    memset(out, 0, sizeof(*out));
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host)) return -1;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = 0;
        port = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof(host)) return -1;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = 0;
        port = colon + 1;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) return -1;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* Same family, address and port. */
static inline int addr_eq(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
    }
    return 0;
}

/* "IP:PORT" into buf. */
static inline const char *addr_str(const struct sockaddr_storage *a, char *buf, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a;
        inet_ntop(AF_INET, &x->sin_addr, ip, sizeof(ip));
        port = ntohs(x->sin_port);
        snprintf(buf, n, "%s:%u", ip, port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a;
        inet_ntop(AF_INET6, &x->sin6_addr, ip, sizeof(ip));
        port = ntohs(x->sin6_port);
        snprintf(buf, n, "[%s]:%u", ip, port);
    } else {
        snprintf(buf, n, "?");
    }
    return buf;
}

/* A non-blocking UDP socket bound to `addr`; the bound address (with the
 * kernel's port if 0 was asked) is written back. Returns the fd or -1. */
static inline int bind_udp(struct sockaddr_storage *addr, socklen_t *len) {
    int fd = socket(addr->ss_family, SOCK_DGRAM, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)addr, *len) < 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    *len = sizeof(*addr);
    getsockname(fd, (struct sockaddr *)addr, len);
    return fd;
}

/* Seconds from now until the connection's timer, for ev_timer (<0: none). */
static inline double timeout_after(const mpquic_conn *conn) {
    uint64_t t = mpquic_conn_timeout_ns(conn);
    if (t == UINT64_MAX) return -1.0;
    uint64_t now = now_ns();
    return t > now ? (double)(t - now) / 1e9 : 0.0;
}

#endif
