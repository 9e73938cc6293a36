// Contender "spawnpool": the Node baseline with one import changed.
// GET /__stats returns pool.stats() so the harness can read fallbacks and the
// spawn servers' pids (for RSS).
import http from 'node:http';
import process from 'node:process';
import { listen, spawnHandler } from './common.js';

let lib;
try {
  lib = await import('spawnpool');
  if (typeof lib.spawn !== 'function') throw new Error('spawnpool exports no spawn()');
} catch (err) {
  // The harness reports this line instead of a number.
  process.stdout.write(`unavailable: spawnpool not built (${String(err.message).split('\n')[0]})\n`);
  process.exit(3);
}

const stats = () => (typeof lib.stats === 'function' ? lib.stats() : null);

// Start the pool now (not on the first request) and make sure it is the
// native pool: spawnpool falls back to node:child_process when its server is
// missing, and those numbers must not be reported as spawnpool's.
await new Promise((resolve) => {
  const child = lib.spawn('true', [], { stdio: 'ignore' });
  child.on('error', resolve);
  child.on('close', resolve);
});
if (stats()?.available === false) {
  process.stdout.write('unavailable: spawnpool not built (native server missing; it fell back to node:child_process)\n');
  process.exit(3);
}

const handle = spawnHandler(lib.spawn);
listen(http.createServer((req, res) => {
  if (req.url === '/__stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(stats()));
    return;
  }
  handle(req, res);
}));
