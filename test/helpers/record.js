// Records what a user of node:child_process can observe of spawned children
// (events per child and per stdio stream, final properties, output bytes), so
// that the same scenario run against two implementations can be compared.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

const STREAM_NAMES = ['stdin', 'stdout', 'stderr'];

/** The observable shape of an error: what user code reads off it. */
export function errShape(err) {
  if (!(err instanceof Error)) return { notAnError: typeof err, value: String(err) };
  const shape = {
    name: err.name,
    ctor: err.constructor?.name,
    message: err.message,
    code: err.code,
    string: String(err),
    stackHead: String(err.stack).split('\n')[0],
    keys: Object.keys(err),
    isTypeError: err instanceof TypeError,
    isRangeError: err instanceof RangeError,
  };
  for (const k of ['errno', 'syscall', 'path', 'spawnargs']) if (k in err) shape[k] = err[k];
  if (err.cause !== undefined) shape.cause = err.cause instanceof Error ? err.cause.name : String(err.cause);
  return shape;
}

function pidKind(pid) {
  if (pid === undefined) return 'undefined';
  return Number.isInteger(pid) && pid > 0 ? 'positive integer' : `bad: ${String(pid)}`;
}

/** Bytes (or strings, after setEncoding) seen on one stream, summarized. */
function summarize(chunks) {
  if (chunks.length === 0) return { kind: 'none' };
  const strings = chunks.every((c) => typeof c === 'string');
  if (!strings && chunks.some((c) => typeof c === 'string')) return { kind: 'mixed' };
  if (strings) {
    const text = chunks.join('');
    return {
      kind: 'string',
      text: text.length <= 4096 ? text : undefined,
      length: text.length,
      sha256: createHash('sha256').update(text).digest('hex'),
      replacementChar: chunks.some((c) => c.includes('\ufffd')),
    };
  }
  const buf = Buffer.concat(chunks);
  return {
    kind: 'buffer',
    text: buf.length <= 4096 ? buf.toString('latin1') : undefined,
    length: buf.length,
    sha256: createHash('sha256').update(buf).digest('hex'),
  };
}

/**
 * Attaches recording listeners to a freshly returned child (before any event
 * can fire). Stream 'close' listeners are prepended: Node emits the child's
 * 'close' from inside the last stdio stream's own 'close' listener, so a late
 * listener would see the streams close "after" the child.
 */
export function instrument(child, seq) {
  const r = { child, events: [], chunks: {}, firstData: {}, pidSync: pidKind(child.pid), pidAtSpawn: null };
  const push = (src, ev, ...args) => {
    const at = seq.n++;
    r.events.push({ at, src, ev, args });
    return at;
  };
  child.on('spawn', () => {
    r.pidAtSpawn = pidKind(child.pid);
    push('child', 'spawn');
  });
  child.on('exit', (code, signal) => {
    push('child', 'exit', code, signal);
    r.atExit = { exitCode: child.exitCode, signalCode: child.signalCode, killed: child.killed };
  });
  child.on('close', (code, signal) => {
    push('child', 'close', code, signal);
    r.streamsAtClose = (child.stdio ?? []).map((s) => (s ? { destroyed: s.destroyed } : null));
  });
  child.on('error', (err) => push('child', 'error', errShape(err)));
  (child.stdio ?? []).forEach((s, i) => {
    if (!s) return;
    const name = STREAM_NAMES[i] ?? `stdio${i}`;
    if (i === 0) {
      s.on('finish', () => push(name, 'finish'));
    } else {
      r.chunks[name] = [];
      s.on('data', (chunk) => {
        const at = push(name, 'data');
        r.firstData[name] ??= at;
        r.chunks[name].push(chunk);
      });
      s.on('end', () => push(name, 'end'));
    }
    s.prependListener('close', () => push(name, 'close'));
    s.on('error', (err) => push(name, 'error', errShape(err)));
  });
  r.done = new Promise((resolve) => {
    let closed = false;
    child.once('close', () => { closed = true; resolve(true); });
    r.giveUp = () => { if (!closed) resolve(false); };
  });
  return r;
}

/** Per-source event sequences (data events left out: chunking differs). */
function sequences(events) {
  const out = {};
  for (const { src, ev, args } of events) {
    if (ev === 'data') continue;
    (out[src] ??= []).push(args.length ? [ev, ...args] : [ev]);
  }
  return out;
}

/** The orderings Node guarantees, checked within one record: a list of violations. */
export function orderViolations(r) {
  const bad = [];
  const first = (src, ev) => r.events.find((e) => e.src === src && e.ev === ev)?.at;
  const spawnAt = first('child', 'spawn');
  const exitAt = first('child', 'exit');
  const closeAt = first('child', 'close');
  const count = (src, ev) => r.events.filter((e) => e.src === src && e.ev === ev).length;
  for (const ev of ['spawn', 'exit', 'close']) if (count('child', ev) > 1) bad.push(`'${ev}' emitted ${count('child', ev)} times`);
  if (exitAt !== undefined && closeAt !== undefined && closeAt < exitAt) bad.push("'close' before 'exit'");
  if (spawnAt !== undefined && exitAt !== undefined && exitAt < spawnAt) bad.push("'exit' before 'spawn'");
  for (const [name, at] of Object.entries(r.firstData)) {
    if (spawnAt === undefined) bad.push(`${name} data without 'spawn'`);
    else if (at < spawnAt) bad.push(`${name} data before 'spawn'`);
  }
  if (closeAt !== undefined) {
    for (const name of Object.keys(r.chunks)) {
      const streamClose = first(name, 'close');
      if (streamClose === undefined) bad.push(`child 'close' but ${name} never closed`);
      else if (streamClose > closeAt) bad.push(`child 'close' before ${name} 'close'`);
      const lastData = r.events.filter((e) => e.src === name && e.ev === 'data').at(-1)?.at;
      if (lastData !== undefined && lastData > closeAt) bad.push(`${name} data after child 'close'`);
    }
  }
  for (const name of Object.keys(r.chunks)) {
    const endAt = first(name, 'end');
    const lastData = r.events.filter((e) => e.src === name && e.ev === 'data').at(-1)?.at;
    if (endAt !== undefined && lastData !== undefined && lastData > endAt) bad.push(`${name} data after 'end'`);
  }
  return bad;
}

/** The comparable record of one instrumented child, after it closed. */
export function finish(r) {
  const c = r.child;
  return {
    events: sequences(r.events),
    pidAtSpawn: r.pidAtSpawn,
    atExit: r.atExit,
    pidAfter: pidKind(c.pid),
    exitCode: c.exitCode,
    signalCode: c.signalCode,
    killed: c.killed,
    spawnfile: c.spawnfile,
    spawnargs: c.spawnargs,
    connected: c.connected,
    stdio: (c.stdio ?? []).map((s) => (s === null ? null : typeof s)),
    aliases: [c.stdio?.[0] === c.stdin, c.stdio?.[1] === c.stdout, c.stdio?.[2] === c.stderr],
    streamsAtClose: r.streamsAtClose,
    output: Object.fromEntries(Object.entries(r.chunks).map(([k, v]) => [k, summarize(v)])),
  };
}

/**
 * Runs `scenario(spawn, extra)` with a spawn that instruments every child it
 * returns, waits (bounded) for every child's 'close' and a short settle, and
 * returns { children: [record], extra, violations, pidSync: [...] }.
 */
export async function recordScenario(spawnImpl, scenario, { timeout = 8000, settle = 50 } = {}) {
  const seq = { n: 0 };
  const recs = [];
  const extra = {};
  const spawn = (...args) => {
    const child = spawnImpl(...args);
    recs.push(instrument(child, seq));
    return child;
  };
  const result = await scenario(spawn, extra);
  const timer = setTimeout(() => recs.forEach((r) => r.giveUp()), timeout);
  const closed = await Promise.all(recs.map((r) => r.done));
  clearTimeout(timer);
  await sleep(settle);
  if (typeof result === 'function') await result();
  const children = recs.map((r, i) => ({ ...finish(r), ...(closed[i] ? {} : { TIMEOUT: 'no close within the time limit' }) }));
  // Whatever the outcome, do not leave a child running past its scenario.
  for (const r of recs) if (r.child.exitCode === null && r.child.signalCode === null) try { r.child.kill('SIGKILL'); } catch {}
  return {
    children,
    extra,
    violations: recs.map(orderViolations),
    pidSync: recs.map((r) => r.pidSync),
  };
}

/** Resolves when the child emitted `event` (or rejects after `ms`). */
export async function waitFor(emitter, event, ms = 5000) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    return await once(emitter, event, { signal: ac.signal });
  } finally {
    clearTimeout(t);
  }
}

/** Polls `ok()` every 5 ms until it holds or `ms` have passed; returns its last value. */
export async function until(ok, ms = 10_000) {
  for (const end = Date.now() + ms; !ok() && Date.now() < end;) await sleep(5);
  return ok();
}

/** Where two plain values differ: ["path: actual … expected …"], at most `max` entries. */
export function diffPaths(actual, expected, max = 12) {
  const out = [];
  const show = (v) => {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 300 ? `${s.slice(0, 300)}…` : s;
  };
  const walk = (a, e, path) => {
    if (out.length >= max) return;
    if (Object.is(a, e)) return;
    const obj = (v) => v !== null && typeof v === 'object';
    if (obj(a) && obj(e) && Array.isArray(a) === Array.isArray(e)) {
      const keys = [...new Set([...Object.keys(e), ...Object.keys(a)])];
      for (const k of keys) walk(a[k], e[k], `${path}.${k}`);
      return;
    }
    out.push(`${path}: spawnpool ${show(a)}, node ${show(e)}`);
  };
  walk(actual, expected, '$');
  return out;
}

/**
 * How many bytes of stdout had been read when stderr's first bytes came,
 * and how many in all, for a child that writes `size` bytes to stdout and
 * then "done" to stderr. The writes block (fs.writeSync on the child's
 * blocking sockets), so every stdout byte is in its socket before "done"
 * is written, whatever the machine's load: a reader that keeps each
 * pipe's order must see all of stdout first, as node:child_process does.
 */
export async function stdoutBeforeStderr(spawn, size) {
  const script = `const fs = require("fs"); fs.writeSync(1, Buffer.alloc(${size}, 120)); fs.writeSync(2, "done\\n")`;
  const child = spawn(process.execPath, ['-e', script]);
  let out = 0;
  let outAtDone = -1;
  child.stdout.on('data', (d) => { out += d.length; });
  child.stderr.on('data', () => { if (outAtDone === -1) outAtDone = out; });
  const [code] = await once(child, 'close');
  return { code, out, outAtDone };
}
