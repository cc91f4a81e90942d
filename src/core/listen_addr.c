/* ADDR:PORT for the metrics servers (listen_addr.h). */
#include "core/listen_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

int ms_listen_addr_parse(const char *s, size_t n, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[64];
    size_t hl, colon;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || (size_t)(close - s) + 1 >= n || close[1] != ':')
            return -1;
        hl = (size_t)(close - s - 1);
        if (hl >= sizeof host)
            return -1;
        memcpy(host, s + 1, hl);
        colon = (size_t)(close - s) + 1;
    } else {
        colon = n;
        while (colon && s[colon - 1] != ':')
            colon--;
        if (!colon)
            return -1;
        colon--;
        hl = colon;
        if (hl >= sizeof host)
            return -1;
        memcpy(host, s, hl);
    }
    host[hl] = 0;
    unsigned long port = 0;
    size_t digits = n - colon - 1;
    if (digits == 0 || digits > 5)
        return -1;
    for (size_t i = colon + 1; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        port = port * 10 + (unsigned long)(s[i] - '0');
    }
    if (port > 65535)
        return -1;
    struct sockaddr_storage tmp;
    if (!ss)
        ss = &tmp;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (s[0] != '[' && (!host[0] || inet_pton(AF_INET, host, &v4->sin_addr) == 1)) {
        if (!host[0])
            v4->sin_addr.s_addr = htonl(INADDR_ANY);
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        if (len)
            *len = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        if (len)
            *len = sizeof *v6;
        return 0;
    }
    return -1;
}
