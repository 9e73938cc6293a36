// Contenders "fork-ipc" and "fork-advanced": a pool of fork()ed Node helpers
// (one per CPU) doing the spawns; the HTTP server only relays.
// argv[3] = "buffered" (default JSON IPC, whole stdout in one message) or
//           "stream" (serialization: 'advanced', stdout streamed chunk by chunk).
// argv[4] = the runtime that runs the helpers (default: this Node); the
//           write-up's "Node + Bun" contender runs them under Bun, which
//           speaks Node's IPC.
import http from 'node:http';
import os from 'node:os';
import process from 'node:process';
import { fork } from 'node:child_process';
import { listen, route } from './common.js';

const mode = process.argv[3] === 'stream' ? 'stream' : 'buffered';
const helperRuntime = process.argv[4];
const helperPath = new URL('./fork-helper.js', import.meta.url);
const pending = new Map();
let nextId = 0;
let rr = 0;

const helpers = Array.from({ length: os.availableParallelism() }, () => {
  const h = fork(helperPath, [mode], {
    ...(helperRuntime ? { execPath: helperRuntime } : {}),
    serialization: mode === 'stream' ? 'advanced' : 'json',
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  h.on('message', onMessage);
  h.on('exit', (code, signal) => {
    if (!shuttingDown) process.stderr.write(`helper died (${code ?? signal})\n`);
  });
  return h;
});

function onMessage(msg) {
  const res = pending.get(msg.id);
  if (!res) return;
  if (msg.error !== undefined) {
    pending.delete(msg.id);
    if (!res.headersSent) res.writeHead(500);
    res.end(`${msg.error}\n`);
  } else if (msg.stdout !== undefined) {
    pending.delete(msg.id);
    res.end(msg.stdout);
  } else if (msg.chunk !== undefined) {
    res.write(msg.chunk);
  } else if (msg.end) {
    pending.delete(msg.id);
    res.end();
  }
}

let shuttingDown = false;
process.on('SIGTERM', () => {
  shuttingDown = true;
  for (const h of helpers) h.kill();
  process.exit(0);
});

listen(http.createServer((req, res) => {
  const cmd = route(req.url);
  if (!cmd) return res.writeHead(404).end('not found\n');
  const id = nextId++;
  pending.set(id, res);
  helpers[rr++ % helpers.length].send({ id, file: cmd[0], args: cmd[1] });
}));
