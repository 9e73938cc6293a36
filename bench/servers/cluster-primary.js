// The primary of the cluster contenders: one worker per CPU, the harness's
// readiness line once every worker listens, workers stopped with it.
import cluster from 'node:cluster';
import os from 'node:os';
import process from 'node:process';
import { port } from './common.js';

/** Forks one worker per CPU with `env`; `onMessage(worker, msg)` hears them. */
export function runPrimary(env = {}, onMessage = () => {}) {
  const n = os.availableParallelism();
  let ready = 0;
  for (let i = 0; i < n; i++) cluster.fork(env);
  cluster.on('message', onMessage);
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
  return n;
}
