// Runs a scenario's cases one after another in this process and writes what
// each observed to $SCENARIO_OUT as JSON, for test/integration/run.js to
// compare between a plain run (node:child_process) and a run under
// spawnpool/register. Values must be deterministic: no pids, no durations.
//
// Each case also gets `served`: how many of its spawns the default pool
// handled (0 in the plain run), and `fallbacks`: how many it handed to Node.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stats } from 'spawnpool';

const CASE_TIMEOUT_MS = Number(process.env.SCENARIO_CASE_TIMEOUT_MS ?? 4000);
const LINGER_MS = 3000;
const STACK = Symbol('stack');

/** The observable shape of an error, minus `pick`ed extra fields a library adds. */
export function errShape(err, pick = []) {
  if (!(err instanceof Error)) return { notAnError: typeof err, value: String(err) };
  const shape = { name: err.name, ctor: err.constructor?.name, message: err.message };
  for (const k of ['code', 'errno', 'syscall', 'path', 'spawnargs', 'killed', 'signal', 'cmd', 'stdout', 'stderr', ...pick]) {
    if (k in err) shape[k] = err[k];
  }
  if (err.cause !== undefined) shape.cause = err.cause instanceof Error ? `${err.cause.name}: ${err.cause.code ?? err.cause.message}` : String(err.cause);
  return shape;
}

/** Blocks the event loop (and with it every I/O callback) for `ms`. */
export function busy(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** 'positive integer', 'undefined' or what else a pid read as. */
export function pidKind(pid) {
  if (pid === undefined) return 'undefined';
  return Number.isInteger(pid) && pid > 0 ? 'positive integer' : `bad: ${String(pid)}`;
}

/**
 * The path of a script whose `#!` line names no interpreter that exists
 * (a CRLF line end, as a checkout from Windows leaves it): Node's spawn
 * fails with ENOENT; spawnpool's parked child finds out at its exec,
 * after 'spawn'.
 */
export function scriptWithoutInterpreter() {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-scenario-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'crlf.sh');
  writeFileSync(path, '#!/bin/sh\r\necho never\r\n');
  chmodSync(path, 0o755);
  return path;
}

/** Settles `promise` as {value} / {threw}; `shape` maps a rejection for comparison. */
export async function settle(promise, shape = errShape) {
  try {
    return { value: await promise };
  } catch (err) {
    return { threw: shape(err) };
  }
}

function counts() {
  const s = stats();
  return { served: s.spawned + s.spawnErrors, fallbacks: s.fallbacks };
}

async function runCase(fn) {
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: `no result within ${CASE_TIMEOUT_MS} ms` }), CASE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([settle(fn(), (err) => ({ uncaught: errShape(err), [STACK]: String(err?.stack) })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Written after every case, so that a crash still leaves what came before it.
function write(report, done) {
  if (process.env.SCENARIO_OUT) writeFileSync(process.env.SCENARIO_OUT, JSON.stringify({ ...report, done }));
  else if (done) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

/**
 * Runs `cases` ({name: async () => value}) in order and writes the report
 * ($SCENARIO_FROM: start at that index; $SCENARIO_ONLY: just that case).
 * The process must then exit by itself, as it would under Node: if it is
 * still alive LINGER_MS later, the report says so and the process exits 97.
 */
export async function run(cases) {
  const only = process.env.SCENARIO_ONLY;
  const from = Number(process.env.SCENARIO_FROM ?? 0);
  const report = { names: Object.keys(cases), current: null, cases: {}, counts: {}, stacks: {}, registered: false, lingered: false };
  for (const [name, fn] of Object.entries(cases).slice(from)) {
    if (only && only !== name) continue;
    report.current = name;
    write(report, false);
    const before = counts();
    const outcome = await runCase(fn);
    // Where an exception came from differs by implementation: kept apart,
    // for reading, not compared.
    if (outcome.threw?.[STACK]) report.stacks[name] = outcome.threw[STACK];
    report.cases[name] = outcome;
    const after = counts();
    report.counts[name] = { served: after.served - before.served, fallbacks: after.fallbacks - before.fallbacks };
    report.registered = stats().registered;
    write(report, false);
  }
  report.current = null;
  write(report, true);
  setTimeout(() => {
    report.lingered = true;
    write(report, true);
    process.exit(97);
  }, LINGER_MS).unref();
}
