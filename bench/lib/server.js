// Starting and stopping one contender server. Each runs in its own process
// group so that stopping it also stops its helpers and children.
import { spawn } from 'node:child_process';
import net from 'node:net';

const live = new Set();

/** Kill every server still running (harness exit or Ctrl-C). */
export function killAll() {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
  live.clear();
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Start `cmd args port ...after` and wait for its "listening" line.
 * Resolves to { port, pid, stop(), stderr() } or { unavailable } ; rejects
 * when it exits or stays silent for `timeoutMs`.
 */
export async function startServer({ cmd, args, after = [] }, { env, timeoutMs = 20_000 }) {
  const port = await freePort();
  const child = spawn(cmd, [...args, String(port), ...after], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  live.add(child.pid);
  let errTail = '';
  child.stderr.on('data', (d) => (errTail = (errTail + d).slice(-4096)));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => {
    live.delete(child.pid);
    resolve(code ?? signal);
  }));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, 3000);
    await exited;
    clearTimeout(t);
    try {
      process.kill(-child.pid, 'SIGKILL'); // stragglers left in the group
    } catch {}
  };
  const ready = await new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve({ fail: `no "listening" line within ${timeoutMs} ms` }), timeoutMs);
    child.on('error', (err) => resolve({ fail: err.message }));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^listening (\d+)$/m.exec(out);
      const u = /^unavailable: (.*)$/m.exec(out);
      if (m || u) {
        clearTimeout(timer);
        resolve(m ? { ok: true } : { unavailable: u[1] });
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      resolve({ fail: `exited (${code}) before listening${errTail ? `: ${errTail.trim().split('\n').slice(-3).join(' | ')}` : ''}` });
    });
  });
  child.stdout.resume();
  if (ready.unavailable) {
    await stop();
    return { unavailable: ready.unavailable };
  }
  if (ready.fail) {
    await stop();
    throw new Error(ready.fail);
  }
  return { port, pid: child.pid, stop, stderr: () => errTail };
}
