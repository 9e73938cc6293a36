// The default pool under a real node:cluster: each worker takes its share
// of the CPUs (docs/production.md), so the servers in total stay near the
// CPU count instead of CPUs x workers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { availableCpus } from '../../lib/pool.js';

const script = new URL('../fixtures/scripts/cluster-servers.js', import.meta.url).pathname;
const serversPerWorker = (workers, announce) => {
  const r = spawnSync(process.execPath, [script, String(workers), announce ? 'announce' : ''], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
};

for (const workers of [2, 4]) {
  test(`cluster of ${workers} workers, SPAWNPOOL_CLUSTER_WORKERS set by the primary: ${workers} workers share the CPUs`, () => {
    const share = Math.max(1, Math.floor(availableCpus() / workers));
    assert.deepEqual(serversPerWorker(workers, true), new Array(workers).fill(share));
  });

  test(`cluster of ${workers} workers, nothing set: one server per worker (a worker per CPU assumed)`, () => {
    assert.deepEqual(serversPerWorker(workers, false), new Array(workers).fill(1));
  });
}
