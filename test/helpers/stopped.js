// Runs part of a scenario with a child's spawn server stopped (SIGSTOP), so
// that everything the child does meanwhile waits for the server at once,
// as for a loop that was busy: the faults suites use it to make the
// server's first look at a child's output deterministic.
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { procStat } from './leaks.js';
import { until } from './record.js';

/**
 * Waits until `child` runs its program (`running()`: a parked child's pid
 * is known before it execs, and a server stopped before that would never
 * start it) and its server has closed its own copy of the child's stdout
 * socket (until it has seen the child's fd table unshared, the server
 * holds one: stopped before that, it would see a writer still there).
 * Then stops the server, runs `act()` (which lets the child go on), waits
 * until `finished()` (by default: the child has exited, a zombie that
 * nobody reaps meanwhile) and lets the server go on. `serverOf()` names
 * the server; `onStopped(pid)` hears of the stop, so that a test's cleanup
 * can continue the server should an assertion fail in between (it is
 * called with 0 after SIGCONT).
 */
export async function withServerStopped(child, serverOf, running, act, onStopped = () => {},
  finished = () => procStat(child.pid)?.state === 'Z') {
  assert.ok(await until(running), 'the child runs its program');
  const server = serverOf();
  const childEnd = readlinkSync(`/proc/${child.pid}/fd/1`);
  const serverHolds = () => readdirSync(`/proc/${server}/fd`).some((fd) => {
    try { return readlinkSync(`/proc/${server}/fd/${fd}`) === childEnd; } catch { return false; }
  });
  assert.ok(await until(() => !serverHolds()), 'the server let go of the child\'s end');
  process.kill(server, 'SIGSTOP');
  onStopped(server);
  act();
  assert.ok(await until(finished), 'the child did its part while its server was stopped');
  process.kill(server, 'SIGCONT');
  onStopped(0);
}
