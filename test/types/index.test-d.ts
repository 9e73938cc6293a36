// Compiled by tsc in `npm test`: the public types must accept what
// node:child_process accepts and reject what it rejects.
import {
  spawn, exec, execFile, createPool, stats, ChildProcess, configure, ready, close, drainOnSignal,
} from 'spawnpool';
import type { PoolStats, FallbackReason } from 'spawnpool';
import spawnpool from 'spawnpool';
import { promisify } from 'node:util';

const child = spawn('echo', ['hi'], { cwd: '/', env: { A: '1' }, stdio: 'pipe', detached: false });
child.stdout.on('data', (chunk: Buffer) => chunk.length);
child.on('exit', (code: number | null, signal: NodeJS.Signals | null) => [code, signal]);
const killed: boolean = child.kill('SIGTERM');
const inherited = spawn('ls', { stdio: 'inherit' });
const maybeOut = inherited.stdout;
void maybeOut;

exec('ls', (err, stdout, stderr) => [err?.code, stdout.length, stderr.length]);
execFile('ls', ['-l'], { encoding: 'buffer' }, (err, stdout: Buffer) => stdout);
const run = promisify(execFile);
run('ls').then(({ stdout }) => stdout.trim());

const pool = createPool({ size: 2, strategy: 'round-robin' });
createPool({ strategy: 'pack' });
const s: PoolStats = pool.stats();
const p50: number | null = s.latency.p50;
pool.spawn("true").on("close", () => { void pool.close({ timeout: 100 }); });
stats().servers.map((x) => x.pid);
const registered: boolean = stats().registered;
const ok: boolean = child instanceof ChildProcess;
spawnpool.spawn('true');
void [killed, p50, ok, registered];

// @ts-expect-error: strategy is one of four names
createPool({ strategy: 'fastest' });
// @ts-expect-error: args must be strings
spawn('echo', [1, 2]);
import 'spawnpool/register';

configure({ min: 1, max: 4, idleTimeout: 10_000 });
const started: Promise<boolean> = ready();
const removeDrain: () => void = drainOnSignal('SIGTERM', { timeout: 5000 });
void [started, removeDrain, close({ timeout: 1000 }), pool.ready(), pool.drainOnSignal()];
const reason: FallbackReason = 'sync-api';
const byReason: number | undefined = s.fallbacksByReason[reason];
const up: number = s.uptime;
void [byReason, up, s.min, s.max];
// @ts-expect-error: unknown option
configure({ sise: 2 });
// @ts-expect-error: drainOnSignal takes a signal name
drainOnSignal(15);
