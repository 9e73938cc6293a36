// Micro-benchmark child: the first spawn of a fresh process. Imports the
// implementation (`--impl node|spawnpool`), then spawns `file` once (stdio
// ignored) and times the import, the spawn() call, the call → 'spawn' and
// the call → 'close'. One measurement per process: the harness runs it
// several times, implementations interleaved. Prints one JSON line.
import { flags } from './common.js';

const opt = flags({ impl: 'spawnpool', file: '/bin/true' });
const t0 = performance.now();
const { spawn } = opt.impl === 'node' ? await import('node:child_process') : await import('spawnpool');
const t1 = performance.now();
const child = spawn(opt.file, [], { stdio: 'ignore' });
const t2 = performance.now();
let spawned = null;
child.on('spawn', () => {
  spawned = performance.now();
});
child.on('error', (err) => {
  process.stdout.write(`${JSON.stringify({ impl: opt.impl, error: `${err.code ?? ''} ${err.message}`.trim() })}\n`);
  process.exit(1);
});
child.on('close', () => {
  const t3 = performance.now();
  const ms = (x) => Math.round(x * 100) / 100;
  process.stdout.write(`${JSON.stringify({
    impl: opt.impl, importMs: ms(t1 - t0), callMs: ms(t2 - t1), toSpawnMs: ms(spawned - t1), toCloseMs: ms(t3 - t1),
  })}\n`);
  process.exit(0);
});
