/* ADDR:PORT parsing for the proxy's options. Resolved once at start with
 * getaddrinfo, so a name is looked up before the first connection, never on
 * the relay path. */
#include "dataplane/proxy.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wm_proxy_parse_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len,
                        char *err, size_t errlen)
{
    char host[256];
    const char *port;
    if (text[0] == '[') {                        /* [v6]:port */
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') {
            snprintf(err, errlen, "\"%s\": expected [IPV6]:PORT", text);
            return -1;
        }
        size_t n = (size_t)(close - text - 1);
        if (n == 0 || n >= sizeof host) { snprintf(err, errlen, "\"%s\": bad IPv6 address", text); return -1; }
        memcpy(host, text + 1, n);
        host[n] = 0;
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (!colon || colon == text) { snprintf(err, errlen, "\"%s\": expected ADDR:PORT", text); return -1; }
        size_t n = (size_t)(colon - text);
        if (n >= sizeof host) { snprintf(err, errlen, "\"%s\": address too long", text); return -1; }
        memcpy(host, text, n);
        host[n] = 0;
        if (strchr(host, ':')) { snprintf(err, errlen, "\"%s\": write IPv6 addresses as [ADDR]:PORT", text); return -1; }
        port = colon + 1;
    }
    char *end;
    long pn = strtol(port, &end, 10);
    if (!*port || *end || pn < 1 || pn > 65535) {
        snprintf(err, errlen, "\"%s\": port must be 1..65535", text);
        return -1;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV }, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "\"%s\": %s", text, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}
