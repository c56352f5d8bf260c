// What sizes.mjs and settle.mjs share: running a bench for its last JSON
// line, the median of runs, and the figures' units.
import { execFileSync } from 'node:child_process';

// run runs cmd with args and returns its last stdout line, parsed as JSON.
export const run = (cmd, args) =>
  JSON.parse(execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 24 }).trim().split('\n').pop());

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const us = (ns) => (ns / 1000).toFixed(1) + ' µs';
