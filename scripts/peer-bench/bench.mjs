// The peer of `agentdlq bench`: Powertools for AWS Lambda (TypeScript)
// BatchProcessor, version pinned in package.json, on the same Lambda SQS event
// file and the same per-record work as the sample worker's all-ok path — parse
// and check the agent task v1 body, then the tool's work, the SHA-256 of the
// task's raw args bytes. It prints one JSON line shaped like `agentdlq
// bench`'s, so the two can be compared in the same run (`make bench-peer`).
// Each invocation parses the event from its text first, as the Node.js
// Lambda runtime does with every payload (JSON.parse of the invocation's
// body): cpu_ns_per_record is the whole invocation's, parse and handling;
// parse_cpu_ns_per_record is the parse alone, measured apart afterwards.
//
// With --idempotency the peer also does the worker's idempotency work the
// way a Powertools user would: the tool's call is made idempotent with
// Powertools' own utility (makeIdempotent), keyed by the task's
// idempotency_key, with payload validation of its args (the reused-key check
// of agentdlq's ledger: Powertools hashes the deep-sorted args, the worker
// the RFC 8785 form) and SHA-256, on a CachePersistenceLayer over an
// in-memory client, as the worker's bench claims and completes its keys in
// an in-memory ledger. Every invocation starts with an empty store, as
// every repeat of the worker's bench starts with a fresh ledger. It is not
// the budget's peer (issue 19 names Powertools' BatchProcessor with the
// work above), but the same work on both sides.
//
// --failed-out FILE writes the message ids of the last invocation's batch
// item failures (what SQS delivers again) as a JSON array, from which make
// bench-settle builds the next receive's event.
//
// usage: node bench.mjs EVENT_FILE [REPEATS] [--idempotency] [--failed-out FILE]
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import {
  BatchProcessor,
  EventType,
  processPartialResponse,
} from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { Range, SemVer } from 'semver';

const argv = process.argv.slice(2);
const idempotency = argv.includes('--idempotency');
const fo = argv.indexOf('--failed-out');
const failedOut = fo >= 0 ? argv[fo + 1] : undefined;
const [file, repeatsArg] = argv.filter((a, i) => a !== '--idempotency' && (fo < 0 || (i !== fo && i !== fo + 1)));
if (!file || (fo >= 0 && !failedOut)) {
  console.error('usage: node bench.mjs EVENT_FILE [REPEATS] [--idempotency] [--failed-out FILE]');
  process.exit(2);
}
const repeats = Number(repeatsArg ?? 1000);
const text = readFileSync(file, 'utf8'); // the payload, as the runtime receives it
const event = JSON.parse(text);
if (!Array.isArray(event.Records) || event.Records.length === 0) {
  console.error(`${file}: not an SQS event (no Records)`);
  process.exit(2);
}

// The sample catalog: every tool supports tool_version 1.x through 3.x, as
// agenttask.SampleVersions. node-semver is strict where the Go decoder's
// library (Masterminds semver) reads "2" as 2.0.0 and "2.1" as 2.1.0, so the
// short forms are padded first; like the Go decoder, the verdict for each
// version seen is remembered (up to 64 a range).
const sampleRange = new Range('>=1.0.0 <4.0.0');
const catalog = new Map(
  ['web.search', 'http.fetch', 'code.exec', 'file.read', 'file.write', 'sql.query', 'vector.search', 'email.send']
    .map((tool) => [tool, { range: sampleRange, verdicts: new Map() }]),
);
const shortForm = /^v?(\d+)(\.\d+)?$/;
const supports = (entry, version) => {
  let ok = entry.verdicts.get(version);
  if (ok === undefined) {
    const m = shortForm.exec(version);
    const full = m ? `${m[1]}${m[2] ?? '.0'}.0` : version.replace(/^v/, '');
    try {
      ok = entry.range.test(new SemVer(full));
    } catch {
      ok = false; // not semver
    }
    if (entry.verdicts.size < 64) entry.verdicts.set(version, ok);
  }
  return ok;
};
const required = [
  ['task_id', 256], ['run_id', 256], ['tenant', 256], ['idempotency_key', 256],
  ['tool', 128], ['tool_version', 64], ['trace_id', 256], ['created_at', 64],
];
// maxLength counts characters (code points), as JSON Schema and the Go
// decoder do, not UTF-16 units.
const tooLong = (s, max) => s.length > max && (s.length > 2 * max || [...s].length > max);

// The tool's work is the SHA-256 of the raw args bytes as they stand in
// the body (the agent task contract: docs/architecture.md, docs/worker.md), which JSON.parse does not keep. A compact
// producer's args are JSON.stringify of the parsed args, and stand in the
// body after "args": — found with one indexOf (about 0.2 µs a KB). Other
// args (white space, escapes, exponents) are found by rawArgs, which walks
// the body's top-level members for the last "args" (duplicates: the last
// one wins, as in JSON.parse) and scans its value (about 0.6 µs more a KB).
// The shortcut could only take the wrong bytes for a body that also holds a
// compact copy of its args under another "args" key while its own are not
// compact; the ok_digest, compared with the worker's, would show it.
const skipWS = (s, i) => {
  for (let c; i < s.length && ((c = s.charCodeAt(i)) === 32 || c === 10 || c === 13 || c === 9); i++);
  return i;
};
const stringEnd = (s, i) => { // s[i] is '"': the index after the closing quote
  for (let j = i + 1; ;) {
    const k = s.indexOf('"', j);
    let n = 0;
    while (s.charCodeAt(k - 1 - n) === 92) n++;
    if (n % 2 === 0) return k + 1;
    j = k + 1;
  }
};
const valueEnd = (s, i) => {
  const c = s.charCodeAt(i);
  if (c === 34) return stringEnd(s, i);
  if (c !== 123 && c !== 91) { // a number, true, false or null
    for (let d; i < s.length && (d = s.charCodeAt(i)) !== 44 && d !== 125 && d !== 93 && d > 32; i++);
    return i;
  }
  for (let depth = 0; ; i++) {
    const d = s.charCodeAt(i);
    if (d === 34) i = stringEnd(s, i) - 1;
    else if (d === 123 || d === 91) depth++;
    else if ((d === 125 || d === 93) && --depth === 0) return i + 1;
  }
};
const isArgsKey = (s, i, end) => { // the key s[i:end], quotes included
  if (end - i === 6) return s.startsWith('args', i + 1);
  if (end - i > 26) return false;
  for (let k = i + 1; k < end - 1; k++) if (s.charCodeAt(k) === 92) return JSON.parse(s.slice(i, end)) === 'args';
  return false;
};
const rawArgs = (body, args) => {
  const compact = JSON.stringify(args);
  const at = body.indexOf(compact);
  if (at >= 7 && body.slice(at - 7, at) === '"args":') return compact;
  let raw;
  for (let i = skipWS(body, skipWS(body, 0) + 1); body.charCodeAt(i) === 34;) {
    const keyEnd = stringEnd(body, i);
    const v = skipWS(body, skipWS(body, keyEnd) + 1); // past ':'
    let end;
    if (isArgsKey(body, i, keyEnd)) {
      raw = body.slice(v, v + compact.length); // (=== compares as memcmp; startsWith was 1.4 µs slower a KB)
      if (raw !== compact) raw = body.slice(v, valueEnd(body, v));
      end = v + raw.length;
    } else {
      end = valueEnd(body, v);
    }
    i = skipWS(body, end);
    if (body.charCodeAt(i) !== 44) break;
    i = skipWS(body, i + 1);
  }
  return raw;
};

// args.fault (events/doc.go): any fault but null fails the task, except a
// retryable one with until_receive N from receive N on (the upstream
// recovered).
const faulted = (fault, record) => {
  if (fault === undefined || fault === null) return false;
  const n = fault.until_receive;
  return !(fault.retryable === true && Number.isInteger(n) && n > 0 &&
    Number(record.attributes?.ApproximateReceiveCount) >= n);
};

// The tool: args.fault, then the SHA-256 of the raw args.
const tool = (task, record) => {
  if (faulted(task.args.fault, record)) throw new Error('fault');
  return createHash('sha256').update(rawArgs(record.body, task.args)).digest('hex');
};

// --idempotency: the tool's call made idempotent by Powertools, on a store
// that is a Map behind the cache client's interface (get, set with NX,
// del), emptied before every invocation.
let store = new Map();
const memoryClient = {
  get: async (key) => store.get(key) ?? null,
  set: async (key, value, options) => {
    if (options?.NX && store.has(key)) return null;
    store.set(key, value);
    return 'OK';
  },
  del: async (keys) => keys.reduce((n, k) => n + (store.delete(k) ? 1 : 0), 0),
};
const idempotencyConfig = new IdempotencyConfig({
  eventKeyJmesPath: 'idempotency_key',
  payloadValidationJmesPath: 'args',
  hashFunction: 'sha256',
  throwOnNoIdempotencyKey: true,
});
const idempotentTool = makeIdempotent(tool, {
  persistenceStore: new CachePersistenceLayer({ client: memoryClient }),
  config: idempotencyConfig,
});

// The per-record work: the same checks the Go decoder makes, then the
// tool (idempotent with --idempotency).
const digests = new Map();
const recordHandler = async (record) => {
  const task = JSON.parse(record.body);
  if (task === null || typeof task !== 'object' || Array.isArray(task)) throw new Error('json_invalid');
  for (const [f, max] of required) {
    const v = task[f];
    if (typeof v !== 'string' || v === '' || tooLong(v, max)) throw new Error(`schema_invalid: ${f}`);
  }
  if (task.schema_version !== 1) throw new Error('schema_invalid: schema_version');
  const args = task.args;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new Error('schema_invalid: args');
  const entry = catalog.get(task.tool);
  if (!entry) throw new Error('tool_unknown');
  if (!supports(entry, task.tool_version)) throw new Error(`tool_version_unsupported: outside the tool's supported range "${entry.range.raw}"`);
  const sum = idempotency ? await idempotentTool(task, record) : tool(task, record);
  digests.set(record.messageId, sum);
  return sum;
};

// A batch whose every record failed is reported as such (all records in
// batchItemFailures, which Lambda treats as the batch failing) instead of
// thrown: a later receive of only failing records (make bench-settle) ends
// the same way for SQS.
const processor = new BatchProcessor(EventType.SQS);
const context = { getRemainingTimeInMillis: () => 60_000 };
let failures = 0;
let failed = [];
const once = async () => {
  store = new Map();
  idempotencyConfig.registerLambdaContext(context);
  const res = await processPartialResponse(JSON.parse(text), recordHandler, processor, { context, throwOnFullBatchFailure: false });
  failures = res.batchItemFailures.length;
  failed = res.batchItemFailures;
};

for (let i = 0; i < Math.min(50, repeats); i++) await once(); // warm-up (JIT)
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
for (let i = 0; i < repeats; i++) await once();
const wallNs = Number(process.hrtime.bigint() - t0);
const cpu = process.cpuUsage(cpu0);
const records = event.Records.length;
const n = records * repeats;
// The parse alone, about 20,000 records' worth, after the timed repeats.
const parseRepeats = Math.max(3, Math.floor(20000 / records));
let sink = 0;
const p0 = process.cpuUsage();
for (let i = 0; i < parseRepeats; i++) sink += JSON.parse(text).Records.length;
const parseCpu = process.cpuUsage(p0);
if (sink !== records * parseRepeats) throw new Error('parse');
const okDigest = createHash('sha256');
for (const r of event.Records) {
  if (digests.has(r.messageId)) okDigest.update(`${r.messageId}:${digests.get(r.messageId)}\n`);
}
if (failedOut) writeFileSync(failedOut, JSON.stringify(failed.map((f) => f.itemIdentifier)));
const round = (x) => Math.round(x * 10) / 10;
console.log(JSON.stringify({
  peer: '@aws-lambda-powertools/batch BatchProcessor' + (idempotency ? ' + @aws-lambda-powertools/idempotency' : ''),
  node: process.version,
  records,
  repeats,
  records_per_s: round(n / (wallNs / 1e9)),
  ns_per_record: round(wallNs / n),
  cpu_ns_per_record: round(((cpu.user + cpu.system) * 1000) / n),
  parse_cpu_ns_per_record: round(((parseCpu.user + parseCpu.system) * 1000) / (records * parseRepeats)),
  rss_mb: round(process.resourceUsage().maxRSS / 1024),
  failures,
  ok_digest: okDigest.digest('hex'),
}));
