// drainOnSignal(): on SIGTERM the pool drains (running children finish, or
// are killed after the timeout), then the process ends by the signal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { drainOnSignal } from '../../lib/drain.js';

const LIB = pathToFileURL(fileURLToPath(new URL('../../lib/index.js', import.meta.url))).href;

function run(body) {
  const code = `import * as sp from ${JSON.stringify(LIB)};\n${body}`;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 });
  return { ...r, ms: Date.now() - started };
}

test('SIGTERM: running children finish, then the process ends by SIGTERM', () => {
  const r = run(`
    sp.drainOnSignal('SIGTERM');
    const child = sp.spawn('sh', ['-c', 'sleep 0.3; echo child done']);
    child.stdout.pipe(process.stdout);
    child.on('close', (code) => process.stdout.write('close ' + code + '\\n'));
    child.on('spawn', () => process.kill(process.pid, 'SIGTERM'));
    process.on('exit', () => process.stdout.write('never: the signal ends the process\\n'));
  `);
  assert.equal(r.signal, 'SIGTERM', r.stderr);
  assert.equal(r.stdout, 'child done\nclose 0\n');
});

test('SIGTERM with { timeout }: children still running then are killed', () => {
  const r = run(`
    sp.drainOnSignal('SIGTERM', { timeout: 100 });
    const child = sp.spawn('sleep', ['30']);
    child.on('close', (code, signal) => process.stdout.write('close ' + signal + '\\n'));
    child.on('spawn', () => process.kill(process.pid, 'SIGTERM'));
  `);
  assert.equal(r.signal, 'SIGTERM', r.stderr);
  assert.equal(r.stdout, 'close SIGKILL\n');
  assert.ok(r.ms < 10_000, `${r.ms} ms`);
});

test('another SIGTERM listener owns the shutdown: the process is not killed', () => {
  const r = run(`
    sp.drainOnSignal();
    process.on('SIGTERM', () => process.stdout.write('app handler\\n'));
    const child = sp.spawn('true');
    child.on('close', () => { process.kill(process.pid, 'SIGTERM'); setTimeout(() => {}, 300); });
    process.on('exit', (code) => process.stdout.write('exit ' + code + '\\n'));
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'app handler\nexit 0\n');
});

test('drainOnSignal validates its arguments and returns a remover', () => {
  const pool = { close: () => Promise.resolve() };
  assert.throws(() => drainOnSignal(pool, 'SIGKILL'), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => drainOnSignal(pool, 'SIGNOPE'), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => drainOnSignal(pool, 15), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => drainOnSignal(pool, 'SIGTERM', { timeout: -5 }), { code: 'ERR_INVALID_ARG_VALUE' });
  const before = process.listenerCount('SIGUSR2');
  const remove = drainOnSignal(pool, 'SIGUSR2');
  assert.equal(process.listenerCount('SIGUSR2'), before + 1);
  remove();
  assert.equal(process.listenerCount('SIGUSR2'), before);
});
