// Spatial isolation through wirematch-proxy (--resolution), driven by MQTT.js
// (npm "mqtt", protocolVersion 5), same protocol as proxy_paho's spatial
// mode so that proxy_spatial_check.py judges both: one subscriber per NBHD on
// PREFIX/sp/# with that `nbhd` User Property (QoS 1; the second with its own
// Subscription Identifier 7; the first with a persistent session, away while
// everything is published, resumed afterwards with Clean Start 0), then N
// publications (QoS 0/1/2, a `peid` from the file PEIDS or none; random with
// SEED; the publisher lets MQTT.js assign topic aliases). Also two members
// of a shared subscription $share/g/PREFIX/sp/# with the second NBHD: each
// publication goes to one of them, so together they must get exactly that
// neighborhood's. Prints "PUB i qos peid|-", "OFFLINE nbhd",
// "SUBSCRIBER share:nbhd" and "GOT nbhd|share:nbhd i sids|-".
// usage: node proxy_spatial_mqttjs.js HOST PORT PREFIX PEIDS N SEED NBHD...
'use strict';
const fs = require('fs');
const mqtt = require('mqtt');
const [host, port, pre, peidFile, nStr, seedStr, ...nbhds] = process.argv.slice(2);
const url = `mqtt://${host}:${port}`;
const fail = (m) => { console.log('FAIL ' + m); process.exit(1); };
setTimeout(() => fail('timed out'), 100000).unref();
const peids = fs.readFileSync(peidFile, 'utf8').split('\n').filter((l) => l);
const n = Number(nStr);
let seed = Number(seedStr) >>> 0;
const rnd = (k) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % k; };

// Every message of c until 3 s pass without one (counted from `start()`).
// Listening starts at once: a resumed session's queued messages can arrive
// in the same read as the CONNACK, before any `await` returns.
function collect(c, who) {
  const got = [];
  let timer = null, done = null;
  const arm = () => { clearTimeout(timer); timer = setTimeout(() => done(got), 3000); };
  c.on('message', (topic, payload, packet) => {
    const sid = [].concat((packet.properties || {}).subscriptionIdentifier || []).join(',');
    got.push(`GOT ${who} ${payload.toString()} ${sid || '-'}`);
    if (done) arm();
  });
  return () => new Promise((resolve) => { done = resolve; arm(); });
}

// [client, CONNACK, start(): promise of its deliveries] for clientId PREFIX-id.
function connect(id, extra = {}, who = id) {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { protocolVersion: 5, clientId: `${pre}-${id}`, reconnectPeriod: 0,
                                  connectTimeout: 5000, ...extra });
    const start = collect(c, who);
    c.once('connect', (ack) => resolve([c, ack, start]));
    c.once('error', reject);
  });
}

(async () => {
  const persist = { clean: false, properties: { sessionExpiryInterval: 300 } };
  const subs = [], starts = [];
  for (let i = 0; i < nbhds.length; i++) {
    const [c, , start] = await connect(`sp-${nbhds[i]}`, i === 0 ? persist : {}, nbhds[i]);
    const properties = { userProperties: { nbhd: nbhds[i] } };
    if (i === 1) properties.subscriptionIdentifier = 7;
    const granted = await c.subscribeAsync(`${pre}/sp/#`, { qos: 1, properties });
    if (granted[0].qos !== 1) fail(`SUBACK ${granted[0].qos} for ${nbhds[i]}`);
    subs.push(c);
    starts.push(start);
  }
  const members = [];
  for (const id of ['g1', 'g2']) {
    const [c, , start] = await connect(`sp-${id}`, {}, `share:${nbhds[1]}`);
    starts.push(start);
    const granted = await c.subscribeAsync(`$share/g/${pre}/sp/#`,
                                           { qos: 1, properties: { userProperties: { nbhd: nbhds[1] } } });
    if (granted[0].qos !== 1) fail(`SUBACK ${granted[0].qos} for the shared subscription`);
    members.push(c);
  }
  console.log(`SUBSCRIBER share:${nbhds[1]}`);
  await subs[0].endAsync();
  console.log(`OFFLINE ${nbhds[0]}`);
  const [p] = await connect('sp-pub', { autoAssignTopicAlias: true });
  for (let i = 0; i < n; i++) {
    const qos = rnd(3), r = rnd(10);
    const peid = r === 0 ? null : peids[rnd(peids.length)];
    const properties = peid ? { userProperties: { peid } } : {};
    await p.publishAsync(`${pre}/sp/t`, String(i), { qos, properties });
    console.log(`PUB ${i} ${qos} ${peid || '-'}`);
  }
  const drains = starts.slice(1).map((start) => start());   // collecting since they connected
  const [back, ack, startBack] = await connect(`sp-${nbhds[0]}`, persist, nbhds[0]);
  if (!ack.sessionPresent) fail('the persistent session was not resumed');
  const lines = [await startBack(), ...(await Promise.all(drains))].flat();
  for (const l of lines) console.log(l);
  await back.endAsync();
  for (const c of subs.slice(1).concat(members)) await c.endAsync();
  const [gone] = await connect(`sp-${nbhds[0]}`, { clean: true });   // clean the session away
  await gone.endAsync();
  await p.endAsync();
  console.log('done failures=0');
  process.exit(0);
})().catch((e) => fail(String(e && e.stack || e)));
