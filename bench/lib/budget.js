// The CPU budget of one timed HTTP run, from /proc: where each request's CPU
// goes, by process class, so that "who burns what" is measured rather than
// guessed (issue 12). A contender server runs in a process group of its own
// (server.js); snapshots before and after the load give:
//
//   main      the server process's main thread (the Node event loop; Go's
//             and Rust's first thread), from its schedstat (ns)
//   threads   the server process's other threads (libuv pool, V8 helpers,
//             Go/tokio workers)
//   helpers   other processes of the group that are not spawn servers
//             (cluster workers, fork() helpers)
//   servers   spawnpool's spawn servers (comm "spawnd")
//   children  the programs spawned per request: the CPU of the group's
//             reaped children (cutime + cstime of every member)
//   loadgen   the load generator: the harness's own reaped children over
//             the run (it is the only child the harness reaps then)
//
// plus context switches of the group's processes, and from /proc/stat the
// whole machine's idle time (idle + iowait of every CPU) and steal time (a
// shared VM's CPU taken by the host) per request: a contender whose CPU per
// request is lower but whose req/s is not higher left the machine idle (its
// requests wait on one another somewhere), and a round with much steal ran
// on a disturbed machine. Times other than `main`
// are in clock ticks (USER_HZ, 10 ms): a run of a few thousand requests
// resolves a few µs per request.
import { readFileSync, readdirSync } from 'node:fs';

export const TICK_US = 1e6 / 100;    // USER_HZ is 100 on Linux

/** Fields 14-17 (utime stime cutime cstime) and 5 (pgrp) of /proc/<pid>/stat, comm; null if gone. */
export function parseStat(text) {
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text.slice(close + 2).split(' ');   // f[0] is field 3 (state)
  return { comm, pgrp: Number(f[2]), utime: Number(f[11]), stime: Number(f[12]), cutime: Number(f[13]), cstime: Number(f[14]) };
}

function read(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function switches(pid) {
  const s = read(`/proc/${pid}/status`);
  if (s === null) return 0;
  const n = (k) => Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(s)?.[1] ?? 0);
  return n('voluntary_ctxt_switches') + n('nonvoluntary_ctxt_switches');
}

/** The CPU counters of process group `leader` and of this process now. */
export function snapshot(leader) {
  const procs = {};
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const text = read(`/proc/${name}/stat`);
    if (text === null) continue;
    const st = parseStat(text);
    if (st.pgrp !== leader) continue;
    procs[name] = { ...st, switches: switches(name) };
  }
  const sched = read(`/proc/${leader}/task/${leader}/schedstat`);
  const cpu = read('/proc/stat')?.match(/^cpu +(.*)$/m)?.[1].split(/ +/).map(Number) ?? null;
  const self = read('/proc/self/stat');
  return {
    procs,
    mainNs: sched === null ? null : Number(sched.split(' ')[0]),
    harness: self === null ? null : parseStat(self),
    // user nice system idle iowait irq softirq steal ... (clock ticks)
    machine: cpu === null ? null : { idle: cpu[3] + cpu[4], steal: cpu[7] ?? 0 },
  };
}

/**
 * Per-request CPU µs by class, and context switches per request, between
 * two snapshots of `leader`'s group, over `requests` requests. A process
 * present in only one snapshot counts from zero (started) or not at all.
 */
export function budget(before, after, leader, requests) {
  if (!requests || !after) return null;
  const out = { main: null, threads: 0, helpers: 0, servers: 0, children: 0, loadgen: null, switches: 0, idle: null, steal: null };
  for (const [pid, a] of Object.entries(after.procs)) {
    const b = before.procs[pid] ?? { utime: 0, stime: 0, cutime: 0, cstime: 0, switches: 0 };
    const own = (a.utime + a.stime - b.utime - b.stime) * TICK_US;
    out.children += (a.cutime + a.cstime - b.cutime - b.cstime) * TICK_US;
    out.switches += a.switches - b.switches;
    if (Number(pid) === leader) out.threads += own;
    else if (a.comm.startsWith('spawnd')) out.servers += own;
    else out.helpers += own;
  }
  if (before.mainNs !== null && after.mainNs !== null) {
    out.main = (after.mainNs - before.mainNs) / 1000;
    out.threads = Math.max(0, out.threads - out.main);
  }
  if (before.harness && after.harness) {
    out.loadgen = (after.harness.cutime + after.harness.cstime - before.harness.cutime - before.harness.cstime) * TICK_US;
  }
  if (before.machine && after.machine) {
    out.idle = (after.machine.idle - before.machine.idle) * TICK_US;
    out.steal = (after.machine.steal - before.machine.steal) * TICK_US;
  }
  for (const k of Object.keys(out)) if (out[k] !== null) out[k] /= requests;
  out.total = ['main', 'threads', 'helpers', 'servers', 'children'].reduce((s, k) => s + (out[k] ?? 0), 0);
  return out;
}
