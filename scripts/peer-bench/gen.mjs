// An event generator independent of events/gen: it writes a Lambda SQS
// event (the JSON Lambda hands a function: Records[] with messageId,
// receiptHandle, body, attributes, messageAttributes, md5OfBody,
// eventSource, eventSourceARN, awsRegion) from the contracts alone — agent
// task v1 (events/agenttask/schema), the sample catalog and its versions,
// the args.fault convention of the sample worker (events/doc.go) and the
// reason taxonomy — with its own JSON writer, so that the benchmarks and the
// tests see shapes the worker's code was not tuned against:
//
//   - key orders shuffled, in the body and in each record;
//   - bodies compact, spaced or pretty-printed (2 or 4 spaces, tabs), 600 to
//     1,500 bytes, args nested up to seven deep, empty arrays and objects;
//   - non-ASCII text raw or as \u escapes (emoji as surrogate pairs), in the
//     body and again in the event around it, "\/" and ASCII letters escaped
//     now and then, numbers in exponent form (schema_version 1.0 and 1e0
//     too), keys escaped, duplicate keys (the last one wins), a "fault"
//     outside args or nested in it (neither is args.fault);
//   - 0 to 10 message attributes (String, Number, Binary, custom types),
//     receive counts 1 to 5, AWSTraceHeader on some records, no FIFO fields;
//   - failing records for every reason the sample worker gives: invalid
//     JSON, schema violations, unknown tools, unsupported versions, and the
//     fault kinds (and their other spellings), retried or dead-lettered by
//     receive count under maxReceiveCount 4 (the bench's default).
//
// usage: node gen.mjs -n N [-ok PCT] [-seed S] [-out FILE] [-expect FILE]
//
// -ok is the share of records that succeed (exactly round(N*PCT/100) of
// them). It prints one JSON line: records, ok, retried, dead_lettered (by
// reason) and body sizes. -expect writes what the worker must do with each
// record under maxReceiveCount 4: {"<messageId>": "ok" | "retry" |
// "dead_letter:<reason>"}. The same arguments write the same bytes.
import { writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';

// ---- arguments ----
const args = { n: 100, ok: 90, seed: 1, out: '', expect: '' };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i].replace(/^--?/, '');
  const v = process.argv[++i];
  if (!(a in args) || v === undefined) {
    console.error('usage: node gen.mjs -n N [-ok PCT] [-seed S] [-out FILE] [-expect FILE]');
    process.exit(2);
  }
  args[a] = typeof args[a] === 'number' ? Number(v) : v;
}
if (!Number.isInteger(args.n) || args.n < 1 || !(args.ok >= 0 && args.ok <= 100) || !Number.isInteger(args.seed)) {
  console.error('gen: -n must be a positive integer, -ok 0..100, -seed an integer');
  process.exit(2);
}

// ---- seeded randomness (mulberry32) ----
let state = args.seed >>> 0 || 0x9e3779b9;
const rand = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const chance = (p) => rand() < p;
const shuffle = (xs) => {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
};
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
const b64chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(0, 3)]}${hex(3)}-${hex(12)}`;

// ---- a JSON writer of its own ----
// Obj keeps its members in the order given, duplicates included; Num is a
// number written as it stands ("1.5e3").
class Obj { constructor(pairs) { this.pairs = pairs; } }
class Num { constructor(raw) { this.raw = raw; } }
// EscKey is a member name written with its first "a" as \u0061.
class EscKey { constructor(name) { this.name = name; } }
const keyName = (k) => (k instanceof EscKey ? k.name : k);
const obj = (o) => new Obj(Object.entries(o));

// A style: indent ('' compact), colon and comma spacing, and how strings
// are escaped: non-ASCII as \u (ascii), "/" as "\/" (slash), a share of
// ASCII letters as \u00XX (letters), hex digits upper case (upper).
const styles = {
  compact: () => ({ indent: '', colon: ':', comma: ',', ascii: false, slash: false, letters: 0, upper: false }),
  random: () => {
    const indent = pick(['', '', '', '  ', '    ', '\t']);
    return {
      indent,
      colon: indent ? pick([': ', ':']) : pick([':', ': ', ' : ']),
      comma: indent ? ',' : pick([',', ', ', ' , ']),
      ascii: chance(0.35),
      slash: chance(0.15),
      letters: chance(0.1) ? 0.03 : 0,
      upper: chance(0.3),
    };
  },
};

const shortEsc = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };
function quote(s, st) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const u = () => {
      const h = c.toString(16).padStart(4, '0');
      return '\\u' + (st.upper ? h.toUpperCase() : h);
    };
    if (shortEsc[c] !== undefined) out += shortEsc[c];
    else if (c < 0x20) out += u();
    else if (c === 0x2f && st.slash) out += '\\/';
    else if (c >= 0x7f && st.ascii) out += u(); // a surrogate pair is two escapes
    else if (st.letters && ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) && chance(st.letters)) out += u();
    else out += s[i];
  }
  return out + '"';
}

function write(v, st, depth = 0) {
  if (v === null) return 'null';
  if (v === true || v === false) return String(v);
  if (typeof v === 'number') return String(v);
  if (v instanceof Num) return v.raw;
  if (typeof v === 'string') return quote(v, st);
  const nl = st.indent ? '\n' + st.indent.repeat(depth + 1) : '';
  const end = st.indent ? '\n' + st.indent.repeat(depth) : '';
  if (Array.isArray(v)) {
    if (v.length === 0) return st.indent && chance(0.3) ? '[ ]' : '[]';
    return '[' + v.map((x) => nl + write(x, st, depth + 1)).join(st.comma) + end + ']';
  }
  const pairs = v instanceof Obj ? v.pairs : Object.entries(v);
  if (pairs.length === 0) return st.indent && chance(0.3) ? '{ }' : '{}';
  const key = (k) => (k instanceof EscKey ? quote(k.name, st).replace('a', '\\u0061') : quote(k, st));
  return '{' + pairs.map(([k, x]) => nl + key(k) + st.colon + write(x, st, depth + 1)).join(st.comma) + end + '}';
}

// ---- text ----
const words = ('retry budget visibility timeout partial batch failure idempotency ledger receipt poison ' +
  'triage redrive dead letter queue agent tool schema version tenant trace span latency throughput ' +
  'shard replica region quorum lease backoff jitter circuit breaker upstream payload digest').split(' ');
const intl = ['café', 'naïve façade', 'Zürich Straße', 'São Paulo', 'Ελληνικά κείμενα', 'Кириллица', '日本語のテキスト',
  '中文搜索', '한국어', 'עברית', 'العربية', 'हिन्दी', 'emoji 😀', 'rocket 🚀 launch', '✓ done', '€ 12,50', 'Ω ≈ ç √ ∫',
  'flag 🇫🇷', 'family 👨‍👩‍👧', 'line\u2028separator', 'tab\there', 'quote "inside"', 'back\\slash', 'path/to/file'];
const sentence = (n) => Array.from({ length: n }, () => (chance(0.12) ? pick(intl) : pick(words))).join(' ');
const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';

// Numbers in the forms JSON allows, exponents included.
const number = () => pick([
  () => int(0, 1000),
  () => new Num(`${int(1, 9)}.${int(0, 99)}e${pick(['', '+', '-'])}${int(1, 12)}`),
  () => new Num(`${int(1, 9)}E${int(0, 5)}`),
  () => new Num(`-${int(1, 9)}.${int(1, 999)}e-${int(1, 9)}`),
  () => new Num('0e0'),
  () => new Num(`${int(0, 9)}.${int(0, 9)}${int(0, 9)}`),
  () => -int(1, 99),
  () => new Num(`6.02214076e23`),
])();

// ---- the sample catalog, from the contract ----
const tools = ['web.search', 'http.fetch', 'code.exec', 'file.read', 'file.write', 'sql.query', 'vector.search', 'email.send'];
const mutating = new Set(['file.write', 'email.send']);
const goodVersions = ['1', '2', '3', '1.0', '2.4', '3.9', '1.0.0', '1.2.3', '2.0.0', '2.10.1', '3.0.0', '3.99.99', 'v2.1.0', '2.0.0+build.7', '1.4.0+sha.5114f85'];
const badVersions = ['4.0.0', '4', '0.9.0', '0.1', '10.0.0', 'latest', 'v4.1.0', '2.0.0-rc.1', '1.2.3.4', 'two', '3.0.0-beta'];

// Nested args of each tool; ctx is a deeper context object shared by all.
const argsOf = {
  'web.search': () => ({ query: sentence(int(2, 6)), max_results: int(1, 50), locale: pick(['en-US', 'fr-FR', 'ja-JP', 'pt-BR']),
    filters: { site: chance(0.5) ? [] : ['example.com', 'docs.example.org'], freshness: pick(['day', 'week', null]), safe: chance(0.5) } }),
  'http.fetch': () => ({ url: `https://api.example.com/v${int(1, 3)}/items/${int(1, 99999)}?q=${encodeURIComponent(pick(intl))}`,
    method: pick(['GET', 'POST', 'PUT']), headers: chance(0.3) ? {} : { accept: 'application/json', 'x-request-id': uuid() },
    timeout_ms: number(), retry: { max: int(0, 3), backoff: { base_ms: new Num('2.5e2'), factor: 2 } } }),
  'code.exec': () => ({ language: pick(['python', 'javascript', 'bash']),
    source: pick(['print("héllo")\nfor i in range(3):\n\tprint(i)', 'console.log(`${1+1}`); // ✓', 'echo "a\\b" | tr a b']),
    limits: { cpu_s: number(), memory_mb: pick([128, 256, new Num('5.12e2')]) }, env: chance(0.5) ? {} : { LANG: 'C.UTF-8' } }),
  'file.read': () => ({ path: `/srv/data/${pick(['report', 'relatório', 'データ'])}-${int(1, 999)}.txt`, encoding: pick(['utf-8', 'latin1']),
    range: { offset: int(0, 4096), length: number() } }),
  'file.write': () => ({ path: `/tmp/out/${uuid()}.json`, mode: pick(['overwrite', 'append']), create_dirs: chance(0.5),
    content: { title: sentence(3), rows: [[1, 2], [], [new Num('3.0e0')]] } }),
  'sql.query': () => ({ dialect: pick(['postgres', 'sqlite']), statement: 'SELECT id, name FROM t WHERE name = $1 AND score > $2',
    params: [pick(intl), number()], max_rows: int(1, 500) }),
  'vector.search': () => ({ index: 'docs-' + int(1, 9), top_k: int(1, 20),
    vector: Array.from({ length: int(4, 12) }, () => new Num(`${pick(['', '-'])}${int(1, 9)}.${int(100, 999)}e-${int(1, 3)}`)),
    filter: { must: [{ field: 'lang', eq: pick(['en', 'fr', 'ja']) }], must_not: [] } }),
  'email.send': () => ({ to: [`${pick(['ana', 'zoë', 'li'])}@example.com`], cc: [], subject: sentence(int(2, 5)),
    body_text: sentence(int(5, 12)), attachments: chance(0.7) ? [] : [{ name: 'a.pdf', size: int(1, 99999) }] }),
};

// context: deeper nesting (up to seven levels with args), empty containers.
const context = () => ({
  step: int(1, 40),
  history: Array.from({ length: int(0, 3) }, (_, i) => ({ step: i, tool: pick(tools), ok: chance(0.8),
    detail: { tokens: { in: int(10, 9000), out: int(1, 900) }, labels: chance(0.5) ? [] : [[pick(words)], []] } })),
  meta: chance(0.3) ? {} : { origin: pick(['planner', 'executor']), weight: number() },
  notes: '',
});

// ---- faults (events/doc.go), and what each must come to ----
// maxReceiveCount 4: a failure retried inside the budget is a retry below
// receive 4 and a dead letter with its reason from receive 4 on.
const MAX_RECEIVE = 4;
const budget = (reason) => (rc) => (rc >= MAX_RECEIVE ? `dead_letter:${reason}` : 'retry');
const faults = [
  // [weight, build(tool, rc) -> {fault, expect}]
  [3, () => ({ fault: { retryable: true, status: pick([503, 429, 500, 502, 504]), error: 'upstream ' + pick(['busy', 'throttled', 'ünavailable']) }, expect: budget('budget_exhausted') })],
  [1, (tool, rc) => { // recovers from receive N on
    const n = int(2, 5);
    return { fault: obj({ retryable: true, status: 503, until_receive: n }), expect: (r) => (r >= n ? 'ok' : budget('budget_exhausted')(r)) };
  }],
  [2, (tool) => ({ fault: { kind: pick(['timeout_after_effect', 'timeout', 'effect_unknown', 'Timeout_After_Side_Effect']) },
    expect: mutating.has(tool) ? () => 'dead_letter:effect_unknown' : budget('budget_exhausted') })],
  [2, () => ({ fault: pick([{ kind: 'auth', code: pick(['AccessDenied', 'ExpiredToken', 'KMS.AccessDeniedException']) },
    { type: 'expired_token' }, { kind: 'FORBIDDEN' }, { status: 403, error: 'denied' }, { retryable: false, status: 401 }]), expect: budget('auth_config') })],
  [2, () => ({ fault: pick([{ kind: 'dependency_open', dependency: 'search-api' }, { type: 'circuit_open', dependency: 'vector-db' }]), expect: budget('dependency_open') })],
  [1, () => ({ fault: pick([{ kind: 'policy_limit' }, { type: 'limit' }]), expect: () => 'dead_letter:policy_limit' })],
  [1, () => ({ fault: pick([{ kind: 'signature_invalid' }, { kind: 'bad_signature' }]), expect: () => 'dead_letter:signature_invalid' })],
  [1, () => ({ fault: pick([{ kind: 'guardrail_reject' }, { type: 'Guardrail' }]), expect: () => 'dead_letter:guardrail_reject' })],
  [1, () => ({ fault: pick([{ kind: 'error', error: 'the tool said ' + pick(intl) }, { kind: 'unclassified' }, {}, { kind: 'mystery' }]),
    expect: () => 'dead_letter:unclassified' })],
  [0.5, () => ({ fault: { kind: 'panic' }, expect: () => 'dead_letter:unclassified' })],
  [0.5, () => ({ fault: pick(['boom', 7, [], true]), expect: () => 'dead_letter:schema_invalid' })], // a fault of the wrong shape
];

// ---- poison bodies ----
// A poison either changes the task's members (pairs: the body is then
// written and sized as a valid one is) or the written body's text (text:
// null when the change did not apply, and the task is drawn again).
const swap = (pairs, f, v) => pairs.map(([k, x]) => [k, keyName(k) === f ? v : x]);
const replaced = (b, re, to) => {
  const out = b.replace(re, to);
  return out === b ? null : out;
};
const poisons = [
  // json_invalid
  [1, () => ({ reason: 'json_invalid', text: (b) => {
    let cut = int(b.length >> 2, b.length - 2);
    if (/[\ud800-\udbff]/.test(b[cut - 1] ?? '')) cut--; // do not split a surrogate pair
    return b.slice(0, cut);
  } })],
  [0.5, () => ({ reason: 'json_invalid', text: (b) => replaced(b, /\}\s*$/, ',}') })],
  [0.5, () => ({ reason: 'json_invalid', text: (b) => b + pick([' x', '{}', ']', ' , ']) })],
  [0.5, () => ({ reason: 'json_invalid', text: (b) => replaced(b, /"tenant"/, 'tenant') })],
  [0.3, () => ({ reason: 'json_invalid', text: (b) => replaced(b, /("schema_version"\s*:\s*)[^,}\s]+/, '$1NaN') })],
  [0.3, () => ({ reason: 'json_invalid', text: (b) => replaced(b, /"run_id"/, '"run\tid"') })], // a raw tab in a string
  [0.3, () => ({ reason: 'json_invalid', text: (b) => replaced(b, /"tool"/, '"to\\xol"') })], // an invalid escape
  [0.3, () => ({ reason: 'json_invalid', text: (b) => '[' + b + ']' })], // valid JSON, not an object
  [0.2, () => ({ reason: 'json_invalid', text: () => pick(['', '   ', 'null', '"a string"', 'plain text, not JSON ' + sentence(60)]) })],
  // schema_invalid: a member missing, or of the wrong type, value or length
  [2, () => ({ reason: 'schema_invalid', pairs: (t) => {
    const f = pick(['task_id', 'run_id', 'tenant', 'idempotency_key', 'tool', 'tool_version', 'trace_id', 'created_at', 'schema_version', 'args']);
    return t.filter(([k]) => keyName(k) !== f);
  } })],
  [2, () => ({ reason: 'schema_invalid', pairs: (t) => swap(t, ...pick([
    ['task_id', ''], ['tenant', 42], ['run_id', null], ['trace_id', ['x']], ['created_at', {}], ['idempotency_key', true],
    ['schema_version', 2], ['schema_version', '1'], ['schema_version', new Num('1.5')], ['schema_version', new Num('2e0')],
    ['schema_version', new Num('1.0e-1')], ['schema_version', null], ['args', []], ['args', null], ['args', 'query=x'],
    ['args', new Num('1e3')], ['tenant', 'ü'.repeat(257)], ['tool_version', '1.'.padEnd(65, '0')],
    ['created_at', '2026-12-01T12:00:00Z'.repeat(4)], ['task_id', 'task-' + 'x'.repeat(252)],
  ])) })],
  // tool_unknown, tool_version_unsupported
  [1, () => ({ reason: 'tool_unknown', pairs: (t) => swap(t, 'tool', pick(['web.browse', 'Web.Search', 'web.search ', 'shell.exec', 'email.sent', 'sql'])) })],
  [1, () => ({ reason: 'tool_version_unsupported', pairs: (t) => swap(t, 'tool_version', pick(badVersions)) })],
];

const weighted = (table) => {
  const total = table.reduce((s, [w]) => s + w, 0);
  let r = rand() * total;
  for (const [w, f] of table) if ((r -= w) < 0) return f;
  return table[table.length - 1][1];
};

// ---- one task ----
const region = pick(['us-east-1', 'eu-west-3', 'ap-northeast-1', 'sa-east-1']);
const account = String(int(100000000000, 999999999999));
const queue = pick(['agent-tasks', 'agentdlq-hot', 'research-agent-tools']);
const arn = `arn:aws:sqs:${region}:${account}:${queue}`;
const tenants = ['acme', 'globex', 'initech', 'umbrella-ü', 'société-générale', '株式会社', 'tenant-🚀'];
const t0 = 1796047200000 + int(0, 86400000);

// The members of a valid task, as pairs, in a shuffled order, with extras:
// unknown members, a "fault" outside args, an escaped key, a duplicate.
function taskPairs(i, tool, argsVal, st) {
  const run = `run-${hex(6)}`;
  const task = `task-${String(i).padStart(6, '0')}-${hex(4)}`;
  const pairs = [
    ['task_id', task],
    ['run_id', run],
    // 256 characters is within maxLength, though more bytes
    ['tenant', chance(0.1) ? 'ü'.repeat(st.ascii ? int(20, 60) : int(100, 256)) : pick(tenants)],
    ['idempotency_key', `${run}:${task}:${hex(8)}`],
    ['tool', tool],
    ['tool_version', pick(goodVersions)],
    ['trace_id', chance(0.8) ? `1-${hex(8)}-${hex(24)}` : `00-${hex(32)}-${hex(16)}-01`],
    ['created_at', new Date(t0 - int(0, 3600000)).toISOString().replace(/\.\d+Z$/, chance(0.5) ? 'Z' : '+00:00')],
    ['schema_version', chance(0.7) ? 1 : new Num(pick(['1.0', '1e0', '10e-1', '0.1E1', '1.00']))],
    ['args', argsVal],
  ];
  if (chance(0.3)) pairs.push(['priority', number()]);
  if (chance(0.2)) pairs.push(['labels', chance(0.5) ? [] : [pick(words), pick(intl)]]);
  if (chance(0.15)) pairs.push(['fault', { kind: 'panic' }]); // not args.fault: ignored
  if (chance(0.1)) pairs.push(['Args', { fault: { kind: 'panic' } }]); // not "args": keys are exact
  shuffle(pairs);
  if (chance(0.1)) { // a duplicate member before the real one: the last one wins
    const k = pick(['tool', 'tenant', 'args', 'schema_version']);
    const at = pairs.findIndex(([name]) => name === k);
    pairs.splice(at, 0, [k, k === 'args' ? { fault: { kind: 'panic' } } : k === 'schema_version' ? 7 : 'overridden']);
  }
  if (chance(0.08)) { // an escaped key: "t\u0061sk_id" is "task_id"
    const at = pairs.findIndex(([name]) => name === 'task_id' || name === 'created_at');
    pairs[at] = [new EscKey(pairs[at][0]), pairs[at][1]];
  }
  return pairs;
}

// The body text of pairs written in st, the context's notes padded so that
// it is about target bytes (600-1,500).
function sized(pairs, ctx, st, target) {
  let body = write(new Obj(pairs), st);
  for (let k = 0; k < 6; k++) {
    const size = Buffer.byteLength(body);
    if (size >= target - 20 && size <= target + 20) break;
    const want = Math.max(0, ctx.notes.length + (target - size));
    ctx.notes = want <= ctx.notes.length ? ctx.notes.slice(0, want) : ctx.notes + filler.repeat(20).slice(0, want - ctx.notes.length);
    body = write(new Obj(pairs), st);
  }
  return body;
}

function task(i, wantOK) {
  const tool = pick(tools);
  const rc = pick([1, 1, 1, 1, 2, 2, 3, 4, 5]);
  const argsPairs = Object.entries(argsOf[tool]());
  const ctx = context();
  // Not args.fault, though they say "fault": a nested one, a value.
  if (chance(0.15)) ctx.fault = { kind: 'panic' };
  if (chance(0.05)) argsPairs.push(['note', 'fault']);
  argsPairs.push(['context', ctx]);
  shuffle(argsPairs);
  let expect = () => 'ok';
  let poison = null;
  let fault = null;
  if (!wantOK && chance(0.4)) {
    poison = weighted(poisons)();
  } else if (!wantOK) {
    let f;
    do f = weighted(faults)(tool, rc); while (f.expect(rc) === 'ok'); // a failing record fails
    fault = f.fault;
    expect = f.expect;
  } else if (chance(0.08)) { // a transient fault that has recovered by this receive
    fault = obj({ retryable: true, status: pick([429, 503]), error: 'recovered', until_receive: int(1, rc) });
  } else if (chance(0.05)) {
    fault = null;
    argsPairs.push(['fault', null]); // null is no fault
  }
  if (fault !== null) { // first or last among the args, as producers write it
    if (fault.constructor === Object) fault = new Obj(shuffle(Object.entries(fault)));
    if (chance(0.5)) argsPairs.unshift(['fault', fault]); else argsPairs.push(['fault', fault]);
  }
  const st = styles.random();
  let pairs = taskPairs(i, tool, new Obj(argsPairs), st);
  if (poison?.pairs) pairs = poison.pairs(pairs);
  let body = sized(pairs, ctx, st, int(600, 1500));
  if (poison?.text) body = poison.text(body);
  return { body, rc, outcome: poison ? `dead_letter:${poison.reason}` : expect(rc), kind: poison ? 'poison' : fault && !wantOK ? 'fault' : 'ok' };
}

// ---- message attributes, Lambda's shape ----
function messageAttributes() {
  const n = pick([0, 0, 1, 2, 3, 3, 4, 5, 8, 9, 10]);
  const names = shuffle(['tenant', 'producer', 'priority', 'content-type', 'x.trace', 'retry_hint', 'Schema.Version',
    'agent_run', 'cost_usd', 'payload.sig', 'blob', 'locale', 'origin_region', 'ttl']).slice(0, n);
  return names.map((name) => {
    const type = pick(['String', 'String', 'Number', 'Binary', 'String.json', 'Number.int', 'Binary.gzip']);
    const a = { stringListValues: [], binaryListValues: [], dataType: type };
    if (type.startsWith('Binary')) {
      const raw = Buffer.from(Array.from({ length: int(1, 48) }, () => int(0, 255)));
      a.binaryValue = raw.toString('base64');
    } else if (type.startsWith('Number')) {
      a.stringValue = type === 'Number.int' ? String(int(-5, 99999)) : pick(['12.5', '1e3', '-0.25', '42', '6.02E23']);
    } else {
      a.stringValue = type === 'String.json' ? JSON.stringify({ k: pick(intl), n: int(0, 9) }) : pick([...intl, ...words]);
    }
    return [name, new Obj(shuffle(Object.entries(a)))];
  });
}

// md5OfMessageAttributes, as SQS computes it: names sorted; for each, the
// length-prefixed name, data type, a transport byte (1 string, 2 binary)
// and the length-prefixed value.
function md5OfAttributes(attrs) {
  const h = createHash('md5');
  const lp = (buf) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(buf.length);
    h.update(len);
    h.update(buf);
  };
  for (const [name, a] of [...attrs].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) {
    const m = Object.fromEntries(a.pairs);
    lp(Buffer.from(name));
    lp(Buffer.from(m.dataType));
    if (m.binaryValue !== undefined) {
      h.update(Buffer.from([2]));
      lp(Buffer.from(m.binaryValue, 'base64'));
    } else {
      h.update(Buffer.from([1]));
      lp(Buffer.from(m.stringValue));
    }
  }
  return h.digest('hex');
}

// ---- the event ----
const nOK = Math.round((args.n * args.ok) / 100);
const okAt = new Set(shuffle([...Array(args.n).keys()]).slice(0, nOK));
const expect = {};
const summary = { records: args.n, ok: 0, retried: 0, dead_lettered: {}, body_bytes: { min: Infinity, max: 0, mean: 0 }, poison: 0, faults: 0 };
const recs = [];
for (let i = 0; i < args.n; i++) {
  let t;
  // Drawn again until it has the outcome wanted, a body that is not
  // written (a poison's change that did not apply) and the size wanted
  // (600-1,500 bytes, but for the short invalid bodies).
  do t = task(i, okAt.has(i));
  while ((t.outcome === 'ok') !== okAt.has(i) || t.body === null ||
    (Buffer.byteLength(t.body) > 1500 || Buffer.byteLength(t.body) < 600) && !(t.kind === 'poison' && t.body.length < 300));
  const id = uuid();
  const sent = t0 + i * int(1, 50);
  const first = sent + int(5, 900);
  const attrs = [
    ['ApproximateReceiveCount', String(t.rc)],
    ['SentTimestamp', String(sent)],
    ['SenderId', pick(['AROAEXAMPLEROLEID:agent-runner', 'AIDAEXAMPLEUSERID', `${account}`])],
    ['ApproximateFirstReceiveTimestamp', String(first)],
  ];
  if (chance(0.4)) attrs.push(['AWSTraceHeader', `Root=1-${hex(8)}-${hex(24)};Parent=${hex(16)};Sampled=${int(0, 1)}`]);
  const mattrs = messageAttributes();
  const rec = [
    ['messageId', id],
    ['receiptHandle', 'AQEB' + Array.from({ length: int(120, 360) }, () => b64chars[int(0, 63)]).join('') + '=='],
    ['body', t.body],
    ['attributes', new Obj(shuffle(attrs))],
    ['messageAttributes', new Obj(mattrs)],
    ['md5OfBody', createHash('md5').update(t.body).digest('hex')],
    ['eventSource', 'aws:sqs'],
    ['eventSourceARN', arn],
    ['awsRegion', region],
  ];
  if (mattrs.length > 0 && chance(0.7)) rec.push(['md5OfMessageAttributes', md5OfAttributes(mattrs)]);
  if (chance(0.6)) shuffle(rec); // else Lambda's own order
  // The event around the body: compact, or spaced, and now and then every
  // non-ASCII character of the body escaped (emoji as surrogate pairs).
  const outer = chance(0.7) ? styles.compact() : { ...styles.random(), indent: '' };
  outer.ascii = chance(0.3);
  outer.letters = 0;
  recs.push(write(new Obj(rec), outer, 1));
  expect[id] = t.outcome;
  if (t.outcome === 'ok') summary.ok++;
  else if (t.outcome === 'retry') summary.retried++;
  else {
    const r = t.outcome.slice('dead_letter:'.length);
    summary.dead_lettered[r] = (summary.dead_lettered[r] ?? 0) + 1;
  }
  if (t.kind === 'poison') summary.poison++;
  if (t.kind === 'fault') summary.faults++;
  const size = Buffer.byteLength(t.body);
  summary.body_bytes.min = Math.min(summary.body_bytes.min, size);
  summary.body_bytes.max = Math.max(summary.body_bytes.max, size);
  summary.body_bytes.mean += size / args.n;
}
summary.body_bytes.mean = Math.round(summary.body_bytes.mean);
const event = '{"Records":[' + recs.join(',\n') + ']}\n';
if (args.out) writeFileSync(args.out, event);
else process.stdout.write(event);
if (args.expect) writeFileSync(args.expect, JSON.stringify(expect) + '\n');
(args.out ? process.stdout : process.stderr).write(JSON.stringify({ generator: 'scripts/peer-bench/gen.mjs', seed: args.seed, ...summary }) + '\n');
