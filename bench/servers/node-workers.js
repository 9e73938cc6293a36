// Contender "workers": execFile moved into worker_threads (one per CPU);
// each worker posts the buffered stdout back, the main thread writes it.
import http from 'node:http';
import os from 'node:os';
import { execFile } from 'node:child_process';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { listen, route } from './common.js';

if (isMainThread) {
  const workers = Array.from({ length: os.availableParallelism() }, () => new Worker(new URL(import.meta.url)));
  const pending = new Map();
  let nextId = 0;
  let rr = 0;
  for (const w of workers) {
    w.on('message', ({ id, stdout, error }) => {
      const res = pending.get(id);
      pending.delete(id);
      if (error) res.writeHead(500).end(`${error}\n`);
      else res.end(stdout);
    });
    w.on('error', (err) => process.stderr.write(`worker error: ${err.stack}\n`));
  }
  listen(http.createServer((req, res) => {
    const cmd = route(req.url);
    if (!cmd) return res.writeHead(404).end('not found\n');
    const id = nextId++;
    pending.set(id, res);
    workers[rr++ % workers.length].postMessage({ id, file: cmd[0], args: cmd[1] });
  }));
} else {
  parentPort.on('message', ({ id, file, args }) => {
    execFile(file, args, { encoding: 'buffer', maxBuffer: 16 << 20 }, (err, stdout) => {
      parentPort.postMessage(err ? { id, error: err.code ?? err.message } : { id, stdout });
    });
  });
}
