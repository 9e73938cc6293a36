// Contender "cluster": node:cluster, one spawn-per-request server per CPU.
import cluster from 'node:cluster';
import http from 'node:http';
import os from 'node:os';
import process from 'node:process';
import { spawn } from 'node:child_process';
import { port, spawnHandler } from './common.js';

if (cluster.isPrimary) {
  const n = os.availableParallelism();
  let ready = 0;
  for (let i = 0; i < n; i++) cluster.fork();
  cluster.on('listening', () => {
    if (++ready === n) process.stdout.write(`listening ${port()}\n`);
  });
  cluster.on('exit', (w, code, signal) => {
    if (!w.exitedAfterDisconnect) process.stderr.write(`cluster worker died (${code ?? signal})\n`);
  });
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.process.kill();
    process.exit(0);
  });
} else {
  const server = http.createServer(spawnHandler(spawn));
  server.keepAliveTimeout = 30_000;
  server.listen(port(), '127.0.0.1');
}
