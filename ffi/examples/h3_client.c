/*
 * mpquic-h3-client: download one URL over HTTP/3 with mpquic and libev,
 * optionally over several local addresses at once (multipath), then print
 * per-path statistics.
 *
 *   h3_client [-l IP:PORT]... [-o FILE] [-c CC] [-s SCHED] [-A CAFILE | -k]
 *             [-t SECONDS] https://HOST:PORT/PATH
 *
 * The first -l address carries the handshake; each further one becomes an
 * extra path (multipath is enabled when more than one is given). The body
 * goes to FILE (default: stdout); status and statistics go to stderr. Exit
 * status: 0 on a complete 2xx download, 1 otherwise.
 */
#include <ev.h>
#include <getopt.h>

#include "common.h"

#define MAX_LOCALS 4
#define MAX_DATAGRAM 1500

struct sock {
    int fd;
    int64_t path_id; /* -1: no path yet; -2: gave up */
    struct sockaddr_storage addr;
    socklen_t len;
    ev_io watcher;
};

struct client {
    struct ev_loop *loop;
    struct sock socks[MAX_LOCALS];
    int nsocks;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    mpquic_conn *conn;
    mpquic_h3_fetch *fetch;
    ev_timer timer;
    ev_timer deadline;
    const char *authority;
    const char *path;
    FILE *out;
    int status;
    int finished;
    int failed;
    uint64_t body_bytes;
    uint64_t started_ns;
};

static void flush_egress(struct client *c);

static void arm_timer(struct client *c) {
    double t = timeout_after(c->conn);
    ev_timer_stop(c->loop, &c->timer);
    if (t >= 0) {
        ev_timer_set(&c->timer, t, 0.);
        ev_timer_start(c->loop, &c->timer);
    }
}

/* Open a path from every extra local address (multipath). The server
 * must first issue connection IDs for the new path IDs, so
 * MPQUIC_ERROR_PATH_LIMIT means "try again after the next datagrams". */
static void probe_paths(struct client *c) {
    if (!mpquic_conn_is_established(c->conn) || !mpquic_conn_is_multipath(c->conn)) return;
    for (int i = 1; i < c->nsocks; i++) {
        struct sock *s = &c->socks[i];
        if (s->path_id != -1) continue;
        int64_t id = mpquic_conn_probe_path(c->conn, (struct sockaddr *)&s->addr, s->len,
                                            (struct sockaddr *)&c->peer, c->peer_len, now_ns());
        char a[64];
        if (id == MPQUIC_ERROR_PATH_LIMIT) return;
        s->path_id = id < 0 ? -2 : id;
        if (id < 0)
            fprintf(stderr, "probe_path from %s failed: %lld\n", addr_str(&s->addr, a, sizeof a), (long long)id);
        else
            fprintf(stderr, "* path %lld from %s\n", (long long)id, addr_str(&s->addr, a, sizeof a));
    }
}

static void close_conn(struct client *c, uint64_t code) {
    mpquic_conn_close(c->conn, true, code, NULL, 0, now_ns());
}

/* The GET itself is mpquic's fetch state machine (the one its Rust client
 * uses): it sends the request once the connection is established and hands
 * back the status, body bytes and the end of the response. */
static void process_h3(struct client *c) {
    if (!mpquic_conn_is_established(c->conn)) return;
    if (!c->finished) probe_paths(c);
    for (;;) {
        uint8_t buf[16384];
        struct mpquic_h3_fetch_event ev;
        int rc = mpquic_h3_fetch_poll(c->fetch, c->conn, buf, sizeof(buf), &ev);
        if (rc == MPQUIC_ERROR_DONE) break;
        if (rc < 0) {
            if (c->finished) break;
            fprintf(stderr, "HTTP/3 fetch failed: %d\n", rc);
            c->failed = 1;
            close_conn(c, 0x10c); /* H3_REQUEST_CANCELLED */
            break;
        }
        switch (ev.kind) {
        case MPQUIC_H3_FETCH_RESPONSE:
            c->status = mpquic_h3_fetch_status(c->fetch, ev.request);
            fprintf(stderr, "< :status: %d\n", c->status);
            break;
        case MPQUIC_H3_FETCH_BODY:
            fwrite(buf, 1, ev.len, c->out);
            c->body_bytes += ev.len;
            break;
        case MPQUIC_H3_FETCH_DONE:
            c->finished = 1;
            close_conn(c, 0x100); /* H3_NO_ERROR */
            break;
        }
    }
}

static void path_events(struct client *c) {
    struct mpquic_path_event ev;
    while (mpquic_conn_path_event_next(c->conn, &ev) == 0) {
        static const char *names[] = {"new", "validated", "failed validation", "abandoned", "status changed"};
        fprintf(stderr, "* path %u: %s\n", ev.path_id, names[ev.kind]);
    }
}

static void flush_egress(struct client *c) {
    uint8_t out[MAX_DATAGRAM];
    struct mpquic_send_info info;
    for (;;) {
        ssize_t n = mpquic_conn_send(c->conn, out, sizeof(out), &info, now_ns());
        if (n <= 0) break;
        /* Send from the socket bound to the address the path uses. Pacing
         * (info.at_ns) is not honoured by this example. */
        struct sock *s = &c->socks[0];
        for (int i = 0; i < c->nsocks; i++)
            if (addr_eq(&c->socks[i].addr, &info.from)) s = &c->socks[i];
        if (sendto(s->fd, out, (size_t)n, 0, (struct sockaddr *)&info.to, info.to_len) < 0 &&
            errno != EAGAIN && errno != EWOULDBLOCK)
            perror("sendto");
    }
    if (mpquic_conn_is_closed(c->conn)) {
        ev_break(c->loop, EVBREAK_ALL);
        return;
    }
    arm_timer(c);
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    struct client *c = w->data;
    struct sock *s = NULL;
    for (int i = 0; i < c->nsocks; i++)
        if (&c->socks[i].watcher == w) s = &c->socks[i];
    if (!s) return;
    uint8_t buf[65536];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof(from);
        ssize_t n = recvfrom(s->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &from_len);
        if (n < 0) break;
        /* ecn 0: this example does not read the datagram's ECN bits (IP_RECVTOS). */
        struct mpquic_recv_info ri = {(struct sockaddr *)&from, from_len, (struct sockaddr *)&s->addr, s->len, 0};
        ssize_t r = mpquic_conn_recv(c->conn, buf, (size_t)n, &ri, now_ns());
        if (r < 0 && r != MPQUIC_ERROR_DONE && !c->finished) {
            fprintf(stderr, "recv: error %zd\n", r);
            if (r != MPQUIC_ERROR_CLOSED) c->failed = 1;
        }
    }
    path_events(c);
    process_h3(c);
    flush_egress(c);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    struct client *c = w->data;
    mpquic_conn_on_timeout(c->conn, now_ns());
    path_events(c);
    flush_egress(c);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    struct client *c = w->data;
    fprintf(stderr, "giving up: time limit reached\n");
    c->failed = 1;
    ev_break(loop, EVBREAK_ALL);
}

static void print_stats(struct client *c) {
    struct mpquic_stats st;
    mpquic_conn_stats(c->conn, &st);
    double secs = (double)(now_ns() - c->started_ns) / 1e9;
    fprintf(stderr, "downloaded %llu bytes in %.3f s (%.2f Mbit/s); sent %llu / received %llu datagrams, %llu lost\n",
            (unsigned long long)c->body_bytes, secs, secs > 0 ? (double)c->body_bytes * 8 / secs / 1e6 : 0.0,
            (unsigned long long)st.sent, (unsigned long long)st.recv, (unsigned long long)st.lost);
    size_t n = mpquic_conn_path_count(c->conn);
    for (size_t i = 0; i < n; i++) {
        struct mpquic_path_stats ps;
        if (mpquic_conn_path_stats(c->conn, i, &ps) != 0) break;
        char l[64], p[64];
        fprintf(stderr,
                "path %u %s -> %s%s: srtt %.2f ms, min_rtt %.2f ms, cwnd %llu, sent %llu pkts / %llu B, "
                "recv %llu pkts / %llu B, lost %llu, cc %s\n",
                ps.path_id, addr_str(&ps.local, l, sizeof l), addr_str(&ps.peer, p, sizeof p),
                ps.active ? "" : " (inactive)", (double)ps.srtt_ns / 1e6, (double)ps.min_rtt_ns / 1e6,
                (unsigned long long)ps.cwnd, (unsigned long long)ps.sent, (unsigned long long)ps.sent_bytes,
                (unsigned long long)ps.recv, (unsigned long long)ps.recv_bytes, (unsigned long long)ps.lost,
                ps.cc_state);
    }
}

static void usage(void) {
    fprintf(stderr, "usage: h3_client [-l IP:PORT]... [-o FILE] [-c CC] [-s SCHED] [-A CAFILE | -k] "
                    "[-t SECONDS] https://HOST:PORT/PATH\n");
    exit(2);
}

int main(int argc, char **argv) {
    struct client c;
    memset(&c, 0, sizeof(c));
    c.out = stdout;
    const char *locals[MAX_LOCALS];
    int nlocals = 0;
    const char *cc = "cubic", *sched = "minrtt", *ca = NULL, *outfile = NULL;
    int insecure = 0;
    double limit = 60;
    int opt;
    while ((opt = getopt(argc, argv, "l:o:c:s:A:kt:")) != -1) {
        switch (opt) {
        case 'l':
            if (nlocals == MAX_LOCALS) usage();
            locals[nlocals++] = optarg;
            break;
        case 'o': outfile = optarg; break;
        case 'c': cc = optarg; break;
        case 's': sched = optarg; break;
        case 'A': ca = optarg; break;
        case 'k': insecure = 1; break;
        case 't': limit = atof(optarg); break;
        default: usage();
        }
    }
    if (optind != argc - 1) usage();

    /* https://HOST:PORT/PATH */
    const char *url = argv[optind];
    if (strncmp(url, "https://", 8) != 0) usage();
    char authority[256];
    const char *slash = strchr(url + 8, '/');
    size_t alen = slash ? (size_t)(slash - url - 8) : strlen(url + 8);
    if (alen == 0 || alen >= sizeof(authority)) usage();
    memcpy(authority, url + 8, alen);
    authority[alen] = 0;
    c.authority = authority;
    c.path = slash ? slash : "/";
    if (parse_addr(authority, &c.peer, &c.peer_len) != 0) {
        fprintf(stderr, "cannot resolve %s (expected HOST:PORT)\n", authority);
        return 1;
    }
    char host[256];
    snprintf(host, sizeof host, "%s", authority);
    char *colon = strrchr(host, ':');
    if (colon) *colon = 0;

    if (nlocals == 0) locals[nlocals++] = c.peer.ss_family == AF_INET6 ? "[::]:0" : "0.0.0.0:0";
    for (int i = 0; i < nlocals; i++) {
        struct sock *s = &c.socks[i];
        s->path_id = i == 0 ? 0 : -1;
        if (parse_addr(locals[i], &s->addr, &s->len) != 0 || (s->fd = bind_udp(&s->addr, &s->len)) < 0) {
            fprintf(stderr, "cannot bind %s\n", locals[i]);
            return 1;
        }
        c.nsocks++;
    }

    mpquic_config *cfg = mpquic_config_new();
    int rc = mpquic_config_set_application_protos(cfg, (const uint8_t *)"\x02h3", 3);
    if (rc == 0) rc = mpquic_config_set_cc(cfg, cc);
    if (rc == 0) rc = mpquic_config_set_scheduler(cfg, sched);
    if (rc == 0 && ca) rc = mpquic_config_load_verify_locations_from_file(cfg, ca);
    if (rc == 0 && insecure) rc = mpquic_config_verify_peer(cfg, false);
    if (rc == 0) rc = mpquic_config_set_initial_max_data(cfg, 32 << 20);
    if (rc == 0) rc = mpquic_config_set_initial_max_stream_data_bidi_local(cfg, 16 << 20);
    if (rc == 0) rc = mpquic_config_set_max_idle_timeout(cfg, 10000);
    if (rc == 0 && c.nsocks > 1) rc = mpquic_config_enable_multipath(cfg, (uint32_t)c.nsocks);
    if (rc != 0) {
        fprintf(stderr, "configuration failed: %d (cc \"%s\", scheduler \"%s\")\n", rc, cc, sched);
        mpquic_config_free(cfg);
        return 1;
    }

    c.started_ns = now_ns();
    c.conn = mpquic_connect(host, NULL, 0, (struct sockaddr *)&c.socks[0].addr, c.socks[0].len,
                            (struct sockaddr *)&c.peer, c.peer_len, cfg, now_ns());
    mpquic_config_free(cfg); /* the connection keeps what it needs */
    if (!c.conn) {
        fprintf(stderr, "mpquic_connect failed\n");
        return 1;
    }
    c.fetch = mpquic_h3_fetch_new(c.authority, &c.path, 1, "mpquic-c-example");
    if (!c.fetch) {
        fprintf(stderr, "bad URL\n");
        mpquic_conn_free(c.conn);
        return 1;
    }
    if (outfile && !(c.out = fopen(outfile, "wb"))) {
        mpquic_h3_fetch_free(c.fetch);
        perror(outfile);
        mpquic_conn_free(c.conn);
        return 1;
    }

    c.loop = ev_loop_new(EVFLAG_AUTO);
    for (int i = 0; i < c.nsocks; i++) {
        ev_io_init(&c.socks[i].watcher, on_read, c.socks[i].fd, EV_READ);
        c.socks[i].watcher.data = &c;
        ev_io_start(c.loop, &c.socks[i].watcher);
    }
    ev_init(&c.timer, on_timeout);
    c.timer.data = &c;
    ev_timer_init(&c.deadline, on_deadline, limit, 0.);
    c.deadline.data = &c;
    ev_timer_start(c.loop, &c.deadline);

    flush_egress(&c);
    ev_run(c.loop, 0);

    if (c.status) fprintf(stderr, "status %d\n", c.status);
    print_stats(&c);
    int ok = c.finished && !c.failed && c.status >= 200 && c.status < 300;

    mpquic_h3_fetch_free(c.fetch);
    mpquic_conn_free(c.conn);
    for (int i = 0; i < c.nsocks; i++) {
        ev_io_stop(c.loop, &c.socks[i].watcher);
        close(c.socks[i].fd);
    }
    ev_timer_stop(c.loop, &c.timer);
    ev_timer_stop(c.loop, &c.deadline);
    ev_loop_destroy(c.loop);
    if (c.out != stdout) fclose(c.out);
    return ok ? 0 : 1;
}
