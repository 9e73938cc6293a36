// The CPU budget of a timed run (bench/lib/budget.js): classes from /proc
// counters, per request; and its report table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { parseStat, snapshot, budget } from '../../bench/lib/budget.js';
import { budgetTable } from '../../bench/lib/report.js';

const proc = (comm, utime, stime, cutime, cstime, switches = 0) => ({ comm, pgrp: 10, utime, stime, cutime, cstime, switches });

test('parseStat reads comm (with spaces and parentheses), pgrp and the four times', () => {
  const st = parseStat('123 (a (b) c) S 1 77 77 0 -1 4194560 10 0 0 0 5 6 7 8 20 0 1 0');
  assert.deepEqual(st, { comm: 'a (b) c', pgrp: 77, utime: 5, stime: 6, cutime: 7, cstime: 8 });
});

test('budget: µs per request by class; the main thread from schedstat, the rest of the leader as other threads', () => {
  const before = {
    procs: { 10: proc('node', 100, 50, 0, 0, 5), 11: proc('spawnd', 10, 10, 200, 100, 1), 12: proc('node', 0, 0, 0, 0) },
    mainNs: 1_000_000_000,
    harness: proc('bench', 0, 0, 40, 10),
    machine: { idle: 1000, steal: 7 },
  };
  const after = {
    procs: {
      10: proc('node', 150, 70, 0, 0, 25), // +70 ticks = 700,000 µs
      11: proc('spawnd', 20, 20, 300, 150, 11), // +20 ticks own, +150 ticks children
      12: proc('node', 10, 0, 10, 0, 0), // a cluster worker: +10 own, +10 children
      13: proc('spawnd', 5, 0, 0, 0, 4), // started during the run
    },
    mainNs: 1_500_000_000, // +500,000 µs on the main thread
    harness: proc('bench', 0, 0, 90, 10),
    machine: { idle: 1030, steal: 9 }, // +30 ticks idle, +2 stolen over all CPUs
  };
  const b = budget(before, after, 10, 1000);
  assert.deepEqual(b, {
    main: 500, threads: 200, helpers: 100, servers: 250, children: 1600, loadgen: 500, switches: 0.034, idle: 300, steal: 20, total: 2650,
  });
  // Without /proc/stat (another OS): no machine columns, the rest unchanged.
  const partial = budget({ ...before, machine: null }, after, 10, 1000);
  assert.equal(partial.idle, null);
  assert.equal(partial.steal, null);
  assert.equal(partial.total, 2650);
});

test('snapshot: the machine counters grow as the machine idles', async () => {
  const a = snapshot(process.pid);
  await new Promise((r) => setTimeout(r, 300));
  const b = snapshot(process.pid);
  assert.ok(a.machine && b.machine, 'Linux has /proc/stat');
  // 300 ms of mostly sleeping on at least one CPU: some idle ticks (10 ms each).
  assert.ok(b.machine.idle > a.machine.idle, `${a.machine.idle} -> ${b.machine.idle}`);
  assert.ok(b.machine.steal >= a.machine.steal);
});

test('budget of a real process group: a shell that runs /bin/true 200 times', async () => {
  const sh = spawn('sh', ['-c', 'read go; for i in $(seq 200); do /bin/true; done; read done'], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise((r) => setTimeout(r, 50));
  const before = snapshot(sh.pid);
  sh.stdin.write('go\n');
  // Let the loop run; the shell waits on stdin afterwards, still alive.
  await new Promise((r) => setTimeout(r, 1500));
  const after = snapshot(sh.pid);
  sh.stdin.end('done\n');
  await once(sh, 'close');
  const b = budget(before, after, sh.pid, 200);
  assert.ok(b.children > 50, `children ${b.children} µs per run of /bin/true`);
  assert.ok(b.main > 0 && b.main < b.children, JSON.stringify(b));
  assert.equal(b.servers, 0);
});

test('budgetTable: a row per contender with a budget, the ceiling from the main thread', () => {
  const results = {
    http: {
      summary: {
        echo: [
          { id: 'node', label: 'Node', summary: { budget: { main: 500, threads: 10, helpers: 0, servers: 0, children: 900, total: 1410, loadgen: 300, idle: 120, steal: 0, switches: 3 } } },
          { id: 'spawnpool', label: 'spawnpool', summary: { budget: { main: 100, threads: 5, helpers: 0, servers: 40, children: 800, total: 945, loadgen: 300, idle: null, steal: null, switches: 6 } } },
          { id: 'go', label: 'Go', unavailable: 'not built', summary: null },
        ],
      },
    },
  };
  const lines = budgetTable(results, 'echo');
  assert.equal(lines.length, 4);
  assert.match(lines[2], /^\| Node \| 500 \| 10 \| 0 \| 0 \| 900 \| 1,410 \| 300 \| 120 \| 0 \| 3\.0 \| 2,000 req\/s \|$/);
  assert.match(lines[3], /\*\*spawnpool\*\* \| 100 \| 5 \| 0 \| 40 \| 800 \| 945 \| 300 \| – \| – \| 6\.0 \| 10,000 req\/s \|$/);
  results.http.summary.echo[0].summary.budget.helpers = 900;   // a cluster: the workers serve
  assert.match(budgetTable(results, 'echo')[2], / \| – \|$/);
});
