/*
 * mpquic-h3-server: serve the files under a directory over HTTP/3 with
 * mpquic's endpoint (connection-ID routing, Retry, Version Negotiation,
 * Stateless Reset, one deadline heap for all connections) and libev.
 *
 *   h3_server -l IP:PORT -r ROOT -C CERT -K KEY [-c CC] [-s SCHED] [-n]
 *             [-x SECONDS]
 *
 * A client's further paths (multipath) arrive on the same socket from new
 * addresses; the endpoint routes them by connection ID. -n turns Retry
 * off; -x exits after that many seconds. The first line on stderr is
 * "listening on IP:PORT"; one line per finished request follows.
 */
#include <ev.h>
#include <getopt.h>
#include <limits.h>
#include <sys/stat.h>

#include "common.h"

#define MAX_DATAGRAM 1500
#define MAX_STREAMS 64
#define CHUNK 32768

/* One response being sent: the file and the bytes read but not yet
 * accepted by the connection. */
struct response {
    uint64_t id;
    FILE *file;
    uint8_t buf[CHUNK];
    size_t off, len;
    int eof;
};

struct client {
    struct client *prev, *next; /* every client, for the final clean-up */
    mpquic_h3_conn *h3;
    struct response *streams[MAX_STREAMS];
    uint64_t served;
};

struct server {
    struct ev_loop *loop;
    int fd;
    struct sockaddr_storage addr;
    socklen_t len;
    ev_io watcher;
    ev_timer timer;
    ev_timer stop;
    mpquic_endpoint *ep;
    const char *root;
    struct client *clients;
};

static void finish(struct response *r) {
    if (r->file) fclose(r->file);
    free(r);
}

static struct client *new_client(struct server *s) {
    struct client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->next = s->clients;
    if (c->next) c->next->prev = c;
    s->clients = c;
    return c;
}

static void free_client(struct server *s, struct client *c) {
    if (!c) return;
    if (c->prev) c->prev->next = c->next;
    else s->clients = c->next;
    if (c->next) c->next->prev = c->prev;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (c->streams[i]) finish(c->streams[i]);
    mpquic_h3_conn_free(c->h3);
    free(c);
}

/* The request's :path, and whether it stays under the root. */
struct request {
    char path[PATH_MAX];
    int ok;
};

static int header_cb(const uint8_t *name, size_t name_len, const uint8_t *value, size_t value_len,
                     void *argp) {
    struct request *q = argp;
    if (name_len != 5 || memcmp(name, ":path", 5) != 0) return 0;
    if (value_len == 0 || value_len >= sizeof(q->path) || value[0] != '/') return 0;
    memcpy(q->path, value, value_len);
    q->path[value_len] = 0;
    char *query = strchr(q->path, '?');
    if (query) *query = 0;
    q->ok = strstr(q->path, "..") == NULL;
    return 0;
}

static void respond(struct server *s, struct client *c, mpquic_conn *conn, uint64_t id,
                    mpquic_h3_event *ev) {
    struct request q = {{0}, 0};
    mpquic_h3_event_for_each_header(ev, header_cb, &q);
    char file[PATH_MAX * 2];
    snprintf(file, sizeof file, "%s%s", s->root, q.path);
    struct stat st;
    FILE *f = q.ok && stat(file, &st) == 0 && S_ISREG(st.st_mode) ? fopen(file, "rb") : NULL;
    int slot = -1;
    for (int i = 0; i < MAX_STREAMS && slot < 0; i++)
        if (!c->streams[i]) slot = i;
    const char *status = !f ? "404" : slot < 0 ? "503" : "200";
    char length[32] = "0";
    if (f && slot >= 0) snprintf(length, sizeof length, "%lld", (long long)st.st_size);
    struct mpquic_h3_header hdrs[] = {
        {(const uint8_t *)":status", 7, (const uint8_t *)status, 3},
        {(const uint8_t *)"server", 6, (const uint8_t *)"mpquic-c-example", 16},
        {(const uint8_t *)"content-length", 14, (const uint8_t *)length, strlen(length)},
    };
    int body = status[0] == '2';
    if (mpquic_h3_send_response(c->h3, conn, id, hdrs, 3, !body) != 0 || !body) {
        if (f) fclose(f);
        return;
    }
    struct response *r = calloc(1, sizeof *r);
    if (!r) {
        fclose(f);
        return;
    }
    r->id = id;
    r->file = f;
    c->streams[slot] = r;
}

/* Push file bytes into every open response until the connection takes no
 * more. */
static void send_bodies(struct client *c, mpquic_conn *conn) {
    for (int i = 0; i < MAX_STREAMS; i++) {
        struct response *r = c->streams[i];
        while (r) {
            if (r->off == r->len && !r->eof) {
                r->len = fread(r->buf, 1, sizeof r->buf, r->file);
                r->off = 0;
                r->eof = r->len < sizeof r->buf;
            }
            ssize_t n = mpquic_h3_send_body(c->h3, conn, r->id, r->buf + r->off, r->len - r->off, r->eof);
            if (n < 0) {
                if (n == MPQUIC_ERROR_DONE) break;
                c->streams[i] = NULL; /* reset or stopped by the client */
                finish(r);
                break;
            }
            r->off += (size_t)n;
            if (r->off < r->len) break; /* flow control or buffers full */
            if (r->eof) {
                c->streams[i] = NULL;
                c->served++;
                finish(r);
                break;
            }
        }
    }
}

static void serve_h3(struct server *s, struct client *c, mpquic_conn *conn) {
    if (!c->h3) {
        if (!mpquic_conn_is_established(conn)) return;
        if (!(c->h3 = mpquic_h3_conn_new(conn))) {
            mpquic_conn_close(conn, true, 0x102, NULL, 0, now_ns());
            return;
        }
    }
    for (;;) {
        mpquic_h3_event *ev = NULL;
        int64_t id = mpquic_h3_conn_poll(c->h3, conn, &ev);
        if (id < 0) break; /* DONE, or the connection is closing */
        if (mpquic_h3_event_kind(ev) == MPQUIC_H3_EVENT_HEADERS) respond(s, c, conn, (uint64_t)id, ev);
        mpquic_h3_event_free(ev);
    }
    send_bodies(c, conn);
}

static void flush(struct server *s, mpquic_conn *conn) {
    uint8_t out[MAX_DATAGRAM];
    struct mpquic_send_info info;
    for (;;) {
        ssize_t n = mpquic_conn_send(conn, out, sizeof out, &info, now_ns());
        if (n <= 0) break;
        /* One socket serves every path: the client's new addresses reach
         * it too. Pacing (info.at_ns) is not honoured by this example. */
        if (sendto(s->fd, out, (size_t)n, 0, (struct sockaddr *)&info.to, info.to_len) < 0 &&
            errno != EAGAIN && errno != EWOULDBLOCK)
            perror("sendto");
    }
}

static void log_closed(struct client *c, mpquic_conn *conn) {
    struct mpquic_stats st;
    mpquic_conn_stats(conn, &st);
    fprintf(stderr, "closed: %llu responses, %llu paths, %llu datagrams sent\n",
            (unsigned long long)(c ? c->served : 0), (unsigned long long)st.paths, (unsigned long long)st.sent);
}

/* Serve every connection the endpoint has work for, then re-arm the one
 * timer that stands for all of them. */
static void serve_ready(struct server *s) {
    mpquic_conn *conn;
    while ((conn = mpquic_endpoint_poll(s->ep, now_ns()))) {
        struct client *c = mpquic_conn_user_data(conn);
        if (!c && (c = new_client(s))) mpquic_conn_set_user_data(conn, c);
        if (c) serve_h3(s, c, conn);
        flush(s, conn);
        if (mpquic_conn_is_closed(conn)) log_closed(c, conn);
        if (mpquic_endpoint_rearm(s->ep, conn, UINT64_MAX) == 1) free_client(s, c);
    }
    uint64_t t = mpquic_endpoint_timeout_ns(s->ep), now = now_ns();
    ev_timer_stop(s->loop, &s->timer);
    if (t != UINT64_MAX) {
        ev_timer_set(&s->timer, t > now ? (double)(t - now) / 1e9 : 0., 0.);
        ev_timer_start(s->loop, &s->timer);
    }
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    struct server *s = w->data;
    uint8_t buf[65536], out[MAX_DATAGRAM];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(s->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
        if (n < 0) break;
        /* ecn 0: this example does not read the datagram's ECN bits (IP_RECVTOS). */
        struct mpquic_recv_info ri = {(struct sockaddr *)&from, from_len, (struct sockaddr *)&s->addr, s->len, 0};
        struct mpquic_incoming inc;
        if (mpquic_endpoint_recv(s->ep, buf, (size_t)n, &ri, now_ns(), out, sizeof out, &inc) != 0) continue;
        if (inc.kind == MPQUIC_INCOMING_REPLY)
            sendto(s->fd, out, inc.reply_len, 0, (struct sockaddr *)&from, from_len);
    }
    serve_ready(s);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    serve_ready(w->data);
}

static void on_stop(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void usage(void) {
    fprintf(stderr, "usage: h3_server -l IP:PORT -r ROOT -C CERT -K KEY [-c CC] [-s SCHED] [-n] [-x SECONDS]\n");
    exit(2);
}

int main(int argc, char **argv) {
    struct server s;
    memset(&s, 0, sizeof s);
    const char *listen = NULL, *cert = NULL, *key = NULL, *cc = "cubic", *sched = "minrtt";
    int retry = 1;
    double limit = 0;
    int opt;
    while ((opt = getopt(argc, argv, "l:r:C:K:c:s:nx:")) != -1) {
        switch (opt) {
        case 'l': listen = optarg; break;
        case 'r': s.root = optarg; break;
        case 'C': cert = optarg; break;
        case 'K': key = optarg; break;
        case 'c': cc = optarg; break;
        case 's': sched = optarg; break;
        case 'n': retry = 0; break;
        case 'x': limit = atof(optarg); break;
        default: usage();
        }
    }
    if (optind != argc || !listen || !s.root || !cert || !key) usage();
    if (parse_addr(listen, &s.addr, &s.len) != 0 || (s.fd = bind_udp(&s.addr, &s.len)) < 0) {
        fprintf(stderr, "cannot bind %s\n", listen);
        return 1;
    }

    mpquic_config *cfg = mpquic_config_new();
    int rc = mpquic_config_set_application_protos(cfg, (const uint8_t *)"\x02h3", 3);
    if (rc == 0) rc = mpquic_config_load_cert_chain_from_pem_file(cfg, cert);
    if (rc == 0) rc = mpquic_config_load_priv_key_from_pem_file(cfg, key);
    if (rc == 0) rc = mpquic_config_set_cc(cfg, cc);
    if (rc == 0) rc = mpquic_config_set_scheduler(cfg, sched);
    if (rc == 0) rc = mpquic_config_set_initial_max_data(cfg, 16 << 20);
    if (rc == 0) rc = mpquic_config_set_initial_max_stream_data_bidi_remote(cfg, 1 << 20);
    if (rc == 0) rc = mpquic_config_set_initial_max_streams_bidi(cfg, 100);
    if (rc == 0) rc = mpquic_config_set_initial_max_streams_uni(cfg, 3);
    if (rc == 0) rc = mpquic_config_set_initial_max_stream_data_uni(cfg, 1 << 16);
    if (rc == 0) rc = mpquic_config_set_max_idle_timeout(cfg, 10000);
    if (rc == 0) rc = mpquic_config_enable_multipath(cfg, 4);
    struct mpquic_endpoint_config ecfg;
    mpquic_endpoint_config_default(&ecfg);
    ecfg.retry = retry;
    if (rc == 0 && !(s.ep = mpquic_endpoint_new(cfg, &ecfg, now_ns()))) rc = -1;
    mpquic_config_free(cfg); /* the endpoint keeps a copy */
    if (rc != 0) {
        fprintf(stderr, "configuration failed: %d (cert %s, key %s, cc \"%s\", scheduler \"%s\")\n", rc, cert,
                key, cc, sched);
        return 1;
    }
    char a[64];
    fprintf(stderr, "listening on %s\n", addr_str(&s.addr, a, sizeof a));

    s.loop = ev_loop_new(EVFLAG_AUTO);
    ev_io_init(&s.watcher, on_read, s.fd, EV_READ);
    s.watcher.data = &s;
    ev_io_start(s.loop, &s.watcher);
    ev_init(&s.timer, on_timer);
    s.timer.data = &s;
    if (limit > 0) {
        ev_timer_init(&s.stop, on_stop, limit, 0.);
        ev_timer_start(s.loop, &s.stop);
    }
    ev_run(s.loop, 0);

    struct mpquic_endpoint_counters st;
    mpquic_endpoint_stats(s.ep, &st);
    fprintf(stderr, "endpoint: %llu accepted, %llu retries, %llu routed, %llu dropped, %llu still open\n",
            (unsigned long long)st.accepted, (unsigned long long)st.retries, (unsigned long long)st.routed,
            (unsigned long long)st.dropped, (unsigned long long)st.connections);
    /* The endpoint frees the connections still open; their state is ours. */
    mpquic_endpoint_free(s.ep);
    while (s.clients) free_client(&s, s.clients);
    ev_io_stop(s.loop, &s.watcher);
    ev_timer_stop(s.loop, &s.timer);
    ev_timer_stop(s.loop, &s.stop);
    ev_loop_destroy(s.loop);
    close(s.fd);
    return 0;
}
