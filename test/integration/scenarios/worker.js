// A worker thread has its own node:child_process: what it spawns with, and
// whether its pool served it (see docs/register.md, worker threads).
import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { run } from './harness.js';

const index = new URL('../../../dist/index.js', import.meta.url).href;
const source = `
  const { parentPort } = require('node:worker_threads');
  const { execFile } = require('node:child_process');
  execFile('echo', ['from a worker'], (err, stdout) => {
    import(${JSON.stringify(index)}).then(({ stats }) => {
      const s = stats();
      parentPort.postMessage({ stdout, registered: s.registered, spawned: s.spawned });
    });
  });`;

run({
  'execFile in a worker thread': async () => {
    const worker = new Worker(source, { eval: true });
    const [message] = await once(worker, 'message');
    await once(worker, 'exit');
    return message;
  },
});
