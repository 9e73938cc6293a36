// Contender "cluster-spawnpool": node:cluster, one spawnpool server per CPU.
// Each worker has its own pool; spawnpool's default size under node:cluster
// shares the CPUs among the workers (lib/config.js), so servers in total ≈ CPUs.
import cluster from 'node:cluster';
import http from 'node:http';
import os from 'node:os';
import process from 'node:process';
import { port, spawnHandler } from './common.js';
import { runPrimary } from './cluster-primary.js';

if (cluster.isPrimary) {
  runPrimary({ SPAWNPOOL_CLUSTER_WORKERS: String(os.availableParallelism()) }, (w, msg) => {
    if (msg === 'unavailable') {
      process.stdout.write('unavailable: spawnpool not built (in a cluster worker)\n');
      process.exit(3);
    }
  });
} else {
  let lib;
  try {
    lib = await import('spawnpool');
    await lib.ready();
  } catch {
    lib = null;
  }
  if (lib === null || lib.stats().available === false) {
    process.send('unavailable');
  } else {
    const server = http.createServer(spawnHandler(lib.spawn));
    server.keepAliveTimeout = 30_000;
    server.listen(port(), '127.0.0.1');
  }
}
