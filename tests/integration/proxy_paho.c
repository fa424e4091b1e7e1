/* A second, independent MQTT v5 client for the proxy's transparency test:
 * the Eclipse Paho C library (libpaho-mqtt-dev, MQTTVERSION_5, synchronous
 * API). It runs one fixed scenario against HOST:PORT and prints what each
 * client observed, one line per event, in an order that does not depend on
 * timing; proxy_paho.sh runs it straight to mosquitto and through
 * wirematch-proxy and requires the same lines.
 *
 * Scenario (topics under PREFIX/):
 *   wills          a client with a Will (QoS 1, user property) disconnects
 *                  with reason 0x04 "with Will Message": the watcher gets it
 *   persistent     clean start 0 + session expiry: offline QoS 1 messages
 *                  arrive after the reconnect
 *   shared         $share/g/...: 20 messages spread over two members, each
 *                  delivered once (only the total is printed)
 *   aliases        client -> broker Topic Alias: set with a topic, then
 *                  alias-only publications
 *   overlapping    two overlapping subscriptions with Subscription
 *                  Identifiers 1 and 2, and one without
 *   retained       retained message to a later subscriber
 *   max packet     a subscriber announcing Maximum Packet Size 200 does not
 *                  get a 500-byte message (the broker drops it, §3.1.2.11.4)
 *                  but gets the small one after it
 *   qos            QoS 0/1/2 end to end with a user property
 *
 * usage: proxy_paho HOST PORT PREFIX   (exit 0 if every step completed)
 *
 * Spatial mode (proxy_clients_spatial.sh, through a proxy with --resolution):
 *   proxy_paho HOST PORT PREFIX spatial PEIDS N SEED NBHD...
 * one subscriber per NBHD on PREFIX/sp/# with that `nbhd` User Property
 * (QoS 1; the second one with its own Subscription Identifier 7; the first
 * one with a persistent session, away while everything is published, so
 * that its QoS 1/2 messages come from the broker's queue after it resumes),
 * then N publications (QoS 0/1/2, a `peid` drawn from the file PEIDS, one a
 * line, or none; random with SEED). Prints "PUB i qos peid|-" per
 * publication, "OFFLINE nbhd" for the persistent subscriber and
 * "GOT nbhd i sids" per delivery; proxy_spatial_check.py judges them.
 *
 * Built by the Makefile as BUILD/tests/proxy_paho (-lpaho-mqtt3c).
 */
#include <MQTTClient.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char uri[128], pre[64];
static int failures;
static int pipelined;   /* clients made now keep several QoS > 0 publications in flight */

#define STEP_FAIL(...) do { printf("FAIL "); printf(__VA_ARGS__); printf("\n"); failures++; } while (0)

static MQTTClient client(const char *id, int clean, unsigned expiry, MQTTClient_willOptions *will,
                         MQTTProperties *will_props, unsigned max_packet, int *session_present)
{
    MQTTClient c;
    MQTTClient_createOptions co = MQTTClient_createOptions_initializer;
    co.MQTTVersion = MQTTVERSION_5;
    char cid[96];
    snprintf(cid, sizeof cid, "%s-%s", pre, id);
    if (MQTTClient_createWithOptions(&c, uri, cid, MQTTCLIENT_PERSISTENCE_NONE, NULL, &co) != MQTTCLIENT_SUCCESS) {
        printf("FAIL create %s\n", id);
        exit(1);
    }
    MQTTClient_connectOptions o = MQTTClient_connectOptions_initializer5;
    o.keepAliveInterval = 30;
    o.cleanstart = clean;
    o.will = will;
    if (pipelined) {
        o.reliable = 0;
        o.maxInflightMessages = 16;
    }
    MQTTProperties props = MQTTProperties_initializer;
    MQTTProperty p;
    if (expiry) {
        p.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL;
        p.value.integer4 = expiry;
        MQTTProperties_add(&props, &p);
    }
    if (max_packet) {
        p.identifier = MQTTPROPERTY_CODE_MAXIMUM_PACKET_SIZE;
        p.value.integer4 = max_packet;
        MQTTProperties_add(&props, &p);
    }
    MQTTResponse r = MQTTClient_connect5(c, &o, &props, will_props);
    if (r.reasonCode != 0) {
        printf("FAIL connect %s: %d\n", id, r.reasonCode);
        exit(1);
    }
    if (session_present) *session_present = o.returned.sessionPresent;
    MQTTResponse_free(r);
    MQTTProperties_free(&props);
    return c;
}

static void add_user_prop(MQTTProperties *props, const char *key, const char *val)
{
    MQTTProperty p = { .identifier = MQTTPROPERTY_CODE_USER_PROPERTY };
    p.value.data.data = (char *)key;
    p.value.data.len = (int)strlen(key);
    p.value.value.data = (char *)val;
    p.value.value.len = (int)strlen(val);
    MQTTProperties_add(props, &p);
}

static void sub_nbhd(MQTTClient c, const char *filter, int qos, int sid, const char *nbhd)
{
    char t[160];
    snprintf(t, sizeof t, filter[0] == '$' ? "%.0s%s" : "%s/%s", pre, filter);
    if (filter[0] == '$') snprintf(t, sizeof t, "$share/g/%s/%s", pre, filter + 1);
    MQTTSubscribe_options so = MQTTSubscribe_options_initializer;
    MQTTProperties props = MQTTProperties_initializer;
    if (sid) {
        MQTTProperty p = { .identifier = MQTTPROPERTY_CODE_SUBSCRIPTION_IDENTIFIER, .value.integer4 = (unsigned)sid };
        MQTTProperties_add(&props, &p);
    }
    if (nbhd) add_user_prop(&props, "nbhd", nbhd);
    MQTTResponse r = MQTTClient_subscribe5(c, t, qos, &so, &props);
    if ((int)r.reasonCode != qos) STEP_FAIL("subscribe %s: %d", t, r.reasonCode);
    MQTTResponse_free(r);
    MQTTProperties_free(&props);
}

static void sub(MQTTClient c, const char *filter, int qos, int sid) { sub_nbhd(c, filter, qos, sid, NULL); }

static void pub(MQTTClient c, const char *topic, const char *payload, size_t len, int qos, int retained,
                int alias, const char *ukey, const char *uval)
{
    char t[160];
    if (topic[0]) snprintf(t, sizeof t, "%s/%s", pre, topic);
    else t[0] = 0;
    MQTTClient_message m = MQTTClient_message_initializer;
    m.payload = (void *)payload;
    m.payloadlen = (int)len;
    m.qos = qos;
    m.retained = retained;
    if (alias) {
        MQTTProperty p = { .identifier = MQTTPROPERTY_CODE_TOPIC_ALIAS, .value.integer2 = (unsigned short)alias };
        MQTTProperties_add(&m.properties, &p);
    }
    if (ukey) add_user_prop(&m.properties, ukey, uval);
    MQTTClient_deliveryToken tok;
    MQTTResponse r = MQTTClient_publishMessage5(c, t, &m, &tok);
    if ((int)r.reasonCode >= 0x80 || (int)r.reasonCode < 0) STEP_FAIL("publish %s: %d", t, r.reasonCode);
    else if (qos && MQTTClient_waitForCompletion(c, tok, 5000) != MQTTCLIENT_SUCCESS) STEP_FAIL("publish %s not completed", t);
    MQTTResponse_free(r);
    MQTTProperties_free(&m.properties);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Receives one message (bound: ms) and prints it if asked; returns 0 on timeout. */
static int recv1(MQTTClient c, const char *who, int print, unsigned long ms)
{
    char *topic = NULL;
    int tlen = 0;
    MQTTClient_message *m = NULL;
    if (MQTTClient_receive(c, &topic, &tlen, &m, ms) != MQTTCLIENT_SUCCESS || !m) return 0;
    if (print) {
        const char *t = topic;
        size_t pl = strlen(pre);
        if (strncmp(t, pre, pl) == 0) t += pl;
        int sids[8], n = MQTTProperties_propertyCount(&m->properties, MQTTPROPERTY_CODE_SUBSCRIPTION_IDENTIFIER);
        for (int i = 0; i < n && i < 8; i++)
            sids[i] = MQTTProperties_getNumericValueAt(&m->properties, MQTTPROPERTY_CODE_SUBSCRIPTION_IDENTIFIER, i);
        qsort(sids, (size_t)(n < 8 ? n : 8), sizeof(int), cmp_int);
        printf("%s got PRE%s q%d r%d sid=", who, t, m->qos, m->retained);
        for (int i = 0; i < n && i < 8; i++) printf("%s%d", i ? "," : "", sids[i]);
        printf(" up=");
        int nu = MQTTProperties_propertyCount(&m->properties, MQTTPROPERTY_CODE_USER_PROPERTY);
        for (int i = 0; i < nu; i++) {
            MQTTProperty *p = MQTTProperties_getPropertyAt(&m->properties, MQTTPROPERTY_CODE_USER_PROPERTY, i);
            printf("%s%.*s:%.*s", i ? "," : "", p->value.data.len, p->value.data.data, p->value.value.len,
                   p->value.value.data);
        }
        printf(" len=%d %.*s\n", m->payloadlen, m->payloadlen > 40 ? 40 : m->payloadlen, (char *)m->payload);
    }
    MQTTClient_freeMessage(&m);
    MQTTClient_free(topic);
    return 1;
}

static void expect(MQTTClient c, const char *who, int n)
{
    for (int i = 0; i < n; i++)
        if (!recv1(c, who, 1, 3000)) { STEP_FAIL("%s: message %d of %d missing", who, i + 1, n); return; }
}

static void expect_none(MQTTClient c, const char *who)
{
    char *topic = NULL;
    int tlen = 0;
    MQTTClient_message *m = NULL;
    if (MQTTClient_receive(c, &topic, &tlen, &m, 300) == MQTTCLIENT_SUCCESS && m) {
        STEP_FAIL("%s: unexpected message on %s", who, topic);
        MQTTClient_freeMessage(&m);
        MQTTClient_free(topic);
    }
}

static void bye(MQTTClient *c)
{
    MQTTClient_disconnect5(*c, 1000, MQTTREASONCODE_NORMAL_DISCONNECTION, NULL);
    MQTTClient_destroy(c);
}

/* Every message of c until 3 s pass without one, as "GOT who i sids". */
static void drain_spatial(MQTTClient c, const char *who)
{
    char *topic = NULL;
    int tlen = 0;
    MQTTClient_message *m = NULL;
    while (MQTTClient_receive(c, &topic, &tlen, &m, 3000) == MQTTCLIENT_SUCCESS && m) {
        printf("GOT %s %.*s ", who, m->payloadlen, (char *)m->payload);
        int n = MQTTProperties_propertyCount(&m->properties, MQTTPROPERTY_CODE_SUBSCRIPTION_IDENTIFIER);
        for (int i = 0; i < n; i++)
            printf("%s%d", i ? "," : "",
                   MQTTProperties_getNumericValueAt(&m->properties, MQTTPROPERTY_CODE_SUBSCRIPTION_IDENTIFIER, i));
        printf("%s\n", n ? "" : "-");
        MQTTClient_freeMessage(&m);
        MQTTClient_free(topic);
        topic = NULL;
    }
}

static int spatial(int argc, char **argv)
{
    if (argc < 9) { fprintf(stderr, "usage: proxy_paho HOST PORT PREFIX spatial PEIDS N SEED NBHD...\n"); return 2; }
    FILE *f = fopen(argv[5], "r");
    if (!f) { perror(argv[5]); return 2; }
    static char peids[20000][48];
    int np = 0;
    while (np < 20000 && fgets(peids[np], sizeof peids[np], f)) {
        peids[np][strcspn(peids[np], "\n")] = 0;
        if (peids[np][0]) np++;
    }
    fclose(f);
    int n = atoi(argv[6]), ns = argc - 8;
    srand((unsigned)atoi(argv[7]));
    if (np == 0 || n <= 0 || ns > 16) { fprintf(stderr, "proxy_paho: bad spatial arguments\n"); return 2; }
    MQTTClient subs[16];
    for (int i = 0; i < ns; i++) {
        char id[64];
        snprintf(id, sizeof id, "sp-%s", argv[8 + i]);
        subs[i] = client(id, i != 0, i == 0 ? 300 : 0, NULL, NULL, 0, NULL);
        sub_nbhd(subs[i], "sp/#", 1, i == 1 ? 7 : 0, argv[8 + i]);
    }
    /* The first one leaves; the broker queues its QoS 1/2 messages. */
    MQTTClient_disconnect5(subs[0], 1000, MQTTREASONCODE_NORMAL_DISCONNECTION, NULL);
    MQTTClient_destroy(&subs[0]);
    printf("OFFLINE %s\n", argv[8]);
    /* Waiting for each acknowledgement costs a delayed TCP ACK (~40 ms) per
     * QoS 2 exchange: keep up to 16 in flight, waiting for the oldest. */
    pipelined = 1;
    MQTTClient p = client("sp-pub", 1, 0, NULL, NULL, 0, NULL);
    pipelined = 0;
    char topic[160];
    snprintf(topic, sizeof topic, "%s/sp/t", pre);
    MQTTClient_deliveryToken toks[16] = { 0 };
    for (int i = 0; i < n; i++) {
        int qos = rand() % 3, r = rand() % 10;
        const char *peid = r == 0 ? NULL : peids[rand() % np];
        char b[16];
        int len = snprintf(b, sizeof b, "%d", i);
        MQTTClient_message m = MQTTClient_message_initializer;
        m.payload = b;
        m.payloadlen = len;
        m.qos = qos;
        if (peid) add_user_prop(&m.properties, "peid", peid);
        if (toks[i % 16] && MQTTClient_waitForCompletion(p, toks[i % 16], 10000) != MQTTCLIENT_SUCCESS)
            STEP_FAIL("publication %d not completed", i - 16);
        MQTTResponse rs = MQTTClient_publishMessage5(p, topic, &m, &toks[i % 16]);
        if (rs.reasonCode != 0) STEP_FAIL("publish %d: %d", i, rs.reasonCode);
        MQTTResponse_free(rs);
        MQTTProperties_free(&m.properties);
        if (!qos) toks[i % 16] = 0;
        printf("PUB %d %d %s\n", i, qos, peid ? peid : "-");
    }
    for (int i = 0; i < 16; i++)
        if (toks[i] && MQTTClient_waitForCompletion(p, toks[i], 10000) != MQTTCLIENT_SUCCESS)
            STEP_FAIL("a publication was not completed");
    char id[64];
    snprintf(id, sizeof id, "sp-%s", argv[8]);
    /* Paho reports Session Present for 3.1.1 only: that the session was
     * resumed shows in its queued deliveries (proxy_spatial_check.py). */
    subs[0] = client(id, 0, 300, NULL, NULL, 0, NULL);
    for (int i = 0; i < ns; i++) drain_spatial(subs[i], argv[8 + i]);
    for (int i = 0; i < ns; i++) bye(&subs[i]);
    subs[0] = client(id, 1, 0, NULL, NULL, 0, NULL);   /* clean the session away */
    bye(&subs[0]);
    bye(&p);
    printf("done failures=%d\n", failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[4], "spatial") == 0) {
        snprintf(uri, sizeof uri, "tcp://%s:%s", argv[1], argv[2]);
        snprintf(pre, sizeof pre, "%s", argv[3]);
        setvbuf(stdout, NULL, _IOLBF, 0);
        return spatial(argc, argv);
    }
    if (argc != 4) { fprintf(stderr, "usage: proxy_paho HOST PORT PREFIX\n"); return 2; }
    snprintf(uri, sizeof uri, "tcp://%s:%s", argv[1], argv[2]);
    snprintf(pre, sizeof pre, "%s", argv[3]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    MQTTClient p = client("pub", 1, 0, NULL, NULL, 0, NULL);

    /* wills */
    MQTTClient watch = client("watch", 1, 0, NULL, NULL, 0, NULL);
    sub(watch, "will", 1, 0);
    char wtopic[128];
    snprintf(wtopic, sizeof wtopic, "%s/will", pre);
    MQTTClient_willOptions wo = MQTTClient_willOptions_initializer;
    wo.topicName = wtopic;
    wo.message = "gone";
    wo.qos = 1;
    MQTTProperties wp = MQTTProperties_initializer;
    MQTTProperty up = { .identifier = MQTTPROPERTY_CODE_USER_PROPERTY };
    up.value.data.data = "why"; up.value.data.len = 3; up.value.value.data = "test"; up.value.value.len = 4;
    MQTTProperties_add(&wp, &up);
    MQTTClient w = client("will", 1, 0, &wo, &wp, 0, NULL);
    MQTTProperties_free(&wp);
    MQTTClient_disconnect5(w, 1000, MQTTREASONCODE_DISCONNECT_WITH_WILL_MESSAGE, NULL);
    MQTTClient_destroy(&w);
    expect(watch, "watch", 1);

    /* persistent session */
    int sp = -1;
    MQTTClient s = client("persist", 0, 300, NULL, NULL, 0, &sp);
    sub(s, "persist", 1, 0);
    bye(&s);
    for (int i = 0; i < 3; i++) {
        char b[16];
        int n = snprintf(b, sizeof b, "offline-%d", i);
        pub(p, "persist", b, (size_t)n, 1, 0, 0, NULL, NULL);
    }
    s = client("persist", 0, 300, NULL, NULL, 0, &sp);
    expect(s, "persist", 3);
    bye(&s);
    s = client("persist", 1, 0, NULL, NULL, 0, NULL);   /* clean it away */
    bye(&s);

    /* shared subscription */
    MQTTClient g1 = client("g1", 1, 0, NULL, NULL, 0, NULL), g2 = client("g2", 1, 0, NULL, NULL, 0, NULL);
    sub(g1, "$shared", 1, 0);
    sub(g2, "$shared", 1, 0);
    for (int i = 0; i < 20; i++) pub(p, "shared", "s", 1, 1, 0, 0, NULL, NULL);
    int total = 0;
    for (int idle = 0; total < 20 && idle < 30;) {   /* 3 s without a message ends it */
        int got = recv1(g1, "g1", 0, 50) + recv1(g2, "g2", 0, 50);
        total += got;
        idle = got ? 0 : idle + 1;
    }
    expect_none(g1, "g1");
    expect_none(g2, "g2");
    printf("shared total=%d\n", total);
    bye(&g1);
    bye(&g2);

    /* topic aliases, client -> broker; overlapping subscriptions with identifiers */
    MQTTClient o = client("ov", 1, 0, NULL, NULL, 0, NULL);
    sub(o, "ov/#", 1, 1);
    sub(o, "ov/+", 1, 2);
    sub(o, "al/x", 1, 0);
    pub(p, "al/x", "alias-set", 9, 1, 0, 3, NULL, NULL);
    pub(p, "", "alias-only-1", 12, 1, 0, 3, NULL, NULL);
    pub(p, "", "alias-only-2", 12, 0, 0, 3, NULL, NULL);
    expect(o, "alias", 3);
    pub(p, "ov/a", "overlap", 7, 1, 0, 0, NULL, NULL);
    expect(o, "ov", 2);   /* mosquitto sends one copy per matching subscription */
    expect_none(o, "ov");
    bye(&o);

    /* retained */
    pub(p, "ret", "kept", 4, 1, 1, 0, "k", "v");
    MQTTClient r = client("late", 1, 0, NULL, NULL, 0, NULL);
    sub(r, "ret", 1, 0);
    expect(r, "late", 1);
    pub(p, "ret", "", 0, 1, 1, 0, NULL, NULL);   /* clear it */
    expect(r, "late", 1);
    bye(&r);

    /* Maximum Packet Size announced by the subscriber */
    MQTTClient small = client("small", 1, 0, NULL, NULL, 200, NULL);
    sub(small, "mps", 1, 0);
    char big[500];
    memset(big, 'B', sizeof big);
    pub(p, "mps", big, sizeof big, 1, 0, 0, NULL, NULL);
    pub(p, "mps", "fits", 4, 1, 0, 0, NULL, NULL);
    expect(small, "small", 1);
    expect_none(small, "small");
    bye(&small);

    /* QoS 0/1/2 */
    MQTTClient q = client("qos", 1, 0, NULL, NULL, 0, NULL);
    sub(q, "qos/#", 2, 0);
    pub(p, "qos/0", "zero", 4, 0, 0, 0, "n", "0");
    pub(p, "qos/1", "one", 3, 1, 0, 0, "n", "1");
    pub(p, "qos/2", "two", 3, 2, 0, 0, "n", "2");
    expect(q, "qos", 3);
    bye(&q);

    bye(&watch);
    bye(&p);
    printf("done failures=%d\n", failures);
    return failures ? 1 : 0;
}
