// What a child inherits that the spawn servers took at their start: the
// umask, the nice value and the credentials. Node's child gets them as they are at spawn();
// after a change, spawnpool starts new servers (one started as root went on
// spawning root children after the program dropped its privileges). In
// fresh processes: the script changes its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../fixtures/scripts/inherited.js', import.meta.url));
const run = (impl) => {
  const r = spawnSync(process.execPath, [script, impl], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
};

test('a umask, a nice value (and, as root, uid, gid and groups) changed after the pool started reach the children, as under Node', () => {
  const node = run('node');
  const { pool, ...pooled } = run('spawnpool');
  assert.deepEqual(node.changed, '0077');
  const [before, after] = node.nice.split(' ').map(Number);
  assert.equal(after, Math.min(before + 3, 19), node.nice);
  if (process.getuid() === 0) assert.equal(node.ids, '65534 65534 65534');
  assert.deepEqual(pooled, node);
  // Served by new servers, started with the process as it is: none by
  // Node, and none of the servers started with the old ones is left (run
  // as root, they could have spawned as root after the drop).
  assert.deepEqual({ ...pool, now: pool.now > 0 }, { fallbacks: 0, first: 0, now: true });
});
