// `make bench-settle`: CPU a message costs until SQS is done with it, on
// both sides, as the queue runs them. The worker dead-letters a message that
// can never succeed at its first receive and leaves to SQS only what it
// retries; the peer (bench.mjs, BatchProcessor) reports every failure, and
// SQS delivers each failing message again until maxReceiveCount, then moves
// it to the DLQ. Each side starts from the same event file, every record at
// its first receive (ApproximateReceiveCount 1: a message's life starts
// there, whatever count the file gives it); every receive
// after the first is an event of the records that side left to retry
// (--failed-out / -failed-out), with ApproximateReceiveCount one higher,
// without those SQS would have moved to the DLQ (a receive count over
// maxReceiveCount); receives go on until nothing is left. The CPU of every
// receive's whole invocations (decoding or parsing included) is summed and
// divided by the messages of the first event. Medians of RUNS (3).
//
// Events the file does not hold as they are (a receive count reset, a later
// receive) are written with JSON.stringify (two-space indent): the
// independent generator's varied spellings of the envelope are lost there,
// not in the bodies.
//
// usage: node settle.mjs WORKER_BENCH_BINARY DIR MAX_RECEIVE_COUNT ROWS...   (a row: FILE:REPEATS:LABEL)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, run, us } from './runs.mjs';

const [bin, dir, maxArg, ...rows] = process.argv.slice(2);
const maxReceive = Number(maxArg);
if (!bin || !Number.isInteger(maxReceive) || maxReceive < 1 || rows.length === 0) {
  console.error('usage: node settle.mjs WORKER_BENCH_BINARY DIR MAX_RECEIVE_COUNT FILE:REPEATS:LABEL...');
  process.exit(2);
}
const runs = Number(process.env.RUNS ?? 3);
const peer = join(dirname(fileURLToPath(import.meta.url)), 'bench.mjs');
const tmp = mkdtempSync(join(tmpdir(), 'settle-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const sides = {
  agentdlq: (file, repeats, failed) => {
    const x = run(bin, ['-event', file, '-repeats', repeats, '-max-receive-count', String(maxReceive), '-failed-out', failed]);
    return x.cpu_ns_per_record + x.decode_cpu_ns_per_record;
  },
  peer: (file, repeats, failed) => run(process.execPath, [peer, file, repeats, '--failed-out', failed]).cpu_ns_per_record,
  idempotent: (file, repeats, failed) =>
    run(process.execPath, [peer, file, repeats, '--idempotency', '--failed-out', failed]).cpu_ns_per_record,
};

// settle runs one side from file until it leaves nothing to SQS: the CPU
// a message of the first event, and the receives (records delivered).
const settle = (side, file, repeats) => {
  let event = JSON.parse(readFileSync(file, 'utf8'));
  const messages = event.Records.length;
  let cpu = 0;
  let receives = 0;
  let cur = file;
  if (event.Records.some((r) => r.attributes?.ApproximateReceiveCount !== '1')) {
    event = { ...event, Records: event.Records.map((r) => ({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: '1' } })) };
    cur = join(tmp, `${side}-receive-1.json`);
    writeFileSync(cur, JSON.stringify(event, null, 2));
  }
  for (let k = 1; ; k++) {
    const failed = join(tmp, `${side}-failed.json`);
    cpu += sides[side](cur, repeats, failed) * event.Records.length;
    receives += event.Records.length;
    const again = new Set(JSON.parse(readFileSync(failed, 'utf8')));
    const next = [];
    for (const r of event.Records) {
      if (!again.has(r.messageId)) continue;
      const n = Number(r.attributes?.ApproximateReceiveCount ?? 1) + 1;
      if (n > maxReceive) continue; // SQS moves it to the DLQ
      next.push({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: String(n) } });
    }
    if (next.length === 0) break;
    if (k > maxReceive + 1) throw new Error(`${side}: ${file}: still receiving after ${k} receives`);
    event = { ...event, Records: next };
    cur = join(tmp, `${side}-receive-${k + 1}.json`);
    writeFileSync(cur, JSON.stringify(event, null, 2));
  }
  return { perMessage: cpu / messages, receives };
};

console.log(`maxReceiveCount ${maxReceive}; runs ${runs} per row, medians; CPU a message: every receive's whole invocations until SQS is done with it, over the messages of the first event`);
console.log('');
console.log('| batch | mix | agentdlq CPU/message | its receives | peer CPU/message | its receives | peer + idempotency CPU/message | its receives | CPU ratio | CPU ratio, same work |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  const [name, repeats, label] = row.split(':');
  const file = join(dir, name);
  const a = [], p = [], q = [];
  for (let i = 0; i < runs; i++) {
    a.push(settle('agentdlq', file, repeats));
    p.push(settle('peer', file, repeats));
    q.push(settle('idempotent', file, repeats));
  }
  const messages = JSON.parse(readFileSync(file, 'utf8')).Records.length;
  const ratio = (xs) => median(a.map((x, i) => x.perMessage / xs[i].perMessage)).toFixed(2);
  const per = (xs) => us(median(xs.map((x) => x.perMessage)));
  const rec = (xs) => `${xs[0].receives} for ${messages}`;
  console.log(`| ${messages.toLocaleString('en-US')} | ${label} | ${per(a)} | ${rec(a)} | ${per(p)} | ${rec(p)} | ${per(q)} | ${rec(q)} | ${ratio(p)} | ${ratio(q)} |`);
}
