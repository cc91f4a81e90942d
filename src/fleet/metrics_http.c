/* Serving /metrics over HTTP with libmicrohttpd (metrics.h): one polling thread of the
 * library's, GET only, the body rendered afresh for every scrape. Tools only. */
#define _GNU_SOURCE
#include "fleet/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct ms_metrics_server {
    struct MHD_Daemon *d;
    ms_metrics *m;
    int port;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t n, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
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
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, "only GET\n", 9, MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/metrics"))
        return reply(c, MHD_HTTP_NOT_FOUND, text, "memsight serves /metrics\n", 25,
                     MHD_RESPMEM_PERSISTENT);
    size_t n;
    char *body = ms_metrics_render(srv->m, &n);
    if (!body)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, text, "out of memory\n", 14,
                     MHD_RESPMEM_PERSISTENT);
    return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, n,
                 MHD_RESPMEM_MUST_FREE);
}

/* "ADDR:PORT", "[V6]:PORT" or ":PORT" into a socket address. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
                        size_t errlen)
{
    char host[128];
    const char *colon;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof host)
            goto bad;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = 0;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof host)
            goto bad;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = 0;
    }
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port < 0 || port > 65535)
        goto bad;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (!host[0] || inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        if (!host[0])
            v4->sin_addr.s_addr = htonl(INADDR_ANY);
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return 0;
    }
bad:
    snprintf(err, errlen, "'%s' is not ADDR:PORT (a numeric address: 127.0.0.1:9464, [::1]:9464, "
                          ":9464 for every address)", s);
    return -1;
}

ms_metrics_server *ms_metrics_serve(ms_metrics *m, const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_listen(addr, &ss, &len, err, errlen) != 0)
        return NULL;
    ms_metrics_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    srv->m = m;
    /* Bind ourselves so that the error says why (in use, not allowed) and port 0 works;
     * the daemon then takes the listening socket over. */
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(srv);
        return NULL;
    }
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    getsockname(fd, (struct sockaddr *)&got, &gl);
    srv->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                 : ((struct sockaddr_in *)&got)->sin_port);
    srv->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                                  (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                              0, NULL, NULL, handle, srv, MHD_OPTION_LISTEN_SOCKET, fd,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    if (!srv->d) {
        snprintf(err, errlen, "cannot start the HTTP server on %s", addr);
        close(fd);
        free(srv);
        return NULL;
    }
    return srv;
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
