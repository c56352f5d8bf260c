// `make bench-sizes`: the worker's bench (functions/sampleworker/bench: the
// sample worker as its Lambda entry runs it, without the CLI) and the peer
// (bench.mjs) on the same generated event files, in the same run, each row
// RUNS times (agentdlq and the peer taking turns), and one Markdown table of
// the medians: CPU per record and peak RSS of both sides, and the ratios
// agentdlq/peer (the median of each run's ratio). CPU is the whole
// invocation's on both sides, as Lambda runs each: the worker decodes each
// invocation's payload (DecodeEvent, in Invoke) and handles it; the peer
// parses each payload (JSON.parse, as the Node.js runtime does) and
// handles it. The decoding and the parse alone are columns of their own,
// included in the CPU. Peak RSS is the whole process's on both sides.
// A row whose two sides print different ok_digests did not do the same work
// and says so. Two columns more run the peer with --idempotency
// (bench.mjs): Powertools' idempotency utility with payload validation
// around the tool's call, the work the worker's ledger and args digest do
// and the budget's peer does not; its ratio is the same work on both sides.
//
// usage: node sizes.mjs WORKER_BENCH_BINARY DIR ROWS...   (a row: FILE:REPEATS:LABEL)
// env:   RUNS (default 3); AWS_LAMBDA_FUNCTION_MEMORY_SIZE (from which the
//        worker's bench sets GOMEMLIMIT and GOMAXPROCS as the Lambda entry
//        does), GOMEMLIMIT, GOMAXPROCS and the like reach the worker's bench
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { median, run, us } from './runs.mjs';

const [bin, dir, ...rows] = process.argv.slice(2);
if (!bin || rows.length === 0) {
  console.error('usage: node sizes.mjs AGENTDLQ_BINARY DIR FILE:REPEATS:LABEL...');
  process.exit(2);
}
const runs = Number(process.env.RUNS ?? 3);
const peer = join(dirname(fileURLToPath(import.meta.url)), 'bench.mjs');
const mb = (x) => Math.round(x) + ' MB';

console.log(`runs ${runs} per row, medians; ratio = agentdlq / peer, the median of each run's ratio`);
console.log('');
const idle = run(bin, ['-idle']);
console.log(`worker bench idle RSS ${idle.idle_rss_mb} MB; GOMEMLIMIT ${idle.gomemlimit_mib ? idle.gomemlimit_mib + 'MiB' : 'unset'}; GOMAXPROCS ${idle.gomaxprocs}`);
console.log('');
console.log('| batch | mix | agentdlq CPU/record | of it decode | peer CPU/record | of it parse | CPU ratio | agentdlq peak RSS | peer peak RSS | RSS ratio | same ok_digest | peer + idempotency CPU/record | CPU ratio, same work |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  const [file, repeats, label] = row.split(':');
  const path = join(dir, file);
  const a = [], p = [], q = [];
  for (let i = 0; i < runs; i++) {
    a.push(run(bin, ['-event', path, '-repeats', repeats]));
    p.push(run(process.execPath, [peer, path, repeats]));
    q.push(run(process.execPath, [peer, path, repeats, '--idempotency']));
  }
  const same = a.every((x, i) => x.ok_digest === p[i].ok_digest && x.ok_digest === q[i].ok_digest);
  // The worker's bench prints its handling and its decoding apart.
  const whole = (x) => x.cpu_ns_per_record + x.decode_cpu_ns_per_record;
  const cpuRatio = median(a.map((x, i) => whole(x) / p[i].cpu_ns_per_record));
  const rssRatio = median(a.map((x, i) => x.rss_mb / p[i].rss_mb));
  const sameWork = median(a.map((x, i) => whole(x) / q[i].cpu_ns_per_record));
  console.log(`| ${a[0].records.toLocaleString('en-US')} | ${label} | ${us(median(a.map(whole)))} | ` +
    `${us(median(a.map((x) => x.decode_cpu_ns_per_record)))} | ` +
    `${us(median(p.map((x) => x.cpu_ns_per_record)))} | ${us(median(p.map((x) => x.parse_cpu_ns_per_record)))} | ` +
    `${cpuRatio.toFixed(2)} | ${mb(median(a.map((x) => x.rss_mb)))} | ` +
    `${mb(median(p.map((x) => x.rss_mb)))} | ${rssRatio.toFixed(2)} | ${same ? 'yes' : 'NO'} | ` +
    `${us(median(q.map((x) => x.cpu_ns_per_record)))} | ${sameWork.toFixed(2)} |`);
}
