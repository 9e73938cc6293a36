// lib/runtime.js under Node: detection and SPAWNPOOL_RUNTIME_MODE. Bun and
// Deno themselves are exercised by test/runtimes (run by npm test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runtime, delegates } from '../../lib/runtime.js';

const LIB = fileURLToPath(new URL('../../lib/index.js', import.meta.url));

// The mode is read once per process: each case runs in its own.
function runWithMode(mode) {
  const script = `
    const warnings = [];
    process.on('warning', (w) => warnings.push(w.code));
    const { execFile, stats } = await import(${JSON.stringify(LIB)});
    execFile('echo', ['hi'], (err, stdout) => setTimeout(() => {
      const { spawned, fallbacks } = stats();
      console.log(JSON.stringify({ err: err?.message ?? null, stdout, spawned, fallbacks, warnings }));
    }, 10));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, SPAWNPOOL_RUNTIME_MODE: mode }, encoding: 'utf8',
  });
  return JSON.parse(out);
}

test('detects Node', () => {
  assert.equal(runtime, 'node');
  assert.equal(delegates('/any/spawnd'), process.env.SPAWNPOOL_RUNTIME_MODE === 'delegate');
});

test('Node serves by default (the measured faster path)', () => {
  assert.deepEqual(runWithMode(''), { err: null, stdout: 'hi\n', spawned: 1, fallbacks: 0, warnings: [] });
});

test('SPAWNPOOL_RUNTIME_MODE=delegate: node:child_process spawns, counted as a fallback', () => {
  assert.deepEqual(runWithMode('delegate'), { err: null, stdout: 'hi\n', spawned: 0, fallbacks: 1, warnings: [] });
});

test('SPAWNPOOL_RUNTIME_MODE with another value: ignored, with a warning', () => {
  assert.deepEqual(runWithMode('fastest'),
    { err: null, stdout: 'hi\n', spawned: 1, fallbacks: 0, warnings: ['SPAWNPOOL_RUNTIME_MODE'] });
});
