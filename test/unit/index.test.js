// The module surface: every export of node:child_process exists in spawnpool,
// with the same name and arity, and the unservable ones are counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as nodeChildProcess from 'node:child_process';
import { promisify } from 'node:util';
import * as spawnpool from 'spawnpool';

test('every export of node:child_process exists, as the same kind of value', () => {
  for (const [name, value] of Object.entries(nodeChildProcess)) {
    if (name === 'default') continue;
    assert.ok(name in spawnpool, `missing export ${name}`);
    assert.equal(typeof spawnpool[name], typeof value, name);
    if (typeof value === 'function' && name !== 'ChildProcess') {
      assert.equal(spawnpool[name].name, value.name, `${name}.name`);
      assert.equal(spawnpool[name].length, value.length, `${name}.length`);
    }
  }
  for (const name of Object.keys(nodeChildProcess.default)) assert.ok(name in spawnpool.default, `default.${name}`);
});

test('spawnpool children are instances of node:child_process ChildProcess', async () => {
  const child = spawnpool.spawn('true');
  assert.ok(child instanceof nodeChildProcess.ChildProcess);
  assert.ok(child instanceof spawnpool.ChildProcess);
  await new Promise((resolve) => child.on('close', resolve));
});

test('fork and the *Sync functions are node:child_process, counted as fallbacks', () => {
  const before = spawnpool.stats().fallbacks;
  assert.equal(spawnpool.execSync('echo sync').toString(), 'sync\n');
  assert.equal(spawnpool.execFileSync('echo', ['file']).toString(), 'file\n');
  assert.equal(spawnpool.spawnSync('sh', ['-c', 'exit 3']).status, 3);
  assert.equal(spawnpool.stats().fallbacks, before + 3);
});

test('fork runs a Node module with an IPC channel, counted as a fallback', async () => {
  const before = spawnpool.stats().fallbacks;
  const child = spawnpool.fork(new URL('../fixtures/ipc-child.js', import.meta.url));
  const [message] = await new Promise((resolve) => child.once('message', (...a) => resolve(a)));
  assert.equal(message, 'ready');
  await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(spawnpool.stats().fallbacks, before + 1);
});

test("a stdio entry the servers can't serve ('ipc', fd 3+) goes to node:child_process", async () => {
  const before = spawnpool.stats().fallbacks;
  const child = spawnpool.spawn(process.execPath, ['-e', 'process.send("hi", () => process.disconnect())'],
    { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] });
  const [message] = await new Promise((resolve) => child.once('message', (...a) => resolve(a)));
  assert.equal(message, 'hi');
  await new Promise((resolve) => child.on('close', resolve));
  assert.equal(spawnpool.stats().fallbacks, before + 1);
});

test('promisify(exec) and promisify(execFile) resolve { stdout, stderr }', async () => {
  assert.deepEqual(await promisify(spawnpool.exec)('echo a; echo b >&2'), { stdout: 'a\n', stderr: 'b\n' });
  assert.deepEqual(await promisify(spawnpool.execFile)('echo', ['c']), { stdout: 'c\n', stderr: '' });
});
