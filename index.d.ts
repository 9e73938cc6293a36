// Types for spawnpool: node:child_process's own types, plus the pool API.
import type * as cp from 'node:child_process';

export type {
  ChildProcessWithoutNullStreams, ChildProcessByStdio, SpawnOptions,
  SpawnOptionsWithoutStdio, SpawnOptionsWithStdioTuple, ExecOptions, ExecFileOptions,
  ExecException, ExecFileException, StdioOptions, StdioPipe, StdioNull, IOType,
} from 'node:child_process';

/**
 * Starts a process through a spawn server of the default pool. Same
 * contract as `node:child_process.spawn`, except that `pid` is set
 * asynchronously, before the 'spawn' event (see docs/behaviour-differences.md).
 */
export const spawn: typeof cp.spawn;
/** `node:child_process.exec`, built on spawnpool's `spawn`. Supports `util.promisify`. */
export const exec: typeof cp.exec;
/** `node:child_process.execFile`, built on spawnpool's `spawn`. Supports `util.promisify`. */
export const execFile: typeof cp.execFile;
/** Served by `node:child_process` unchanged. */
export const fork: typeof cp.fork;
/** Served by `node:child_process` unchanged. */
export const spawnSync: typeof cp.spawnSync;
/** Served by `node:child_process` unchanged. */
export const execSync: typeof cp.execSync;
/** Served by `node:child_process` unchanged. */
export const execFileSync: typeof cp.execFileSync;
/** The class of spawnpool's children; `instanceof` node's `ChildProcess` holds too. */
export { ChildProcess } from 'node:child_process';

export interface PoolOptions {
  /**
   * Number of spawn servers, fixed: the same as `min` and `max` both set to
   * it. Cannot be combined with `min` or `max`.
   * @default the CPUs available to the process (affinity and cgroup v2
   *   cpu.max), divided among node:cluster / PM2 cluster workers; 1 in a
   *   worker thread. See docs/production.md.
   */
  size?: number;
  /**
   * Servers kept running when idle (0: none until a spawn comes). With
   * `max`, the pool grows under load and shrinks back after `idleTimeout`.
   * @default 1 when only `max` is given
   */
  min?: number;
  /**
   * Servers at most: another starts when every server has 4 children in flight.
   * @default the default size (or `min`, if larger) when only `min` is given
   */
  max?: number;
  /**
   * Milliseconds a server above `min` may stay idle (no child) before it exits.
   * @default 30000
   */
  idleTimeout?: number;
  /**
   * How a spawn picks its server. `'pack'`: the first server with a parked
   * child ready and fewer than 64 children in flight, the others taking the
   * overflow (less CPU per spawn than spreading, but a longer latency tail
   * on a loaded machine, which is why it is not the default); `'least-busy'`: the fewest
   * children in flight. With `min < max`, `'pack'` and `'least-busy'` both
   * pack by children in flight, so that servers started under load can exit.
   * @default 'least-busy'
   */
  strategy?: 'pack' | 'least-busy' | 'round-robin' | 'random';
  /**
   * Path of the native spawn server binary.
   * @default $SPAWNPOOL_SERVER, else the one `npm install` built (native/build/spawnd)
   */
  server?: string;
  /**
   * Bytes of stdout/stderr a server may send ahead of the consumer, per stream.
   * @default 262144
   */
  window?: number;
  /**
   * Children each server keeps started ahead of need (0-256), whose pids
   * spawn() hands out at once; plus a quarter as many (1 to 4) parked as
   * session leaders for `detached` spawns. 0: the pid comes with 'spawn'.
   * @default $SPAWNPOOL_PARKED, else 32 (256 / servers when a pool has more than 8, at least 8)
   */
  parked?: number;
}

/** Why a call went to node:child_process; keys of `PoolStats.fallbacksByReason`. */
export type FallbackReason =
  | 'unservable-stdio' | 'sync-api' | 'fork' | 'server-unavailable' | 'server-start-failed' | 'server-lost' | 'runtime'
  | 'no-parked-child';

export interface PoolStats {
  /** Servers the pool keeps running now (between `min` and `max`). */
  size: number;
  /** The pool's `min`. */
  min: number;
  /** The pool's `max`. */
  max: number;
  /** False when the native server is missing or keeps failing: spawns then use node:child_process. */
  available: boolean;
  /** Why it is not available, or null. */
  unavailableReason: string | null;
  /** Each running server: its pid, whether it has answered the handshake, children in flight. */
  servers: { pid: number | null; ready: boolean; inFlight: number }[];
  /** Children started and not yet finished, over all servers. */
  inFlight: number;
  /** Children that reached 'spawn'. */
  spawned: number;
  /** Spawns that failed ('error' from the program: ENOENT, EACCES, ...). */
  spawnErrors: number;
  /** Calls handed to node:child_process (unservable stdio, or pool unavailable). */
  fallbacks: number;
  /** `fallbacks`, by reason. */
  fallbacksByReason: Partial<Record<FallbackReason, number>>;
  /** Servers replaced after dying. */
  restarts: number;
  /** Running children lost with their server (they end killed by SIGKILL). */
  lost: number;
  /** Requests whose server died before answering, handed to another server. */
  retried: number;
  /** Spawns that found every parked child taken and waited for the next one. */
  parkedWaits: number;
  /** Of those, spawns that waited 1 s in vain and went to node:child_process. */
  parkedTimeouts: number;
  /**
   * stdout/stderr streams whose pipe a server handed over to this process
   * once they proved busy (192 KiB relayed, and a read still filled a
   * whole 64 KiB chunk): Node read the rest itself.
   */
  handedOver: number;
  /** Milliseconds since the pool started its first server (0 before). */
  uptime: number;
  /** Call → 'spawn' latency over the last 1024 spawns, in milliseconds (null before any). */
  latency: { p50: number | null; p90: number | null; p99: number | null };
}

export interface Pool {
  spawn: typeof cp.spawn;
  exec: typeof cp.exec;
  execFile: typeof cp.execFile;
  /** A snapshot of this pool's state and counters. */
  stats(): PoolStats;
  /**
   * Stops taking spawns (later calls throw `ERR_SPAWNPOOL_CLOSED`) and
   * resolves once every running child has finished and the servers have
   * exited. With `timeout` (ms), children still running then get SIGKILL.
   */
  close(options?: CloseOptions): Promise<void>;
  /**
   * Starts the servers the pool keeps (`size`, or `min`) ahead of traffic.
   * Resolves true once every one has finished its handshake, false when the
   * native server cannot be used (spawns then go to node:child_process).
   */
  ready(): Promise<boolean>;
  /** drainOnSignal() for this pool. */
  drainOnSignal(signal?: NodeJS.Signals, options?: CloseOptions): () => void;
}

export interface CloseOptions {
  /**
   * Milliseconds to wait for running children before sending them SIGKILL.
   * @default no limit
   */
  timeout?: number;
}

/** Creates a pool of its own, separate from the default one. */
export function createPool(options?: PoolOptions): Pool;
/** Statistics of the default pool. */
export function stats(): PoolStats & {
  /** Whether spawnpool/register currently routes node:child_process's spawn, exec and execFile to this pool. */
  registered: boolean;
};
/**
 * Sets the default pool's options before it starts (first spawn or
 * `ready()`); they take precedence over the SPAWNPOOL_* variables. Unknown
 * options throw ERR_INVALID_ARG_VALUE; after the start, ERR_SPAWNPOOL_STARTED.
 */
export function configure(options: PoolOptions): void;
/** `Pool.ready()` for the default pool: starts its servers now. */
export function ready(): Promise<boolean>;
/** `Pool.close()` for the default pool: drains; later spawns throw ERR_SPAWNPOOL_CLOSED. */
export function close(options?: CloseOptions): Promise<void>;
/**
 * On `signal`, drains the default pool (`close(options)`), then re-raises
 * the signal so the process ends as it would have, unless another listener
 * for it remains. Returns a function that removes the listener.
 * @param signal @default 'SIGTERM'
 */
export function drainOnSignal(signal?: NodeJS.Signals, options?: CloseOptions): () => void;

declare const spawnpool: {
  spawn: typeof spawn; exec: typeof exec; execFile: typeof execFile; fork: typeof fork;
  spawnSync: typeof spawnSync; execSync: typeof execSync; execFileSync: typeof execFileSync;
  ChildProcess: typeof cp.ChildProcess; createPool: typeof createPool; stats: typeof stats;
  configure: typeof configure; ready: typeof ready; close: typeof close; drainOnSignal: typeof drainOnSignal;
};
export default spawnpool;
