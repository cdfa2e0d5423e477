// Logs N records with pino through pino-loki (used as pino's destination
// stream, in this thread), then ends the stream: pino-loki's close sends
// what its batch holds. pino-loki reports a failed push on stderr only:
// the script counts those reports and exits 1 if there were any.
//
// Usage: node send.mjs URL TENANT N
//
// Record i: level warn when i % 10 == 0, else info; kind "even" or "odd"
// (a label through propsToLabels); meta {trace_id: "node-%04d", seq: i}
// (structured metadata, pino-loki's default structuredMetaKey); the
// message `node %04d "quoted" back\slash ünïcode ✓`, with two more lines
// ("  at frame 1", "  at frame 2") when i % 7 == 3. The labels app=e2e-node
// and env=test; pino-loki adds level and hostname.
import { once } from 'node:events';
import pino from 'pino';
import { pinoLoki } from 'pino-loki';

const [url, tenant, nArg] = process.argv.slice(2);
const n = Number(nArg);
if (!url || !tenant || !Number.isInteger(n)) {
  console.error('usage: node send.mjs URL TENANT N');
  process.exit(2);
}

let failures = 0;
const consoleError = console.error;
console.error = (...args) => {
  failures++;
  consoleError(...args);
};

const stream = pinoLoki({
  host: url,
  headers: { 'X-Scope-OrgID': tenant },
  labels: { app: 'e2e-node', env: 'test' },
  propsToLabels: ['kind'],
  batching: { interval: 0.2 },
});
const log = pino({ level: 'debug' }, stream);

function message(i) {
  let m = `node ${String(i).padStart(4, '0')} "quoted" back\\slash ünïcode ✓`;
  if (i % 7 === 3) m += '\n  at frame 1\n  at frame 2';
  return m;
}

for (let i = 0; i < n; i++) {
  const rec = {
    kind: i % 2 === 0 ? 'even' : 'odd',
    meta: { trace_id: `node-${String(i).padStart(4, '0')}`, seq: i },
  };
  if (i % 10 === 0) log.warn(rec, message(i));
  else log.info(rec, message(i));
}
// The transport's close (which sends the last batch) runs when the stream
// is destroyed, after its end: wait for 'close'.
const closed = once(stream, 'close');
stream.end();
await closed;
if (failures > 0) {
  consoleError(`${failures} pushes failed`);
  process.exit(1);
}
console.log(`sent ${n}`);
