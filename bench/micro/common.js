// Shared by the micro-benchmark child processes: flags, loading an
// implementation, holding memory, reading spawn servers' RSS.
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EventEmitter } from 'node:events';
import { TICK_US, parseStat } from '../lib/budget.js';

/** Why spawnpool results are withheld when its pool fell back to node:child_process. */
export const NOT_NATIVE = 'spawnpool not built (native server missing; it fell back to node:child_process)';

/** Parse `--name value` flags into numbers/strings with defaults. */
export function flags(defaults) {
  const options = Object.fromEntries(Object.keys(defaults).map((k) => [k, { type: 'string' }]));
  const { values } = parseArgs({ options, strict: true });
  const out = {};
  for (const [k, d] of Object.entries(defaults)) {
    const v = values[k];
    out[k] = v === undefined ? d : typeof d === 'number' ? Number(v) : v;
  }
  return out;
}

/**
 * Bun.spawn behind the little of ChildProcess that spawnOnce() uses, for a
 * reference run under Bun: 'close' once the child exited.
 */
function bunSpawn(file, args) {
  const child = new EventEmitter();
  globalThis.Bun.spawn([file, ...args], {
    stdio: ['ignore', 'ignore', 'ignore'],
    onExit: () => child.emit('close'),
  });
  return child;
}

/** { spawn, lib } for "node", "spawnpool" or "bun" (Bun.spawn, under Bun), or { unavailable }. */
export async function loadImpl(name) {
  if (name === 'node') return { spawn: (await import('node:child_process')).spawn, lib: null };
  if (name === 'bun') return globalThis.Bun ? { spawn: bunSpawn, lib: null } : { unavailable: 'Bun.spawn needs Bun' };
  try {
    const lib = await import('spawnpool');
    if (typeof lib.spawn !== 'function') throw new Error('spawnpool exports no spawn()');
    return { spawn: lib.spawn, lib };
  } catch (err) {
    return { unavailable: `spawnpool not built (${String(err.message).split('\n')[0]})` };
  }
}

/**
 * Hold `mb` MiB in Buffers outside V8's heap, every page written so it is
 * resident (fork() copies the page tables of resident memory).
 */
export function holdMemory(mb) {
  const held = [];
  const chunk = 256;
  for (let left = mb; left > 0; left -= chunk) {
    const b = Buffer.allocUnsafeSlow(Math.min(chunk, left) * 1024 * 1024);
    b.fill(left & 0xff);
    held.push(b);
  }
  return held;
}

/** VmRSS of this process in MiB. */
export function selfRssMB() {
  return Math.round(process.memoryUsage.rss() / (1024 * 1024));
}

function status(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const get = (k) => (new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(s) ?? [])[1];
    return { pid, name: get('Name'), ppid: Number(get('PPid')), rssKB: parseInt(get('VmRSS') ?? '0', 10) };
  } catch {
    return null;
  }
}

function pidsIn(value, out = new Set(), depth = 0) {
  if (depth > 4 || value == null || typeof value !== 'object') return out;
  for (const [k, v] of Object.entries(value)) {
    if (k === 'pid' && Number.isInteger(v) && v > 0) out.add(v);
    else if (typeof v === 'object') pidsIn(v, out, depth + 1);
  }
  return out;
}

/**
 * The spawn servers' RSS: pids from `stats` when it names any, otherwise
 * this process's live children other than `excludeName` (the spawned program).
 */
export function serverRss(stats, excludeName) {
  let pids = [...pidsIn(stats)];
  let source = 'pool.stats()';
  if (pids.length === 0) {
    source = '/proc children';
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  }
  const procs = pids.map(status).filter((p) => p && p.rssKB > 0 && (source === 'pool.stats()' || p.ppid === process.pid) && p.name !== excludeName);
  return { source, servers: procs };
}

/**
 * Spawns `file` (stdio ignored) and calls `done(err)` exactly once: at
 * 'close', at 'error', or after a synchronous throw. `onSpawn` sees 'spawn'.
 */
export function spawnOnce(spawn, file, done, onSpawn) {
  let finished = false;
  const finish = (err) => {
    if (finished) return;
    finished = true;
    done(err);
  };
  try {
    const child = spawn(file, [], { stdio: 'ignore' });
    if (onSpawn) child.on('spawn', onSpawn);
    child.on('error', finish);
    child.on('close', () => finish());
  } catch (err) {
    setImmediate(() => finish(err));
  }
}

function stat(pid) {
  try {
    const st = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return { own: st.utime + st.stime, reaped: st.cutime + st.cstime };
  } catch {
    return null;
  }
}

/**
 * CPU counters of this process and of the spawn servers `serverPids`: the
 * main thread (the event loop) from its schedstat in ns, the rest in clock
 * ticks. Spawned programs are reaped by this process (node:child_process)
 * or by a server (spawnpool), so "children" is both reaped totals.
 */
export function cpuSnapshot(serverPids) {
  const self = stat(process.pid);
  let mainNs = null;
  try {
    mainNs = Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {}
  const servers = Object.fromEntries(serverPids.map((pid) => [pid, stat(pid)]).filter(([, s]) => s));
  return { mainNs, self, servers };
}

/** µs of CPU per spawn between two cpuSnapshot()s: main thread, other threads, servers, children. */
export function cpuPerSpawn(a, b, spawns) {
  if (!spawns || !a.self || !b.self || a.mainNs === null || b.mainNs === null) return null;
  const main = (b.mainNs - a.mainNs) / 1000;
  let servers = 0;
  let children = (b.self.reaped - a.self.reaped) * TICK_US;
  for (const [pid, s] of Object.entries(b.servers)) {
    const s0 = a.servers[pid] ?? { own: 0, reaped: 0 };
    servers += (s.own - s0.own) * TICK_US;
    children += (s.reaped - s0.reaped) * TICK_US;
  }
  const threads = Math.max(0, (b.self.own - a.self.own) * TICK_US - main);
  const per = (x) => Math.round((x / spawns) * 10) / 10;
  return { main: per(main), threads: per(threads), servers: per(servers), children: per(children) };
}

/** The first error's text, as the reports show it. */
export const errorText = (err) => `${err.code ?? ''} ${err.message}`.trim();
