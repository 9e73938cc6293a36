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
   * Number of spawn servers.
   * @default the CPUs available to the process (affinity and cgroup v2 cpu.max)
   */
  size?: number;
  /**
   * How a spawn picks its server.
   * @default 'least-busy'
   */
  strategy?: 'least-busy' | 'round-robin' | 'random';
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
}

export interface PoolStats {
  /** Servers the pool keeps running. */
  size: number;
  /** False when the native server is missing or keeps failing: spawns then use node:child_process. */
  available: boolean;
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
  /** Servers replaced after dying. */
  restarts: number;
  /** Children failed with ERR_SPAWNPOOL_SERVER_DIED. */
  lost: number;
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
  close(options?: { timeout?: number }): Promise<void>;
}

/** Creates a pool of its own, separate from the default one. */
export function createPool(options?: PoolOptions): Pool;
/** Statistics of the default pool. */
export function stats(): PoolStats & {
  /** Whether spawnpool/register currently routes node:child_process's spawn, exec and execFile to this pool. */
  registered: boolean;
};

declare const spawnpool: {
  spawn: typeof spawn; exec: typeof exec; execFile: typeof execFile; fork: typeof fork;
  spawnSync: typeof spawnSync; execSync: typeof execSync; execFileSync: typeof execFileSync;
  ChildProcess: typeof cp.ChildProcess; createPool: typeof createPool; stats: typeof stats;
};
export default spawnpool;
