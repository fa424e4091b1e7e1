#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_proxy_filter (tests/fuzz/corpus/proxy_filter/):
scripted sessions in the target's step format (see fuzz_proxy_filter.c),
built with the raw MQTT v5 helpers of tests/integration/proxy_mqtt5.py.
The content seeds carry SenML packs encoded by wmctl (build/wmctl, run from
the repository's root, schema from $WM_SHARED, default ../shared).
usage: corpus_proxy_filter.py OUT_DIR"""
import os, struct, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from proxy_mqtt5 import packet, props, s, vbi

C2U, U2C = 0, 1
RELOAD = 8   # or-ed into a step's connection: reload the resolution (and registry) first

def connect(cid, clean=True, expiry=None):
    pr = [(0x11, expiry)] if expiry else []
    return packet(0x10, s("MQTT") + bytes([5, 0x02 if clean else 0]) + struct.pack(">H", 60) + props(pr) + s(cid))

def connack(present=False, pr=(), assigned=None):
    body = props(list(pr))
    if assigned:   # Assigned Client Identifier, which props() does not write
        n, off = body[0], 1   # short property lists: a 1-byte length
        body = vbi(n + 3 + len(assigned)) + body[off:] + bytes([0x12]) + s(assigned)
    return packet(0x20, bytes([1 if present else 0, 0]) + body)

def subscribe(pid, flt, sid=None, nbhd=None, qos=1, xpath=None):
    pr = ([(0x0B, sid)] if sid else []) + ([(0x26, ("nbhd", nbhd))] if nbhd else []) + \
         ([(0x26, ("xpath", xpath))] if xpath else [])
    return packet(0x82, struct.pack(">H", pid) + props(pr) + s(flt) + bytes([qos]))

def suback(pid, code=1): return packet(0x90, struct.pack(">H", pid) + props([]) + bytes([code]))

def unsubscribe(pid, flt): return packet(0xA2, struct.pack(">H", pid) + props([]) + s(flt))

def publish(topic, sids=(), peid=None, qos=0, pid=1, alias=None, exi=None):
    pr = [(0x0B, x) for x in sids] + ([(0x23, alias)] if alias else []) + ([(0x26, ("peid", peid))] if peid else []) + \
         ([(0x03, "application/exi; schema=senml")] if exi else [])
    return packet(0x30 | qos << 1, s(topic) + (struct.pack(">H", pid) if qos else b"") + props(pr) + (exi or b"m"))

def senml(xml):
    """A SenML pack (default options, as the registry's senml line) encoded by wmctl."""
    xsd = os.path.join(os.environ.get("WM_SHARED", "../shared"), "data/exi/senml/senml.gen.xsd")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "p.xml"), os.path.join(d, "p.exi")
        with open(src, "w") as f:
            f.write("<sensml xmlns='urn:ietf:params:xml:ns:senml'>" + xml + "</sensml>")
        subprocess.run(["build/wmctl", "exi", "encode", "--schema", xsd, src, out], check=True)
        with open(out, "rb") as f: return f.read()

def pubrel(pid): return packet(0x62, struct.pack(">H", pid))

def disconnect(expiry=None):
    return packet(0xE0, bytes([0]) + props([(0x11, expiry)] if expiry is not None else []))

def steps(cfg, items):
    out = bytearray([cfg])
    for conn, d, close, frame in items:
        for i in range(0, len(frame), 255) or [0]:
            part = frame[i:i + 255]
            head = conn if i == 0 else conn & ~RELOAD
            out += bytes([head | d << 1 | (4 if close and i == 0 else 0), len(part)]) + part
    return bytes(out)

B = 0x0F000000
seeds = {
    # own identifier + N1, left with a session, resumed by the other connection
    "resume_own_sid": steps(0x0E, [
        (0, C2U, 0, connect("c1", True, 300)), (0, U2C, 0, connack()),
        (0, C2U, 0, subscribe(1, "t/#", sid=5, nbhd="N1")), (0, U2C, 0, suback(1)),
        (0, C2U, 0, disconnect()),
        (1, C2U, 0, connect("c1", False, 300)), (1, U2C, 0, connack(True)),
        (1, U2C, 0, publish("t/a", [5], "p_in", 1, 1)), (1, U2C, 0, publish("t/a", [5], "far", 1, 2)),
        (1, U2C, 0, publish("t/a", [5], None, 2, 3)), (1, U2C, 0, pubrel(3)),
        (1, C2U, 0, unsubscribe(2, "t/#"))]),
    # proxy identifier, overlapping plain one, prefilter on, alias-only deliveries
    "proxy_sid_prefilter": steps(0x03, [
        (0, C2U, 0, connect("c2", True, 0xFFFFFFFF)), (0, U2C, 0, connack(pr=[(0x22, 4)])),
        (0, C2U, 0, subscribe(1, "u/+", nbhd="N2")), (0, U2C, 0, suback(1)),
        (0, C2U, 0, subscribe(2, "u/#", sid=9)), (0, U2C, 0, suback(2)),
        (0, U2C, 0, publish("u/x", [B + 1, 9], "far", 1, 1, alias=1)),
        (0, U2C, 0, publish("", [B + 1], "sq1", 0, alias=1)),
        (0, C2U, 0, publish("u/x", (), "far", 1, 7)), (0, C2U, 0, publish("v", (), None, 2, 8)),
        (0, C2U, 1, connect("c2", False, 10)), (0, U2C, 0, connack(True)),
        (0, U2C, 0, publish("u/x", [B + 1], "far", 0))]),
    # a resumed session never seen (incomplete), then Clean Start 1, full table
    "unknown_then_clean": steps(0x00, [
        (0, C2U, 0, connect("c3", False, 60)), (0, U2C, 0, connack(True)),
        (0, U2C, 0, publish("w", [3], "p_in", 1, 1)), (0, U2C, 0, publish("w", [B], "p_in", 1, 2)),
        (1, C2U, 0, connect("c4", True, 60)), (1, U2C, 0, connack()),
        (1, C2U, 0, subscribe(1, "w", nbhd="N1")), (1, U2C, 0, suback(1, 0x80)),
        (0, C2U, 1, connect("c3", True, 60)), (0, U2C, 0, connack(pr=[(0x11, 5)], assigned="assigned")),
        (0, C2U, 0, subscribe(3, "w", sid=3)), (0, U2C, 0, suback(3)), (0, C2U, 0, disconnect(0))]),
    # xpath SUBSCRIBE held for its compile with a PINGREQ and a PUBLISH behind it, then
    # content-filtered deliveries (one passes, one is withheld), an xpath + nbhd one, and
    # a second connection sharing the text
    "content_hold": steps(0x0E, [
        (0, C2U, 0, connect("c5", True, 60)), (0, U2C, 0, connack()),
        (0, C2U, 0, subscribe(1, "x/#", xpath="//s:senml[@v > 10]") + bytes([0xC0, 0]) +
         publish("x/p", (), None, 1, 4)),
        (0, U2C, 0, suback(1)),
        (0, U2C, 0, publish("x/a", [B], None, 1, 1, exi=senml("<senml n='t' v='30'/>"))),
        (0, U2C, 0, publish("x/a", [B], None, 2, 2, exi=senml("<senml n='t' u='V' v='3'/>"))),
        (0, U2C, 0, pubrel(2)),
        (0, C2U, 0, subscribe(2, "y", nbhd="N1", xpath="//s:senml[@u = 'Cel']")), (0, U2C, 0, suback(2)),
        (0, U2C, 0, publish("y", [B + 1], "sq1", 0, exi=senml("<senml n='t' u='Cel' v='21.5'/>"))),
        (1, C2U, 0, connect("c6", True, 0)), (1, U2C, 0, connack()),
        (1, C2U, 0, subscribe(1, "x/#", xpath="//s:senml[@v > 10]")), (1, U2C, 0, suback(1)),
        (1, U2C, 0, publish("x/b", [B], None, 0, exi=b"\x80\x40")),
        (0, C2U, 0, unsubscribe(3, "x/#"))]),
    # a text that compiles for no schema, one outside the subset, then a reload (bit 3)
    "content_refused_reload": steps(0x4E, [
        (0, C2U, 0, connect("c7", True, 60)), (0, U2C, 0, connack()),
        (0, C2U, 0, subscribe(1, "z", xpath="//q:nope[@v > 1]")),
        (0, C2U, 0, subscribe(2, "z", xpath="//s:senml[following::x]")),
        (0, C2U, 0, subscribe(3, "z", sid=7, xpath="//s:senml[starts-with(@bn, 'urn')]")),
        (0, U2C, 0, suback(3)),
        (0 | RELOAD, U2C, 0, publish("z", [7], None, 0, exi=senml("<senml bn='urn:a' n='t' v='1'/>"))),
        (0, U2C, 0, publish("z", [7], None, 0, exi=senml("<senml bn='x' n='t' v='1'/>")))]),
}
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f: f.write(data)
