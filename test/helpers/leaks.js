// Leak checks for after(): zombies left by spawn servers, fds left open in
// the test process, server processes left after a pool was closed.
//
//   const baseline = fdBaseline();              // once the pool is warmed up
//   after(() => assertNoLeaks({ serverPids, baselineFds: baseline, poolClosed: true }));
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** `/proc/PID/stat` parsed (comm may hold spaces and parentheses), or null if gone. */
export function procStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text.slice(close + 2).split(' ');
  return { pid: Number(pid), comm, state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]) };
}

/** Every process visible in /proc. */
export function allProcesses() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(name);
    if (st) out.push(st);
  }
  return out;
}

/** Processes whose parent is one of `pids`, optionally only in state `state`. */
export function childrenOf(pids, state) {
  const set = new Set(pids.filter((p) => p != null));
  return allProcesses().filter((p) => set.has(p.ppid) && (state === undefined || p.state === state));
}

/** Zombies whose parent is one of `pids` (a server that forgot to reap). */
export const zombiesOf = (pids) => childrenOf(pids, 'Z');

/**
 * Blocks the event loop until `pid` is a zombie (at most 2 s), then `ms`
 * more: on a loaded machine a fixed wait may end before the child has run.
 */
export function blockUntilZombie(pid, ms = 0) {
  const deadline = Date.now() + 2000;
  while (Date.now() < deadline && procStat(pid)?.state !== 'Z');
  const end = Date.now() + ms;
  while (Date.now() < end);
}

/** Kills (SIGKILL) every process whose command line contains `marker`. */
export function killByMarker(marker) {
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) process.kill(Number(pid), 'SIGKILL');
    } catch { /* gone */ }
  }
}

/** True when `pid` is gone (no /proc entry, or a zombie waiting for its parent to reap it). */
export function isGone(pid) {
  const st = procStat(pid);
  return st === null || st.state === 'Z' || st.state === 'X';
}

/** A process's open fds (the test process's by default): number → link target. */
export function openFds(pid = 'self') {
  const out = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      out[fd] = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch { /* the directory fd readdir used, already closed */ }
  }
  return out;
}

export const fdCount = () => Object.keys(openFds()).length;

/** The baseline to hand to assertNoLeaks later. */
export const fdBaseline = () => openFds();

/** Polls `check` (returns a problem string or null) until it passes or `ms` elapse. */
async function settle(check, ms) {
  const deadline = Date.now() + ms;
  let problem = check();
  while (problem !== null && Date.now() < deadline) {
    await sleep(50);
    problem = check();
  }
  return problem;
}

/**
 * Resolves to a list of problems (empty when clean):
 * - zombies whose parent is one of `serverPids` (or the test process itself);
 * - fds open now that were not open in `baselineFds` (and more fds than then);
 * - with `poolClosed`, any of `serverPids` still running.
 * Each condition is given up to `timeout` ms to settle (exit and reap are asynchronous).
 */
export async function findLeaks({ serverPids = [], baselineFds, poolClosed = false, timeout = 3000 } = {}) {
  const problems = [];
  const pids = serverPids.filter((p) => p != null);
  const zombies = await settle(() => {
    const z = zombiesOf([...pids, process.pid]);
    return z.length ? `zombies: ${z.map((p) => `${p.pid}(${p.comm}, parent ${p.ppid})`).join(', ')}` : null;
  }, timeout);
  if (zombies) problems.push(zombies);
  if (baselineFds) {
    const fds = await settle(() => {
      const now = openFds();
      const extra = Object.keys(now).filter((fd) => !(fd in baselineFds) || baselineFds[fd] !== now[fd]);
      if (Object.keys(now).length <= Object.keys(baselineFds).length) return null;
      return `fds: ${Object.keys(baselineFds).length} at baseline, ${Object.keys(now).length} now; new: ${
        extra.slice(0, 20).map((fd) => `${fd} -> ${now[fd]}`).join(', ')}`;
    }, timeout);
    if (fds) problems.push(fds);
  }
  if (poolClosed) {
    const alive = await settle(() => {
      const left = pids.filter((p) => !isGone(p));
      return left.length ? `servers still running: ${left.join(', ')}` : null;
    }, timeout);
    if (alive) problems.push(alive);
  }
  return problems;
}

/** findLeaks, asserting it found nothing. */
export async function assertNoLeaks(options) {
  const problems = await findLeaks(options);
  assert.deepEqual(problems, [], `leaks after the suite:\n${problems.join('\n')}`);
}
