#!/usr/bin/env python3
"""Random SenML packs for the content-filter integration tests, with their
expected answers from an independent XPath engine.

usage: senml_docs.py DIR N SEED WMCTL XSD QUERY...
Writes DIR/dNN.xml (seeded random RFC 8428 packs, 1..5 records), DIR/dNN.exi
(encoded by `WMCTL exi encode --schema XSD --header-options`), DIR/dNN.strict.exi
(the same, strict and without an options header: what constrained devices
and exificient.js send, readable only with out-of-band options) and
DIR/refs.json: for each document, one boolean per QUERY, the answer of
libxml2's own XPath (`xmllint --shell`, prefix s bound to the SenML
namespace) on the SOURCE XML — not on anything our decoder produced."""
import json
import random
import subprocess
import sys

out, n, seed, wmctl, xsd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
queries = sys.argv[6:]
NS = "urn:ietf:params:xml:ns:senml"
rnd = random.Random(seed)
names = ["temperature", "humidity", "voltage", "temp-inside", "current", "pressure"]
units = ["Cel", "%RH", "V", "A", "Pa"]
refs = []
for i in range(n):
    recs = []
    for k in range(rnd.randint(1, 5)):
        a = ' bn="urn:dev:ow:%08x:"' % rnd.getrandbits(32) if k == 0 else ""
        v = rnd.choice([rnd.randint(-300, 60), round(rnd.uniform(-150, 60), 1)])
        recs.append('<senml%s n="%s" u="%s" v="%s"/>' % (a, rnd.choice(names), rnd.choice(units), v))
    xml = "%s/d%02d.xml" % (out, i)
    with open(xml, "w") as f:
        f.write('<sensml xmlns="%s">%s</sensml>' % (NS, "".join(recs)))
    subprocess.run([wmctl, "exi", "encode", "--schema", xsd, "--header-options", xml, "%s/d%02d.exi" % (out, i)],
                   check=True)
    subprocess.run([wmctl, "exi", "encode", "--schema", xsd, "--strict", xml, "%s/d%02d.strict.exi" % (out, i)],
                   check=True)
    script = "setns s=%s\n" % NS + "".join("xpath boolean(%s)\n" % q for q in queries)
    r = subprocess.run(["xmllint", "--shell", xml], input=script, capture_output=True, text=True, check=True)
    ans = [line.split("Boolean : ")[1].split()[0] == "true" for line in r.stdout.split("\n") if "Boolean : " in line]
    if len(ans) != len(queries):
        sys.exit("xmllint gave %d answers for %s: %s" % (len(ans), xml, r.stdout))
    refs.append(ans)
with open("%s/refs.json" % out, "w") as f:
    json.dump(refs, f)
