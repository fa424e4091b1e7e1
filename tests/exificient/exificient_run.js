// exificient.js (npm "exificient.js" 0.0.5, pinned in package-lock.json) as
// the independent EXI implementation of wirematch's cross-check
// (tests/integration/exi_exificient.sh) and benchmark (perf/exi_vs_exificient.sh).
//
//   node exificient_run.js gen N SEED OUT_DIR [--true-only]   random SenML packs as XML
//   node exificient_run.js decode GRAMMAR.json IN_DIR OUT_DIR [--byte-aligned]  every *.exi -> *.xml
//   node exificient_run.js encode GRAMMAR.json IN_DIR OUT_DIR [--byte-aligned]  every *.xml -> *.exi
//   node exificient_run.js compare A_DIR B_DIR                 same infoset for every A/*.xml
//   node exificient_run.js bench GRAMMAR.json IN_DIR SECONDS   docs/s decoding IN_DIR/*.exi
//
// GRAMMAR.json is `wmctl exi grammar --schema X.xsd --format exificient`.
// exificient.js 0.0.5 exports only its EXI4JSON entry points and logs every
// event with console.log; its EXIDecoder/EXIEncoder/XMLEventHandler classes
// are taken from the package's own dist file, evaluated with a silent console
// (the library's code is not modified).
'use strict';
const fs = require('fs');
const path = require('path');

function loadExificient() {
  const file = require.resolve('exificient.js/dist/exificient.js');
  const src = fs.readFileSync(file, 'utf8');
  const quiet = { log() {}, warn() {}, error() {}, info() {} };
  const f = new Function('exports', 'console', 'window', 'javax', 'require',
    src + '\nreturn { EXIDecoder, EXIEncoder, XMLEventHandler, Grammars };');
  return f({}, quiet, undefined, undefined, require);
}

function loadGrammars(X, file) {
  return X.Grammars.fromJson(JSON.parse(fs.readFileSync(file, 'utf8')));
}

// ---------------------------------------------------------------- generator

function rng(seed) {
  let s = BigInt.asUintN(64, BigInt(seed) || 1n);
  return () => {
    s ^= BigInt.asUintN(64, s << 13n); s ^= s >> 7n; s ^= BigInt.asUintN(64, s << 17n);
    return Number(s & 0xffffffffn);
  };
}

// RFC 8428 SenML packs (namespace urn:ietf:params:xml:ns:senml, schema
// senml.gen.xsd) with every attribute of the schema. Kept clear of what
// exificient.js 0.0.5 gets wrong, so that a difference is ours to explain:
// - its code widths for 35..64 entries are 7 bits instead of 6 (getCodeLength):
//   at most 10 records, values from small pools, so the global value table
//   stays <= 26 entries and every other table or production list < 35
//   (checked below: a document that could reach 35 strings is an error);
// - its float encoder rounds to 6 fraction digits (MAX_EXI_FLOAT_DIGITS) and
//   its integer encoder uses 32-bit shifts: numbers have <= 4 fraction digits
//   and mantissas < 2^31;
// - its boolean encoder writes `new Boolean(value)`, always true: with
//   --true-only (documents exificient.js encodes) vb is always "true".
function genPack(next, trueOnly) {
  const names = ['temperature', 'humidity', 'voltage', 'current', 'lon', 'lat', 'pressure'];
  const units = ['Cel', '%RH', 'V', 'A', 'lon', 'lat', 'Pa'];
  const num = (maxInt) => {
    const frac = next() % 5;
    const m = (next() % (2 * maxInt * 10 ** frac + 1)) - maxInt * 10 ** frac;
    return frac ? (m / 10 ** frac).toFixed(frac) : String(m);
  };
  const records = 1 + next() % 10;
  const strings = new Set();
  let xml = '<sensml xmlns="urn:ietf:params:xml:ns:senml">';
  for (let r = 0; r < records; r++) {
    const a = [];
    const x = next();
    const k = x % 7;
    if (r === 0) {
      a.push(['bn', 'urn:dev:ow:' + next().toString(16).padStart(8, '0') + ':']);
      a.push(['bt', String(1600000000 + next() % 100000000)]);
      if (x & 8) a.push(['bver', String(next() % 20)]);
      if (x & 16) a.push(['bu', ['Cel', 'V', 'W'][next() % 3]]);
      if (x & 32) a.push(['bv', num(1000)]);
      if (x & 64) a.push(['bs', num(1000)]);
    }
    a.push(['n', names[k]]);
    if (x & 128) a.push(['t', String(-(next() % 600))]);
    if (x & 256) a.push(['s', num(10000)]);
    if (x & 512) a.push(['ut', String(next() % 3600)]);
    a.push(['u', units[k]]);
    switch ((x >>> 10) % 6) {
      case 0: a.push(['vb', trueOnly || (x & 0x10000) ? 'true' : 'false']); break;
      case 1: a.push(['vs', 'state-' + (next() % 50)]); break;
      case 2: a.push(['vd', 'ZGF0YQ' + (next() % 8)]); break;
      default: a.push(['v', num(100000)]);
    }
    for (const [n, v] of a) if (['bn', 'bu', 'n', 'u', 'vs', 'vd'].includes(n)) strings.add(n + '=' + v);
    xml += '<senml' + a.map(([n, v]) => ` ${n}="${v}"`).join('') + '/>';
  }
  if (new Set([...strings].map((s) => s.slice(s.indexOf('=') + 1))).size > 34) throw new Error('string table would reach 35');
  return xml + '</sensml>';
}

// ---------------------------------------------------------------- XML

const ENT = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
function unescape(s) {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e) =>
    e[0] === '#' ? String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)) : ENT[e]);
}

// A small namespace-aware XML reader for the documents of this test
// (elements, attributes, text; no DTD, CDATA, comments or PIs are produced by
// either side): returns the infoset tree of the root element.
function parseXml(text) {
  const re = /<\?[^]*?\?>|<\/([^\s>]+)\s*>|<([^\s/>]+)((?:\s+[^\s=]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|([^<]+)/g;
  const stack = [{ ns: { xml: 'http://www.w3.org/XML/1998/namespace' }, children: [] }];
  let m;
  while ((m = re.exec(text))) {
    if (m[0].startsWith('<?')) continue;
    const top = stack[stack.length - 1];
    if (m[1] !== undefined) {
      if (stack.length < 2 || top.qname !== m[1]) throw new Error('mismatched </' + m[1] + '>');
      stack.pop();
    } else if (m[2] !== undefined) {
      const ns = Object.assign({}, top.ns);
      const raw = [];
      const are = /([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
      let a;
      while ((a = are.exec(m[3]))) {
        const v = unescape(a[2] !== undefined ? a[2] : a[3]);
        if (a[1] === 'xmlns') ns[''] = v;
        else if (a[1].startsWith('xmlns:')) ns[a[1].slice(6)] = v;
        else raw.push([a[1], v]);
      }
      const expand = (q, isAttr) => {
        const i = q.indexOf(':');
        if (i < 0) return '{' + (isAttr ? '' : (ns[''] || '')) + '}' + q;
        const p = q.slice(0, i);
        if (!(p in ns)) throw new Error('unbound prefix ' + p);
        return '{' + ns[p] + '}' + q.slice(i + 1);
      };
      const el = { qname: m[2], name: expand(m[2], false), attrs: {}, children: [], text: '', ns };
      for (const [k, v] of raw) el.attrs[expand(k, true)] = v;
      top.children.push(el);
      if (!m[4]) stack.push(el);
    } else if (stack.length > 1) top.text += unescape(m[5]);
    else if (m[5].trim()) throw new Error('text outside the root element');
  }
  if (stack.length !== 1 || stack[0].children.length !== 1) throw new Error('not one well-formed root element');
  return stack[0].children[0];
}

function sameValue(a, b) {
  if (a === b) return true;
  const num = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
  return num.test(a) && num.test(b) && parseFloat(a) === parseFloat(b);
}

// Infoset equality: expanded names, attribute values (numbers by value),
// character content (trimmed), children in order. Returns null or the difference.
function diff(a, b, where) {
  where = where + '/' + a.name;
  if (a.name !== b.name) return `${where}: element ${a.name} vs ${b.name}`;
  const ka = Object.keys(a.attrs).sort(), kb = Object.keys(b.attrs).sort();
  if (ka.join() !== kb.join()) return `${where}: attributes [${ka}] vs [${kb}]`;
  for (const k of ka) if (!sameValue(a.attrs[k], b.attrs[k])) return `${where}/@${k}: "${a.attrs[k]}" vs "${b.attrs[k]}"`;
  if (!sameValue(a.text.trim(), b.text.trim())) return `${where}: text "${a.text.trim()}" vs "${b.text.trim()}"`;
  if (a.children.length !== b.children.length) return `${where}: ${a.children.length} vs ${b.children.length} children`;
  for (let i = 0; i < a.children.length; i++) {
    const d = diff(a.children[i], b.children[i], where);
    if (d) return d;
  }
  return null;
}

// ---------------------------------------------------------------- exificient.js

// exificient.js's own XML walk (EXIEncoder.processXMLElement) needs a DOM;
// this does the same over our parsed tree: attributes sorted by local name,
// namespace declarations skipped, trimmed non-empty text as characters.
function encodeTree(enc, el) {
  const split = (n) => { const i = n.indexOf('}'); return [n.slice(1, i), n.slice(i + 1)]; };
  const [ns, local] = split(el.name);
  enc.startElement(ns, local);
  const attrs = Object.keys(el.attrs).map((k) => [...split(k), el.attrs[k]]).sort((x, y) => (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
  for (const [ans, al, v] of attrs) enc.attribute(ans, al, v);
  if (el.text.trim()) enc.characters(el.text.trim());
  for (const c of el.children) encodeTree(enc, c);
  enc.endElement();
}

function files(dir, ext) {
  return fs.readdirSync(dir).filter((f) => f.endsWith(ext)).sort();
}

function main(argv) {
  const cmd = argv[0];
  if (cmd === 'gen') {
    const n = parseInt(argv[1], 10), next = rng(argv[2]), out = argv[3], trueOnly = argv[4] === '--true-only';
    fs.mkdirSync(out, { recursive: true });
    for (let i = 0; i < n; i++) fs.writeFileSync(path.join(out, `doc${String(i).padStart(4, '0')}.xml`), genPack(next, trueOnly));
    return 0;
  }
  if (cmd === 'compare') {
    let n = 0;
    for (const f of files(argv[1], '.xml')) {
      const a = parseXml(fs.readFileSync(path.join(argv[1], f), 'utf8'));
      const b = parseXml(fs.readFileSync(path.join(argv[2], f), 'utf8'));
      const d = diff(a, b, '');
      if (d) { console.log(`${f}: ${d}`); return 1; }
      n++;
    }
    console.log(`${n} documents with equal infosets`);
    return n > 0 ? 0 : 1;
  }
  const X = loadExificient();
  const grammars = loadGrammars(X, argv[1]);
  // alignment is out of band: exificient.js writes and reads no options header
  const opts = { byteAligned: argv[4] === '--byte-aligned' };
  if (cmd === 'decode') {
    fs.mkdirSync(argv[3], { recursive: true });
    const dec = new X.EXIDecoder(grammars, opts);
    const h = new X.XMLEventHandler();
    dec.registerEventHandler(h);
    for (const f of files(argv[2], '.exi')) {
      try {
        dec.decode(new Uint8Array(fs.readFileSync(path.join(argv[2], f))));
      } catch (e) {
        console.log(`${f}: exificient.js: ${e.message}`);
        return 1;
      }
      fs.writeFileSync(path.join(argv[3], f.replace(/\.exi$/, '.xml')), h.getXML());
    }
    return 0;
  }
  if (cmd === 'encode') {
    fs.mkdirSync(argv[3], { recursive: true });
    const enc = new X.EXIEncoder(grammars, opts);
    for (const f of files(argv[2], '.xml')) {
      const tree = parseXml(fs.readFileSync(path.join(argv[2], f), 'utf8'));
      try {
        enc.startDocument();
        encodeTree(enc, tree);
        enc.endDocument();
      } catch (e) {
        console.log(`${f}: exificient.js: ${e.message}`);
        return 1;
      }
      fs.writeFileSync(path.join(argv[3], f.replace(/\.xml$/, '.exi')), Buffer.from(enc.getUint8Array().slice(0, enc.getUint8ArrayLength())));
    }
    return 0;
  }
  if (cmd === 'bench') {
    // documents/s decoding every IN_DIR/*.exi in turn, for SECONDS per
    // handler: a handler that counts events (what a filter consumes) and
    // exificient.js's XMLEventHandler (XML text, like `wmctl exi decode`)
    const docs = files(argv[2], '.exi').map((f) => new Uint8Array(fs.readFileSync(path.join(argv[2], f))));
    const secs = parseFloat(argv[3] || '3');
    const counter = { n: 0, startDocument() {}, endDocument() {}, startElement() { this.n++; }, endElement() { this.n++; },
      attribute() { this.n++; }, characters() { this.n++; } };
    const res = {};
    for (const [name, h] of [['events', counter], ['xml', new X.XMLEventHandler()]]) {
      const dec = new X.EXIDecoder(grammars);
      dec.registerEventHandler(h);
      for (let i = 0; i < Math.min(docs.length, 2000); i++) dec.decode(docs[i % docs.length]); // warm-up (JIT)
      let n = 0, bytes = 0;
      const t0 = process.cpuUsage();
      let el = 0;
      while (el < secs * 1e6) {
        for (let k = 0; k < 256; k++, n++) { const d = docs[n % docs.length]; dec.decode(d); bytes += d.length; }
        const u = process.cpuUsage(t0);
        el = u.user + u.system;
      }
      res[name] = { docs_per_s: n / (el / 1e6), mb_per_s: bytes / (el / 1e6) / 1e6 };
    }
    console.log(JSON.stringify(res));
    return 0;
  }
  console.error('usage: exificient_run.js gen|decode|encode|compare|bench ...');
  return 2;
}

process.exitCode = main(process.argv.slice(2));
