/* "ADDR:PORT" as memsight's metrics options take it: a numeric IPv4 address, "[V6]" in
 * brackets, or nothing for every IPv4 address (":9464"); port 0..65535. Shared by
 * `memsight watch --metrics-listen` and the agent's metrics_listen= option, so both bind
 * exactly where they are told (no name lookup). No malloc, no stdio: the agent uses it. */
#ifndef MS_CORE_LISTEN_ADDR_H
#define MS_CORE_LISTEN_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

#define MS_LISTEN_ADDR_FORMS "a numeric address: 127.0.0.1:9464, [::1]:9464, :9464 for every address"

/* Parses s (n bytes, not necessarily NUL-terminated) into *ss and *len (either may be
 * NULL to check only). Returns 0, or -1 when it is not ADDR:PORT. */
int ms_listen_addr_parse(const char *s, size_t n, struct sockaddr_storage *ss, socklen_t *len);

#endif
