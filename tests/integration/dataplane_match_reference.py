#!/usr/bin/env python3
"""Independent reference for build/wirematch's match log.

Decodes the capture with tshark (its own TCP reassembly and MQTT dissector),
replays the MQTT sessions in capture order with a plain model written here
from MQTT 5.0, and compares every line of the match log with the PUBLISH it
describes. The model:

  - topic matching (§4.7), subscription keys clientid#subscription-id or
    clientid#filter, replacement of a filter the client has (§3.8.4),
    topic aliases per connection, No Local, `nbhd` user
    properties looked up in the resolution's JSON dump from `wmctl dump`,
    `peid` user properties (an empty value is no peid); an empty `xpath` is no query and an empty
    `nbhd` names no neighborhood: such a subscription is never installed;
  - a SUBSCRIBE counts only for the filters the broker's SUBACK with its
    packet identifier grants (reason code < 0x80, §3.9.3); an UNSUBSCRIBE
    only for those its UNSUBACK answers 0x00 or 0x11 (No subscription
    existed: the broker has none, §3.11.3), not those it refuses; a SUBACK
    after the session ended with the connection (Session Expiry 0: the
    DISCONNECT behind the SUBSCRIBE) installs nothing;
  - subscriptions belong to the client's session (§4.1): a successful
    CONNACK with Session Present 0 starts a new one (the old subscriptions
    are gone), Session Present 1 resumes it; when the connection that holds
    it ends (DISCONNECT from either side, RST, or FIN both ways) the session
    ends if its Session Expiry Interval (CONNECT, overridden by CONNACK,
    changed by the client's DISCONNECT unless from 0; §3.1.2.11.2,
    §3.14.2.2.2) is 0, else it expires that many seconds later in capture
    time (wirematch measures receive time: the test captures have no gap
    that long);
  - the broker's CONNACK limits (Topic Alias Maximum, Maximum Packet Size,
    Maximum QoS, Retain Available; §3.2.2.3): the client packet that breaks
    one is never delivered, nor anything the client sends after it, nor
    after the broker's DISCONNECT or its own (§3.14.4), nor after a second
    CONNECT (a Protocol Error: the broker closes the connection, §3.1);
  - a client id over 128 bytes: the client is not followed at all;
  - deliveries the broker does not make are not in `matched`: a message
    larger, as forwarded (full topic, packet id unless the delivered QoS is
    0, the publisher's properties without Topic Alias plus the
    subscriber's Subscription Identifier, payload), than the Maximum
    Packet Size of the subscriber's CONNECT (§3.1.2.11.4; not modelled for
    Wills), and a QoS 0 delivery to a detached session (mosquitto queues
    none);
  - a client PUBLISH sent before the broker's CONNACK is delivered when a
    successful CONNACK comes (and matched then), never if the CONNACK
    refuses the client (reason >= 0x80), after which nothing the client
    sends is processed (§3.1.4);
  - QoS 2 (§4.3.3, as mosquitto delivers it): a QoS 2 message is matched
    when the client's PUBREL releases it (with the subscriptions of that
    moment), never if the broker's PUBREC refuses it (>= 0x80) or its
    session ends first; a PUBLISH with a packet identifier the session
    still holds is the same message, whatever its DUP flag;
  - retained messages (§3.3.1.3): a broker PUBLISH with RETAIN 1 right
    after a SUBACK that granted a filter (only such PUBLISHes between) is a
    retained message for the new subscription, matched against that
    subscriber's own non-shared subscriptions (the one its Subscription
    Identifier names, if it has one); its line has "retained": true and
    the subscriber as client;
  - Wills (§3.1.2.5, §3.1.3.2.2, §3.14.4): the CONNECT's Will is published
    when the connection's end is seen (as for the session above) unless the
    client's DISCONNECT had a reason other than 0x04 or the broker never
    accepted the CONNECT: at once if its Will Delay Interval is 0 or the
    session ended with the connection (after its subscriptions went), else
    min(delay, expiry) seconds later in capture time, unless a successful
    CONNACK for the client id comes first (Session Present 1: never;
    0: then, after the new session started); a connection whose client id
    another one connected with meanwhile publishes it at its end if that
    one started a new session or the delay is 0, else never. It is matched
    like a PUBLISH of its client (Will Topic, `peid` Will Properties) and
    its line has "will": true.

Properties are read in wire order (tshark's JSON with duplicate keys kept),
so each value is paired with its identifier.

usage: dataplane_match_reference.py CAPTURE.pcap BROKER_PORT RESOLUTION.json MATCH_LOG.jsonl
Exit 0 when there is no difference; prints the first differences otherwise.
The last line is a one-line summary.
"""
import json
import subprocess
import sys

pcap, port, res_path, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
nbhds = {name: set(v.get("result") or []) for name, v in json.load(open(res_path)).items()}

out = subprocess.run(["tshark", "-r", pcap, "-d", "tcp.port==%d,mqtt" % port, "-T", "json",
                      "-Y", "mqtt or tcp.flags.reset == 1 or tcp.flags.fin == 1"],
                     capture_output=True, text=True, check=True).stdout
frames = json.loads(out, object_pairs_hook=list) if out.strip() else []


def get(pairs, key, default=None):
    for k, v in pairs or []:
        if k == key:
            return v
    return default


def get_all(pairs, key):
    return [v for k, v in pairs or [] if k == key]


def props(m, block="mqtt.properties"):
    """[(id, value)] in wire order; a user property's value is (key, value)."""
    res, cur = [], None
    for k, v in get(m, block) or []:
        if k == "mqtt.property_id":
            cur = int(v, 16)
        elif cur is not None and not k.endswith("_len"):  # a string's length field comes before it
            if cur == 0x26:
                if k == "mqtt.prop_key":
                    res.append([cur, [v, None]])
                else:
                    res[-1][1][1] = v
                    cur = None
                continue
            res.append((cur, v))
            cur = None
    return res


def prop(m, pid, default=None):
    return next((v for i, v in props(m) if i == pid), default)


def user_props(m, block="mqtt.properties"):
    return [tuple(v) for i, v in props(m, block) if i == 0x26]


def topic_match(filt, topic):
    if filt.startswith("$share/"):
        filt = filt.split("/", 2)[2]
    if topic.startswith("$") and filt[:1] in ("#", "+"):
        return False
    f, t = filt.split("/"), topic.split("/")
    for i, p in enumerate(f):
        if p == "#":
            return True
        if i >= len(t) or (p != "+" and p != t[i]):
            return False
    return len(f) == len(t)


def vbi_len(n):
    return 1 if n < 128 else 2 if n < 16384 else 3 if n < 2097152 else 4


class Conn:
    def __init__(self):
        self.client = None      # after a v5 CONNECT
        self.expiry = 0
        self.max_packet = 0     # the CONNECT's Maximum Packet Size (0: none)
        self.started = self.ended = self.dead = False
        self.limits = None      # (alias max, max packet, max qos, retain ok) after CONNACK
        self.aliases = {}
        self.pending = []       # [(packet id, [(filter, no_local)], subid, nbhd)]
        self.unsubs = []        # [(packet id, [filter])] awaiting their UNSUBACK
        self.fin = set()
        self.will = None        # {"topic", "peids", "delay"} from CONNECT
        self.will_on = False    # published if the connection ends (no DISCONNECT other than 0x04)
        self.superseded = None  # a later CONNACK of the client id elsewhere: "new" / "resumed"
        self.held = []          # PUBLISHes sent before the CONNACK
        self.after_suback = False  # the broker's last packets: a SUBACK granting a filter, then retained PUBLISHes


class Session:
    def __init__(self):
        self.subs = {}          # filter -> (key, nbhd set or None, no_local)
        self.owner = None       # tcp stream holding it
        self.deadline = None    # capture time it expires
        self.qos2 = {}          # packet id awaiting PUBREL -> (publisher, topic, peids, msg)
        self.online = True      # False while detached (connection gone, session not expired)
        self.max_packet = 0     # the Maximum Packet Size of the CONNECT that started or resumed it


conns, sessions = {}, {}
expected = []
delayed = []  # [deadline, order, client, will]


def out_size(msg, qos, subid):
    """Bytes of the PUBLISH the broker sends a subscriber: full topic, packet id if qos, the publisher's
    properties without its Topic Alias plus the subscriber's Subscription Identifier, the payload."""
    pl = msg["props"] + (1 + vbi_len(subid) if subid else 0)
    rem = 2 + len(msg["topic"].encode()) + (2 if qos else 0) + vbi_len(pl) + pl + msg["payload"]
    return 1 + vbi_len(rem) + rem


def delivered(sess, msg, gqos, subid):
    """Whether the broker sends the message to this subscription: no QoS 0 is queued for a detached session
    (mosquitto: queue_qos0_messages false), nothing over the subscriber's Maximum Packet Size (§3.1.2.11.4)."""
    qos = min(msg["qos"], gqos)
    if not sess.online and qos == 0:
        return False
    return msg.get("payload") is None or not sess.max_packet or out_size(msg, qos, subid) <= sess.max_packet


def matched_keys(topic, peids, publisher, msg):
    return sorted({key for client, sess in sessions.items() for filt, (key, ns, nl, gqos, subid) in sess.subs.items()
                   if topic_match(filt, topic) and (ns is None or any(p in ns for p in peids))
                   and not (nl and client == publisher) and delivered(sess, msg, gqos, subid)})


def publish_will(client, w):
    # a Will's size is not modelled (no test gives a Will to a subscriber with a Maximum Packet Size)
    expected.append({"client": client, "topic": w["topic"], "peids": w["peids"],
                     "matched": matched_keys(w["topic"], w["peids"], client, {"qos": w["qos"], "payload": None}),
                     "will": True})


def will_end(c, now):
    w, c.will = c.will, None
    if w is None or not c.will_on:
        return
    if c.superseded == "resumed" and w["delay"]:
        return  # the session went on before the delay passed
    if w["delay"] == 0 or c.superseded == "new" or (c.superseded is None and c.expiry == 0):
        publish_will(c.client, w)
        return
    delayed.append([now + min(w["delay"], c.expiry), len(delayed), c.client, w])


def client_publish(c, m):
    s = session(c.client)
    fl = get(m, "mqtt.hdrflags_tree")
    qos, dup, retain = int(get(fl, "mqtt.qos")), get(fl, "mqtt.dupflag") == "1", get(fl, "mqtt.retain") == "1"
    topic = get(m, "mqtt.topic", "")
    alias = prop(m, 0x23)
    if c.limits and ((alias is not None and int(alias) > c.limits[0]) or qos > c.limits[2]
                     or (retain and not c.limits[3])):
        c.dead = True  # the broker disconnects: 0x94, 0x9B, 0x9A
        return
    if alias is not None:
        if topic:
            c.aliases[alias] = topic
        else:
            topic = c.aliases.get(alias)
    if topic is None:
        return  # an unknown alias is not matched (counted by wirematch)
    peids = [v for k, v in user_props(m) if k == "peid" and v]  # an empty value is no peid
    in_pl = int(get(m, "mqtt.property_len", "0"))
    in_topic = len(get(m, "mqtt.topic", "").encode())
    payload = int(get(m, "mqtt.len")) - (2 + in_topic + (2 if qos else 0) + vbi_len(in_pl) + in_pl)
    msg = {"qos": qos, "topic": topic, "payload": payload, "props": in_pl - (3 if alias is not None else 0)}
    if qos == 2:
        pid = get(m, "mqtt.msgid")
        if pid not in s.qos2:  # else the same message again, whatever its DUP flag
            s.qos2[pid] = (c.client, topic, peids, msg)  # delivered at its PUBREL
        return
    deliver(c.client, topic, peids, msg)


def deliver(client, topic, peids, msg):
    expected.append({"client": client, "topic": topic, "peids": peids,
                     "matched": matched_keys(topic, peids, client, msg)})


def session(client):
    return sessions.setdefault(client, Session())


def end(stream, now):
    c = conns[stream]
    if not c.started or c.ended:
        return
    c.ended = True
    s = session(c.client)
    if s.owner == stream:  # else the session was taken over by a newer connection
        s.owner = None
        if c.expiry == 0:
            s.subs.clear()
            s.qos2.clear()
        else:
            s.online = False
            if c.expiry != 0xFFFFFFFF:
                s.deadline = now + c.expiry
    will_end(c, now)


def expire(now):
    for s in sessions.values():
        if s.deadline is not None and s.deadline <= now:
            s.subs.clear()
            s.qos2.clear()
            s.deadline = None
    for d in sorted((d for d in delayed if d[0] <= now), key=lambda d: d[:2]):
        delayed.remove(d)
        publish_will(d[2], d[3])


for fr in frames:
    layers = get(fr, "_source")
    layers = get(layers, "layers")
    tcp = get(layers, "tcp")
    stream = get(tcp, "tcp.stream")
    now = float(get(get(layers, "frame"), "frame.time_epoch"))
    c2s = int(get(tcp, "tcp.dstport")) == port
    c = conns.setdefault(stream, Conn())
    expire(now)
    for m in get_all(layers, "mqtt"):
        mtype = int(get(get(m, "mqtt.hdrflags_tree"), "mqtt.msgtype"))
        if c2s:
            if mtype == 1:
                if c.client is not None or c.dead:
                    c.dead = True  # a second CONNECT: Protocol Error, the broker closes the connection
                    continue
                if get(m, "mqtt.ver") == "5":
                    c.client = get(m, "mqtt.clientid", "")
                    if len(c.client.encode()) > 128:
                        c.client, c.dead = None, True  # not followed: cut, it would be another client's
                        continue
                    c.expiry = int(prop(m, 0x11, 0))
                    c.max_packet = int(prop(m, 0x27, 0))
                    if get(get(m, "mqtt.conflags_tree"), "mqtt.conflag.willflag") in ("1", "True"):
                        c.will = {"topic": get(m, "mqtt.willtopic", ""),
                                  "peids": [v for k, v in user_props(m, "mqtt.will_properties") if k == "peid" and v],
                                  "delay": int(next((v for i, v in props(m, "mqtt.will_properties")
                                                     if i == 0x18), 0)),
                                  "qos": int(get(get(m, "mqtt.conflags_tree"), "mqtt.conflag.qos", "0"))}
                        c.will_on = True
                continue
            if c.client is None or c.dead:
                continue
            if c.limits and c.limits[1] and int(get(m, "mqtt.len")) + 1 + vbi_len(int(get(m, "mqtt.len"))) > c.limits[1]:
                c.dead = True  # 0x95 Packet too large
                continue
            s = session(c.client)
            if mtype == 8:
                pr = props(m)
                subid = next((v for i, v in pr if i == 0x0B), None)
                nbhd = next((v for k, v in user_props(m) if k == "nbhd"), None)
                xpath = next((v for k, v in user_props(m) if k == "xpath"), None)
                opts = get_all(m, "mqtt.subscription_options_tree")
                filts = [(f, i < len(opts) and get(opts[i], "mqtt.subscription_options_nl") in ("1", "True", "true"))
                         for i, f in enumerate(get_all(m, "mqtt.topic"))]
                c.pending.append((get(m, "mqtt.msgid"), filts, subid, nbhd, xpath))
            elif mtype == 10:
                c.unsubs.append((get(m, "mqtt.msgid"), get_all(m, "mqtt.topic")))
            elif mtype == 6:
                held = s.qos2.pop(get(m, "mqtt.msgid"), None)
                if held:
                    deliver(*held)
            elif mtype == 14:
                if int(get(m, "mqtt.disconnect.reason_code", "0")) != 4:
                    c.will_on = False  # §3.14.4: only 0x04 keeps the Will
                e = prop(m, 0x11)
                if e is not None and not (c.expiry == 0 and int(e) != 0):
                    c.expiry = int(e)
                end(stream, now)
                c.dead = True  # §3.14.4: the broker reads nothing after it
            elif mtype == 3:
                if c.limits is None:
                    c.held.append(m)  # the broker processes it only once it accepted the CONNECT
                else:
                    client_publish(c, m)
        else:
            if c.client is None:
                continue
            retain = get(get(m, "mqtt.hdrflags_tree"), "mqtt.retain") == "1"
            if mtype == 3 and retain and c.after_suback and not c.dead:
                # a retained message for the new subscription (§3.3.1.3): that subscriber's own subscriptions
                # (not shared ones), the one its Subscription Identifier names if it has one
                topic, subid = get(m, "mqtt.topic", ""), prop(m, 0x0B)
                peids = [v for k, v in user_props(m) if k == "peid"]
                keys = sorted({key for filt, (key, ns, nl, gqos, sid) in session(c.client).subs.items()
                               if not filt.startswith("$share/") and topic_match(filt, topic)
                               and (ns is None or any(p in ns for p in peids))
                               and (subid is None or int(subid) == sid)})
                expected.append({"client": c.client, "topic": topic, "peids": peids, "matched": keys, "retained": True})
                continue
            c.after_suback = False
            if mtype == 2:
                if c.started:
                    continue
                if int(get(m, "mqtt.connack.reason_code", "0")) >= 0x80:
                    c.dead, c.held = True, []  # refused: nothing sent after the CONNECT is processed
                    continue
                if not c.client:
                    c.client = prop(m, 0x12, "")
                e = prop(m, 0x11)
                if e is not None:
                    c.expiry = int(e)
                c.limits = (int(prop(m, 0x22, 0)), int(prop(m, 0x27, 0)), int(prop(m, 0x24, 2)),
                            int(prop(m, 0x25, 1)) != 0)
                c.started = True
                s = session(c.client)
                fl = get(m, "mqtt.conack.flags_tree")
                present = get(fl, "mqtt.conack.flags.sp") == "1"
                if not present:
                    s.subs.clear()
                    s.qos2.clear()
                s.owner, s.deadline, s.online, s.max_packet = stream, None, True, c.max_packet
                # the client's earlier connections: a Will waiting for its delay goes now (the old session
                # ended) or never (it goes on); one still connected learns which for its end
                for d in [d for d in delayed if d[2] == c.client]:
                    delayed.remove(d)
                    if not present:
                        publish_will(d[2], d[3])
                for k2, o in conns.items():
                    if k2 != stream and o.client == c.client and o.started and not o.ended:
                        o.superseded = "resumed" if present else "new"
                held, c.held = c.held, []
                for hm in held:
                    if not c.dead:
                        client_publish(c, hm)
            elif mtype == 9:
                pid = get(m, "mqtt.msgid")
                k = next((i for i, p in enumerate(c.pending) if p[0] == pid), None)
                if k is None:
                    continue
                _, filts, subid, nbhd, xpath = c.pending.pop(k)
                codes = [int(x) for x in get_all(m, "mqtt.suback.reason_code")]
                c.after_suback = any(code < 0x80 for code in codes)  # its retained messages come next
                for (filt, nl), code in zip(filts, codes):
                    if c.ended and c.expiry == 0:
                        continue  # the broker read the DISCONNECT behind it: the session ended first
                    if code >= 0x80 or (nbhd is not None and nbhd not in nbhds) or xpath == "":
                        continue  # refused by the broker / unknown neighborhood / no query: never installed
                    key = "%s#%s" % (c.client, subid if subid is not None else filt)
                    session(c.client).subs[filt] = (key, nbhds[nbhd] if nbhd is not None else None, nl, code,
                                                    int(subid) if subid is not None else 0)
            elif mtype == 11:
                pid = get(m, "mqtt.msgid")
                k = next((i for i, p in enumerate(c.unsubs) if p[0] == pid), None)
                if k is None:
                    continue
                _, filts = c.unsubs.pop(k)
                codes = [int(x) for x in get_all(m, "mqtt.unsuback.reason_code")]
                for filt, code in zip(filts, codes):
                    if code in (0x00, 0x11):
                        session(c.client).subs.pop(filt, None)
            elif mtype == 5:
                if int(get(m, "mqtt.pubrec.reason_code", "0")) >= 0x80:
                    session(c.client).qos2.pop(get(m, "mqtt.msgid"), None)  # never delivered
            elif mtype == 14:
                end(stream, now)
                c.dead = True
    flags = get(tcp, "tcp.flags_tree")
    if get(flags, "tcp.flags.reset") in ("1", "True"):
        end(stream, now)
    elif get(flags, "tcp.flags.fin") in ("1", "True"):
        c.fin.add(c2s)
        if len(c.fin) == 2:
            end(stream, now)

got = [json.loads(l) for l in open(log_path) if l.strip()]
diffs = []
if len(got) != len(expected):
    diffs.append("match log has %d lines, the reference %d PUBLISHes" % (len(got), len(expected)))
for i, (g, e) in enumerate(zip(got, expected)):
    if g.get("seq") != i + 1:
        diffs.append("line %d: seq %s, expected %d" % (i + 1, g.get("seq"), i + 1))
    for k in ("client", "topic", "peids", "matched", "will", "retained"):
        if g.get(k, False) != e.get(k, False):
            diffs.append("seq %d: %s %r, reference %r" % (i + 1, k, g.get(k), e.get(k)))
for d in diffs[:20]:
    print(d)
n_matched = sum(1 for e in expected if e["matched"])
n_subs = sum(len(s.subs) for s in sessions.values())
n_wills = sum(1 for e in expected if e.get("will"))
print("match reference: %d PUBLISHes and Wills (%d Wills), %d matched, %d subscriptions, %d Wills waiting, "
      "%d differences" % (len(expected), n_wills, n_matched, n_subs, len(delayed), len(diffs)))
sys.exit(1 if diffs else 0)
