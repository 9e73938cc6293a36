// The contenders: what each one is and how to start it. Every server takes
// its port as the first argument, serves GET /echo and GET /cat, and prints
// "listening <port>" when ready (or "unavailable: <why>" and exits).
import { join } from 'node:path';

export const CONTENDERS = [
  { id: 'node', label: 'Node, spawn per request', what: 'node:http + child_process.spawn per request, stdout piped into the response (the baseline)' },
  { id: 'cluster', label: 'Node cluster, 1 per CPU', what: 'node:cluster with one baseline server per CPU' },
  { id: 'workers', label: 'Node worker_threads + execFile', what: 'one worker_thread per CPU runs execFile; the buffered stdout is posted back' },
  { id: 'fork-ipc', label: 'Node fork() helpers, JSON IPC', what: 'one fork()ed Node helper per CPU runs execFile and replies with process.send (JSON)' },
  { id: 'fork-advanced', label: "Node fork() helpers, 'advanced' IPC", what: "the same pool, stdout streamed chunk by chunk over IPC with serialization: 'advanced'" },
  { id: 'fork-bun', label: 'Node + Bun fork() helpers, JSON IPC', what: 'the fork() helper pool with the helpers run by Bun (the write-up\'s "Node + Bun")' },
  { id: 'spawnpool', label: 'spawnpool', what: "the baseline server with `import { spawn } from 'spawnpool'`" },
  { id: 'cluster-spawnpool', label: 'spawnpool in node:cluster, 1 worker per CPU', what: 'node:cluster, each worker the spawnpool server with its own pool (servers in total ≈ CPUs)' },
  { id: 'go', label: 'Go net/http + os/exec', what: 'bench/go: net/http, exec.Command with cmd.Stdout = the ResponseWriter' },
  { id: 'rust', label: 'Rust tokio + hyper', what: 'bench/rust: hyper 1.x on tokio, tokio::process child, stdout streamed as the body' },
  { id: 'bun', label: 'Bun, baseline code', what: 'the Node baseline server file run by Bun (BUN, bun on PATH, or the devDependency)' },
  { id: 'deno', label: 'Deno, baseline code', what: 'the Node baseline server file run by Deno (DENO, deno on PATH, or the devDependency)' },
  { id: 'node-floor', label: 'Node http alone, no child (reference)', what: 'the baseline server with each child replaced by its output from memory, 64 KiB per loop turn: what node:http and the pipe cost without spawning', reference: true },
];

/**
 * How to start contender `id` given the detected tools and builds:
 * { cmd, args } or { skip: reason }.
 */
export function commandFor(id, { benchDir, tools, builds }) {
  const node = process.execPath;
  const srv = (f) => join(benchDir, 'servers', f);
  const built = (key, what) => (builds[key]?.ok ? { cmd: builds[key].path, args: [] } : { skip: `${what}: ${builds[key]?.error ?? 'not built'}` });
  switch (id) {
    case 'node': return { cmd: node, args: [srv('node-spawn.js')] };
    case 'cluster': return { cmd: node, args: [srv('node-cluster.js')] };
    case 'workers': return { cmd: node, args: [srv('node-workers.js')] };
    case 'fork-ipc': return { cmd: node, args: [srv('fork-pool.js')], after: ['buffered'] };
    case 'fork-advanced': return { cmd: node, args: [srv('fork-pool.js')], after: ['stream'] };
    case 'fork-bun':
      return tools.bun ? { cmd: node, args: [srv('fork-pool.js')], after: ['buffered', tools.bun.path] } : { skip: 'bun not found (set BUN=/path/to/bun or put bun on PATH)' };
    case 'spawnpool': return { cmd: node, args: [srv('spawnpool.js')] };
    case 'node-floor': return { cmd: node, args: [srv('node-floor.js')] };
    case 'cluster-spawnpool': return { cmd: node, args: [srv('spawnpool-cluster.js')] };
    case 'go': return built('go-server', 'Go server');
    case 'rust': return built('rust-server', 'Rust server');
    case 'bun':
      return tools.bun ? { cmd: tools.bun.path, args: [srv('node-spawn.js')] } : { skip: 'bun not found (set BUN=/path/to/bun or put bun on PATH)' };
    case 'deno':
      return tools.deno
        ? { cmd: tools.deno.path, args: ['run', '--allow-all', '--no-prompt', '--node-modules-dir=none', srv('node-spawn.js')] }
        : { skip: 'deno not found (set DENO=/path/to/deno or put deno on PATH)' };
    default: return { skip: `unknown contender ${id}` };
  }
}
