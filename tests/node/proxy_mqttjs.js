// A third, independent MQTT v5 client for the proxy's transparency test:
// MQTT.js (npm "mqtt", protocolVersion 5). Runs one fixed scenario against
// HOST:PORT and prints what each client observed, one line per delivery, in
// an order that does not depend on timing; proxy_mqttjs.sh runs it straight
// to mosquitto and through wirematch-proxy and requires the same lines.
// Scenario (topics under PREFIX/): QoS 0/1/2 with user properties, retained,
// topic aliases client -> broker (autoAssignTopicAlias), a subscriber that
// accepts topic aliases (topicAliasMaximum), subscription identifiers on
// overlapping subscriptions, a shared subscription, a will.
// usage: node proxy_mqttjs.js HOST PORT PREFIX   (exit 0 if every step completed)
'use strict';
const mqtt = require('mqtt');
const [host, port, pre] = process.argv.slice(2);
const url = `mqtt://${host}:${port}`;
const lines = [];
const fail = (m) => { console.log('FAIL ' + m); process.exit(1); };
setTimeout(() => fail('scenario timed out'), 40000).unref();

function connect(id, extra = {}) {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { protocolVersion: 5, clientId: `${pre}-${id}`, reconnectPeriod: 0,
                                  connectTimeout: 5000, ...extra });
    c.once('connect', () => resolve(c));
    c.once('error', reject);
  });
}
const sub = (c, f, opts = {}) => c.subscribeAsync(f.startsWith('$') ? f.replace('PRE', pre) : `${pre}/${f}`, { qos: 1, ...opts });
const pub = (c, t, m, opts = {}) => c.publishAsync(`${pre}/${t}`, m, { qos: 1, ...opts });

function collector(c, who, n) {
  return new Promise((resolve) => {
    const got = [];
    const timer = setTimeout(() => resolve(got), 4000);
    c.on('message', (topic, payload, packet) => {
      const p = packet.properties || {};
      const sid = [].concat(p.subscriptionIdentifier || []).sort((a, b) => a - b).join(',');
      const up = Object.entries(p.userProperties || {}).map(([k, v]) => `${k}:${v}`).join(',');
      got.push(`${who} got ${topic.replace(pre, 'PRE')} q${packet.qos} r${packet.retain ? 1 : 0} sid=${sid} up=${up} ${payload.toString().slice(0, 40)}`);
      if (got.length === n) { clearTimeout(timer); setTimeout(() => resolve(got), 300); }
    });
  });
}

(async () => {
  const p = await connect('pub', { properties: { topicAliasMaximum: 0 }, autoAssignTopicAlias: true });
  let aliasOnly = 0;   // PUBLISH frames sent with an alias and an empty topic
  p.on('packetsend', (pk) => { if (pk.cmd === 'publish' && pk.properties && pk.properties.topicAlias && !pk.topic) aliasOnly++; });

  // QoS, user properties, client -> broker topic aliases (MQTT.js assigns them: the broker allows 10)
  const q = await connect('qos', { properties: { topicAliasMaximum: 10 } });
  await sub(q, 'qos/#', { qos: 2 });
  let done = collector(q, 'qos', 6);
  for (const [i, qos] of [[0, 0], [1, 1], [2, 2], [3, 1], [4, 2], [5, 0]])
    await pub(p, 'qos/same', `m${i}`, { qos, properties: { userProperties: { n: String(i) } } });
  lines.push(...(await done).sort());
  lines.push(`alias-only publications: ${aliasOnly > 0 ? 'yes' : 'no'}`);
  await q.endAsync();

  // retained
  await pub(p, 'ret', 'kept', { retain: true, properties: { userProperties: { k: 'v' } } });
  const r = await connect('late');
  done = collector(r, 'late', 1);
  await sub(r, 'ret');
  lines.push(...await done);
  await pub(p, 'ret', '', { retain: true });
  await r.endAsync();

  // overlapping subscriptions with identifiers
  const o = await connect('ov');
  await sub(o, 'ov/#', { properties: { subscriptionIdentifier: 1 } });
  await sub(o, 'ov/+', { properties: { subscriptionIdentifier: 2 } });
  done = collector(o, 'ov', 2);
  await pub(p, 'ov/a', 'overlap');
  lines.push(...(await done).sort());
  await o.endAsync();

  // shared subscription: 20 messages, each delivered once over the two members
  const g1 = await connect('g1'), g2 = await connect('g2');
  await sub(g1, `$share/g/PRE/shared`);
  await sub(g2, `$share/g/PRE/shared`);
  const d1 = collector(g1, 'g1', 20), d2 = collector(g2, 'g2', 20);
  for (let i = 0; i < 20; i++) await pub(p, 'shared', `s${i}`);
  const total = (await d1).length + (await d2).length;
  lines.push(`shared total=${total}`);
  await g1.endAsync(); await g2.endAsync();

  // a will, published when its client goes away without DISCONNECT 0x00
  const watch = await connect('watch');
  await sub(watch, 'will');
  done = collector(watch, 'watch', 1);
  const w = await connect('will', { will: { topic: `${pre}/will`, payload: 'gone', qos: 1,
                                            properties: { userProperties: { why: 'test' } } } });
  w.stream.destroy();   // abnormal end: no DISCONNECT
  lines.push(...await done);
  await watch.endAsync();
  await p.endAsync();

  for (const l of lines) console.log(l);
  console.log('done');
  process.exit(0);
})().catch((e) => fail(String(e && e.stack || e)));
