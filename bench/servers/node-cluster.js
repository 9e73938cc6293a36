// Contender "cluster": node:cluster, one spawn-per-request server per CPU.
import cluster from 'node:cluster';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { port, spawnHandler } from './common.js';
import { runPrimary } from './cluster-primary.js';

if (cluster.isPrimary) {
  runPrimary();
} else {
  const server = http.createServer(spawnHandler(spawn));
  server.keepAliveTimeout = 30_000;
  server.listen(port(), '127.0.0.1');
}
