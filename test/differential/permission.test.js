// Node's permission model: without --allow-child-process every spawn is
// refused, by node:child_process and by spawnpool alike, and no spawn
// server is started (it is a process too; the launch addon, allowed by
// --allow-addons, would otherwise start it). With it, the pool serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const lib = new URL('../../dist/index.js', import.meta.url).href;

// Node 20 names the flag --experimental-permission; 22 and 24 --permission.
const nodes = [
  [process.execPath, process.versions.node.startsWith('20.') ? '--experimental-permission' : '--permission'],
  [`${root}node_modules/node-22/bin/node`, '--permission'],
  [`${root}node_modules/node-24/bin/node`, '--permission'],
].filter(([path]) => existsSync(path));

const script = `
  import * as cp from 'node:child_process';
  import { readFileSync } from 'node:fs';
  const sp = await import(${JSON.stringify(lib)});
  const shape = (fn) => {
    try {
      fn();
      return 'no throw';
    } catch (e) {
      return { name: e.name, code: e.code, message: e.message, permission: e.permission, resource: e.resource };
    }
  };
  const out = {};
  for (const name of ['spawn', 'exec', 'execFile']) {
    const args = name === 'exec' ? ['echo hi', () => {}] : ['echo', ['hi']];
    out[name] = [shape(() => sp[name](...args)), shape(() => cp[name](...args))];
  }
  const pool = sp.createPool({ size: 1 });
  await pool.ready();
  const children = readFileSync('/proc/self/task/' + process.pid + '/children', 'utf8').trim();
  out.pool = { available: pool.stats().available, servers: pool.stats().servers.length, children };
  await pool.close();
  console.log(JSON.stringify(out));
`;

const allowed = `
  const { execFile, stats } = await import(${JSON.stringify(lib)});
  const { promisify } = await import('node:util');
  const { stdout } = await promisify(execFile)('echo', ['hi']);
  console.log(JSON.stringify({ stdout, spawned: stats().spawned, fallbacks: stats().fallbacks }));
`;

for (const [node, flag] of nodes) {
  test(`${node.includes('node-2') ? node.match(/node-(\d+)/)[0] : 'node'} ${flag} without --allow-child-process: refused as by Node, no server started`, async () => {
    const { stdout, stderr } = await promisify(execFile)(node,
      [flag, '--allow-fs-read=*', '--allow-addons', '--input-type=module', '-e', script], { timeout: 30_000 });
    assert.doesNotMatch(stderr, /SPAWNPOOL_UNAVAILABLE/, 'nothing is served elsewhere: no fallback warning');
    const out = JSON.parse(stdout);
    for (const name of ['spawn', 'exec', 'execFile']) {
      const [ours, theirs] = out[name];
      assert.equal(theirs.code, 'ERR_ACCESS_DENIED', `${name}: node:child_process refuses`);
      assert.deepEqual(ours, theirs, name);
    }
    assert.deepEqual(out.pool, { available: false, servers: 0, children: '' });
  });

  test(`${node.includes('node-2') ? node.match(/node-(\d+)/)[0] : 'node'} ${flag} with --allow-child-process: the pool serves`, async () => {
    const { stdout } = await promisify(execFile)(node,
      ['--no-warnings', flag, '--allow-fs-read=*', '--allow-addons', '--allow-child-process', '--input-type=module', '-e', allowed],
      { timeout: 30_000 });
    assert.deepEqual(JSON.parse(stdout), { stdout: 'hi\n', spawned: 1, fallbacks: 0 });
  });
}
