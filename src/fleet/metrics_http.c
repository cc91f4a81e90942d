/* Serving /metrics over HTTP with libmicrohttpd (metrics.h), GET only, the body rendered
 * afresh for every scrape: from a polling thread of the library's (memsight watch), or
 * on the caller's own thread until a descriptor wakes it (the agent's metrics plugin). */
#define _GNU_SOURCE
#include "fleet/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/listen_addr.h"

struct ms_metrics_server {
    struct MHD_Daemon *d;
    ms_metrics *m;
    int port;
    void (*refresh)(void *ctx); /* before every render (NULL: none) */
    void *ctx;
    int close_each; /* answer with Connection: close */
};

static enum MHD_Result reply(const ms_metrics_server *srv, struct MHD_Connection *c,
                             unsigned status, const char *type, char *body, size_t n,
                             enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (srv->close_each)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    ms_metrics_server *srv = cls;
    if (!*state) { /* the first call only announces the request (headers read) */
        *state = srv;
        return MHD_YES;
    }
    if (*upload_size) { /* a body we do not want: consume it */
        *upload_size = 0;
        return MHD_YES;
    }
    static const char text[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, text, "only GET\n", 9, MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/metrics"))
        return reply(srv, c, MHD_HTTP_NOT_FOUND, text, "memsight serves /metrics\n", 25,
                     MHD_RESPMEM_PERSISTENT);
    if (srv->refresh)
        srv->refresh(srv->ctx);
    size_t n;
    char *body = ms_metrics_render(srv->m, &n);
    if (!body)
        return reply(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR, text, "out of memory\n", 14,
                     MHD_RESPMEM_PERSISTENT);
    return reply(srv, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, n,
                 MHD_RESPMEM_MUST_FREE);
}

/* The daemon over a listening socket of ours (it closes it when stopped). */
static ms_metrics_server *start(ms_metrics *m, int fd, int family, unsigned flags, const char *what,
                                char *err, size_t errlen)
{
    ms_metrics_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }
    srv->m = m;
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    if (getsockname(fd, (struct sockaddr *)&got, &gl) == 0)
        srv->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                     : ((struct sockaddr_in *)&got)->sin_port);
    srv->d = MHD_start_daemon(flags | (family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, handle,
                              srv, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
                              (unsigned)10, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                              MHD_OPTION_END);
    if (!srv->d) {
        snprintf(err, errlen, "cannot start the HTTP server on %s", what);
        close(fd);
        free(srv);
        return NULL;
    }
    return srv;
}

ms_metrics_server *ms_metrics_serve(ms_metrics *m, const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (ms_listen_addr_parse(addr, strlen(addr), &ss, &len) != 0) {
        snprintf(err, errlen, "'%s' is not ADDR:PORT (" MS_LISTEN_ADDR_FORMS ")", addr);
        return NULL;
    }
    /* Bind ourselves so that the error says why (in use, not allowed) and port 0 works;
     * the daemon then takes the listening socket over. */
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    return start(m, fd, ss.ss_family, MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, addr, err,
                 errlen);
}

int ms_metrics_server_port(const ms_metrics_server *srv)
{
    return srv->port;
}

void ms_metrics_server_stop(ms_metrics_server *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->d); /* also closes the listening socket */
    free(srv);
}

int ms_metrics_serve_here(ms_metrics *m, int fd, int wake_fd, void (*refresh)(void *ctx), void *ctx,
                          int *fds, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, errlen, "not a socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    /* epoll: one descriptor to wait on, whatever the numbers of the sockets (select's
     * FD_SETSIZE would fail in a program with many files open) */
    ms_metrics_server *srv = start(m, fd, ss.ss_family, MHD_USE_EPOLL, "the agent's socket", err,
                                   errlen);
    if (!srv)
        return -1;
    srv->refresh = refresh;
    srv->ctx = ctx;
    srv->close_each = 1; /* no idle connection outlives a scrape (nor is inherited by a fork) */
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_EPOLL_FD);
    int ep = info ? info->epoll_fd : -1;
    if (ep < 0) {
        snprintf(err, errlen, "the HTTP library has no epoll descriptor");
        ms_metrics_server_stop(srv);
        return -1;
    }
    if (fds) {
        __atomic_store_n(&fds[0], fd, __ATOMIC_RELEASE);
        __atomic_store_n(&fds[1], ep, __ATOMIC_RELEASE);
    }
    for (;;) {
        MHD_UNSIGNED_LONG_LONG to;
        int ms = MHD_get_timeout(srv->d, &to) == MHD_YES ? (to > 1000 ? 1000 : (int)to) : 1000;
        struct pollfd p[2] = {{.fd = ep, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int r = poll(p, 2, ms);
        if (r < 0 && errno != EINTR)
            break;
        /* woken, or a descriptor of ours closed under us (a program that closes every
         * descriptor it did not open): stop rather than spin on it */
        if (r > 0 && (p[1].revents || (p[0].revents & (POLLNVAL | POLLERR))))
            break;
        MHD_run(srv->d);
    }
    if (fds) {
        __atomic_store_n(&fds[0], -1, __ATOMIC_RELEASE);
        __atomic_store_n(&fds[1], -1, __ATOMIC_RELEASE);
    }
    ms_metrics_server_stop(srv);
    return 0;
}
