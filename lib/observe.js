// Everything spawnpool tells the outside world about itself, in one place:
// the NODE_DEBUG=spawnpool log, its own diagnostics channels, and Node's
// `child_process` channel (plus the `tracing:child_process.spawn:*`
// channels on the Node versions that have them) for the children it makes.
import * as dc from 'node:diagnostics_channel';
import { ChildProcess as NodeChildProcess } from 'node:child_process';
import { debuglog } from 'node:util';

export const debug = debuglog('spawnpool');

/**
 * A monotonic clock in ms, for durations. Not performance.now(): the
 * first read of the global `performance` loads Node's perf_hooks, about
 * 1 ms of a process's first spawn.
 */
export function now() {
  const t = process.hrtime();
  return t[0] * 1e3 + t[1] / 1e6;
}

// spawnpool's own channels (README, "Observability"). Messages:
//   pool:start   { pool, size, min, max, reason }
//   server:start { pool, pid }              (pid: null until the handshake, in worker threads)
//   server:exit  { pool, pid, ready, cause, status, childrenLost, reason }
//   fallback     { pool, reason, file }
//   spawn:error  { pool, process, error }
export const channels = {
  poolStart: dc.channel('spawnpool:pool:start'),
  serverStart: dc.channel('spawnpool:server:start'),
  serverExit: dc.channel('spawnpool:server:exit'),
  fallback: dc.channel('spawnpool:fallback'),
  spawnError: dc.channel('spawnpool:spawn:error'),
};

// Node's own: the ChildProcess constructor publishes `{ process }` here.
const childProcessChannel = dc.channel('child_process');
// Node publishes `tracing:child_process.spawn:{start,end,error}` from
// ChildProcess.prototype.spawn since it gained them (nodejs/node#61836,
// Node 25 and later 24.x). There is no API that says whether this Node does:
// its own spawn's source text does (builtins keep theirs).
const spawnTracing = dc.tracingChannel?.('child_process.spawn') ?? null;
let nodeTracesSpawn = spawnTracing !== null && /tracing/i.test(Function.prototype.toString.call(NodeChildProcess.prototype.spawn));

/** For tests: pretend this Node has (or lacks) the spawn tracing channels. */
export function setNodeTracesSpawn(value) {
  const was = nodeTracesSpawn;
  nodeTracesSpawn = value && spawnTracing !== null;
  return was;
}

/** Publishes a spawnpool ChildProcess where Node publishes its own, when it is created. */
export function childCreated(child) {
  if (childProcessChannel.hasSubscribers) childProcessChannel.publish({ process: child });
}

/** Node's tracing:child_process.spawn:start, with Node's normalized options. */
export function spawnStart(child, norm) {
  if (!nodeTracesSpawn || !spawnTracing.start.hasSubscribers) return;
  spawnTracing.start.publish({
    process: child,
    options: { ...norm.options, file: norm.file, args: norm.args, cwd: norm.cwd, envPairs: [...norm.envPairs] },
  });
}

/**
 * tracing:child_process.spawn:end / :error. Node knows the outcome before
 * spawn() returns; spawnpool knows it when the server answers, so these
 * come later, just before 'spawn' or 'error' (see docs/production.md).
 */
export function spawnOutcome(child, error) {
  if (!nodeTracesSpawn) return;
  if (error === undefined) {
    if (spawnTracing.end.hasSubscribers) spawnTracing.end.publish({ process: child });
  } else if (spawnTracing.error.hasSubscribers) {
    spawnTracing.error.publish({ process: child, error });
  }
}

const silence = () => {};

/**
 * Runs `start()` (which starts a spawn server with node:child_process)
 * without the server showing up on Node's `child_process` and spawn tracing
 * channels: subscribers (APM agents) would take it for the application's
 * child. The channels' publish is shadowed for that synchronous call only.
 */
export function unpublished(start) {
  const shadowed = [];
  const shadow = (ch) => {
    if (!ch.hasSubscribers || Object.hasOwn(ch, 'publish')) return;
    ch.publish = silence;
    ch.runStores = (data, fn, thisArg, ...args) => fn.apply(thisArg, args);
    shadowed.push(ch);
  };
  shadow(childProcessChannel);
  if (spawnTracing !== null) {
    for (const name of ['start', 'end', 'asyncStart', 'asyncEnd', 'error']) shadow(spawnTracing[name]);
  }
  try {
    return start();
  } finally {
    for (const ch of shadowed) {
      delete ch.publish;
      delete ch.runStores;
    }
  }
}

/** Why spawns went to node:child_process, as counted in stats().fallbacksByReason. */
export const FALLBACK_REASONS = [
  'unservable-stdio', 'sync-api', 'fork', 'server-unavailable', 'server-start-failed', 'server-lost',
];

/** Counts a fallback, logs it and publishes it. */
export function fallback(pool, reason, file) {
  pool.counters.fallbacks++;
  pool.fallbacksByReason[reason] = (pool.fallbacksByReason[reason] ?? 0) + 1;
  debug('fallback to node:child_process (%s)%s', reason, file === undefined ? '' : `: ${file}`);
  if (channels.fallback.hasSubscribers) channels.fallback.publish({ pool, reason, file });
}

/** Whether anyone wants to hear of failed spawns (log, channels). */
export function wantsSpawnErrors() {
  return debug.enabled || channels.spawnError.hasSubscribers || (nodeTracesSpawn && spawnTracing.error.hasSubscribers);
}

/** A spawn failed (the program could not be started): log and publish. */
export function spawnFailed(pool, child, error) {
  debug('spawn %s failed: %s', child.spawnfile, error.code);
  if (channels.spawnError.hasSubscribers) channels.spawnError.publish({ pool, process: child, error });
  spawnOutcome(child, error);
}
