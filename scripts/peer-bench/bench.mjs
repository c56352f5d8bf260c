// The peer of `agentdlq bench`: Powertools for AWS Lambda (TypeScript)
// BatchProcessor, version pinned in package.json, on the same Lambda SQS event
// file and the same per-record work as the sample worker's all-ok path — parse
// and check the agent task v1 body, then the tool's work, the SHA-256 of the
// task's args. It prints one JSON line shaped like `agentdlq bench`'s, so the
// two can be compared in the same run (`make bench-peer`).
//
// usage: node bench.mjs EVENT_FILE [REPEATS]
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import {
  BatchProcessor,
  EventType,
  processPartialResponse,
} from '@aws-lambda-powertools/batch';
import { Range, SemVer } from 'semver';

const [file, repeatsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench.mjs EVENT_FILE [REPEATS]');
  process.exit(2);
}
const repeats = Number(repeatsArg ?? 1000);
const event = JSON.parse(readFileSync(file, 'utf8'));
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
const required = ['task_id', 'run_id', 'tenant', 'idempotency_key', 'tool', 'tool_version', 'trace_id', 'created_at'];

// The per-record work: the same checks the Go decoder makes, then the
// SHA-256 of the args (JSON.stringify of the parsed args: the raw bytes are
// not kept by JSON.parse; for compact bodies the two are the same).
const digests = new Map();
const recordHandler = (record) => {
  const task = JSON.parse(record.body);
  if (task === null || typeof task !== 'object' || Array.isArray(task)) throw new Error('json_invalid');
  for (const f of required) {
    if (typeof task[f] !== 'string' || task[f] === '') throw new Error(`schema_invalid: ${f}`);
  }
  if (task.schema_version !== 1) throw new Error('schema_invalid: schema_version');
  const args = task.args;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new Error('schema_invalid: args');
  const entry = catalog.get(task.tool);
  if (!entry) throw new Error('tool_unknown');
  if (!supports(entry, task.tool_version)) throw new Error(`tool_version_unsupported: outside the tool's supported range "${entry.range.raw}"`);
  if (args.fault) throw new Error('fault');
  const sum = createHash('sha256').update(JSON.stringify(args)).digest('hex');
  digests.set(record.messageId, sum);
  return sum;
};

const processor = new BatchProcessor(EventType.SQS);
const context = { getRemainingTimeInMillis: () => 60_000 };
let failures = 0;
const once = async () => {
  const res = await processPartialResponse(event, recordHandler, processor, { context });
  failures = res.batchItemFailures.length;
};

for (let i = 0; i < Math.min(50, repeats); i++) await once(); // warm-up (JIT)
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
for (let i = 0; i < repeats; i++) await once();
const wallNs = Number(process.hrtime.bigint() - t0);
const cpu = process.cpuUsage(cpu0);
const records = event.Records.length;
const n = records * repeats;
const okDigest = createHash('sha256');
for (const r of event.Records) {
  if (digests.has(r.messageId)) okDigest.update(`${r.messageId}:${digests.get(r.messageId)}\n`);
}
const round = (x) => Math.round(x * 10) / 10;
console.log(JSON.stringify({
  peer: '@aws-lambda-powertools/batch BatchProcessor',
  node: process.version,
  records,
  repeats,
  records_per_s: round(n / (wallNs / 1e9)),
  ns_per_record: round(wallNs / n),
  cpu_ns_per_record: round(((cpu.user + cpu.system) * 1000) / n),
  rss_mb: round(process.resourceUsage().maxRSS / 1024),
  failures,
  ok_digest: okDigest.digest('hex'),
}));
