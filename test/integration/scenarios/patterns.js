// node:child_process used directly, as applications and libraries do: the
// calls go to spawnpool only through spawnpool/register. Includes the
// patterns of issue 8 that real libraries depend on.
import cpDefault, { spawn, exec, execFile } from 'node:child_process';
import * as cpNamespace from 'child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Transform } from 'node:stream';
import { promisify } from 'node:util';
import { run, errShape, busy, pidKind, settle } from './harness.js';

const require = createRequire(import.meta.url);

/** Resolves with everything `stream` gives (as a string), on 'end'. */
function collect(stream) {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => { text += chunk; });
  return once(stream, 'end').then(() => text);
}

/**
 * Blocks the loop until the child has exited (a zombie of Node's, or reaped
 * by a spawn server), at least `min` ms, then `extra` ms more so that what
 * it wrote and its exit are all waiting for the loop when it wakes.
 */
function busyUntilExited(pid, min = 50, extra = 20) {
  const start = performance.now();
  busy(min);
  if (pid === undefined) {
    busy(400);
    return;
  }
  while (performance.now() - start < 2000) {
    let state;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    } catch {
      break; // reaped
    }
    if (state === 'Z') break;
  }
  busy(extra);
}

/**
 * Issue 8 (5): what runs between events. Every listener queues a nextTick
 * and a promise reaction; the sequence of events and markers is the trace.
 * Consecutive identical 'data' groups are merged (chunking may differ).
 */
async function eventTrace(file, args, { input, blockInImmediate = false } = {}) {
  const log = [];
  const mark = (label) => {
    log.push(label);
    process.nextTick(() => log.push(`  ${label}: nextTick`));
    Promise.resolve().then(() => log.push(`  ${label}: promise`));
  };
  const child = spawn(file, args);
  const out = { stdout: '', stderr: '' };
  child.on('spawn', () => mark('spawn'));
  for (const name of ['stdout', 'stderr']) {
    const stream = child[name];
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      out[name] += chunk;
      mark(`${name} data`);
    });
    stream.on('end', () => mark(`${name} end`));
    stream.on('close', () => mark(`${name} close`));
  }
  child.on('exit', (code, signal) => mark(`exit ${code} ${signal}`));
  const closed = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      mark(`close ${code} ${signal}`);
      setImmediate(resolve);
    });
  });
  if (input !== undefined) child.stdin.end(input);
  // In a setImmediate, a spawn server has surely been sent the request.
  if (blockInImmediate) setImmediate(() => busyUntilExited(child.pid));
  else busyUntilExited(child.pid);
  await closed;
  return { trace: mergeDataGroups(log), ...out };
}

function mergeDataGroups(log) {
  const groups = [];
  for (const entry of log) {
    if (!entry.startsWith(' ') || groups.length === 0) groups.push([entry]);
    else groups.at(-1).push(entry);
  }
  const merged = groups.filter((g, i) => !(i > 0 && g[0].endsWith(' data') && g.join('\n') === groups[i - 1].join('\n')));
  return merged.flat();
}

run({
  // The hook must reach every way of getting at the module.
  'one module object for every import style': async () => ({
    named: spawn === cpDefault.spawn && exec === cpDefault.exec && execFile === cpDefault.execFile,
    namespace: cpNamespace.spawn === cpDefault.spawn,
    required: require('child_process').spawn === cpDefault.spawn && require('node:child_process') === cpDefault,
    promisifyCustom: typeof exec[promisify.custom] === 'function' && typeof execFile[promisify.custom] === 'function',
    lengths: [spawn.length, exec.length, execFile.length],
    names: [spawn.name, exec.name, execFile.name],
  }),

  'pid is set when spawn() returns': async () => {
    const child = spawn('true');
    const sync = pidKind(child.pid);
    await once(child, 'close');
    return { sync, exitCode: child.exitCode };
  },

  'stdout piped through a transform': async () => {
    const child = spawn('printf', ['alpha\\nbeta\\n']);
    const upper = new Transform({
      transform(chunk, enc, cb) { cb(null, chunk.toString().toUpperCase()); },
    });
    const text = collect(child.stdout.pipe(upper));
    const [code, signal] = await once(child, 'close');
    return { text: await text, code, signal };
  },

  'stdin to cat': async () => {
    const child = spawn('cat');
    const text = collect(child.stdout);
    child.stdin.write('one ');
    child.stdin.end('two');
    const [code] = await once(child, 'close');
    return { text: await text, code };
  },

  'shell with env': async () => {
    const child = spawn('echo "$GREETING" && exit 4', { shell: true, env: { ...process.env, GREETING: 'hello' } });
    const text = collect(child.stdout);
    const [code] = await once(child, 'close');
    return { text: await text, code };
  },

  'ENOENT: error shape and event order': async () => {
    const events = [];
    const child = spawn('spawnpool-no-such-command', ['a']);
    const sync = pidKind(child.pid);
    child.on('spawn', () => events.push('spawn'));
    child.on('exit', () => events.push('exit'));
    let error;
    child.on('error', (err) => {
      events.push('error');
      error = errShape(err);
    });
    const [code, signal] = await new Promise((resolve) => child.on('close', (...args) => resolve(args)));
    events.push('close');
    return { sync, events, error, code, signal, exitCode: child.exitCode };
  },

  'kill a sleeping child': async () => {
    const child = spawn('sleep', ['5']);
    await once(child, 'spawn');
    const sent = child.kill();
    // 'close' may follow 'exit' in the same callback: listen for both now.
    const closed = once(child, 'close');
    const [code, signal] = await once(child, 'exit');
    await closed;
    return { sent, code, signal, killed: child.killed, exitCode: child.exitCode, signalCode: child.signalCode };
  },

  'exec: buffered output': async () => settle(promisify(exec)('echo out; echo err >&2')),
  'exec: non-zero exit': async () => settle(promisify(exec)('echo out; echo err >&2; exit 3')),
  'execFile: ENOENT': async () => settle(promisify(execFile)('spawnpool-no-such-command', ['x'])),
  'execFile: timeout': async () => settle(promisify(execFile)('sleep', ['5'], { timeout: 100 })),
  'exec: maxBuffer': async () => settle(promisify(exec)('yes | head -c 100000', { maxBuffer: 1000 })
    .catch((err) => { err.stdout = err.stdout.length; throw err; })),
  'exec callback form': () => new Promise((resolve) => {
    exec('printf abc', (err, stdout, stderr) => resolve({ err, stdout, stderr }));
  }),

  // Issue 8 (2): 'spawn' awaited, then 'close', with the loop busy meanwhile.
  'await spawn, then close, loop busy': async () => {
    const child = spawn('sh', ['-c', 'echo hi; echo there >&2']);
    busy(50);
    await once(child, 'spawn');
    const [code, signal] = await once(child, 'close');
    return { code, signal };
  },

  // The same, with the loop busy once the request is surely on its way (in
  // a setImmediate): a spawn server's answers (spawned, output, exit) then
  // all wait for the loop together.
  'await spawn, then close, loop busy in setImmediate': async () => {
    const child = spawn('sh', ['-c', 'echo hi; echo there >&2']);
    const spawned = once(child, 'spawn');
    setImmediate(() => busy(50));
    await spawned;
    const [code, signal] = await once(child, 'close');
    return { code, signal };
  },

  // Issue 8 (3): stderr read to its end before stdout is read at all.
  'stderr read before stdout': async () => {
    const child = spawn('sh', ['-c', 'echo out; echo err >&2']);
    busy(50);
    let stderr = '';
    for await (const chunk of child.stderr) stderr += chunk;
    let stdout = '';
    for await (const chunk of child.stdout) stdout += chunk;
    const code = child.exitCode ?? (await once(child, 'close'))[0];
    return { stdout, stderr, code };
  },

  // Node's exec calls module.exports.execFile at each call: a wrapper put
  // there (an APM agent, t.mock.method(cp, 'execFile')) sees exec's calls,
  // the promisified exec's too.
  'exec goes through the module\'s execFile': async () => {
    const seen = [];
    const original = cpDefault.execFile;
    cpDefault.execFile = function wrapped(...args) {
      seen.push([args[0], this === cpDefault]);
      return original.apply(this, args);
    };
    try {
      const plain = await new Promise((resolve) => exec('echo one', (err, stdout) => resolve(stdout)));
      const { stdout: promised } = await promisify(exec)('echo two');
      return { seen, plain, promised };
    } finally {
      cpDefault.execFile = original;
    }
  },
  // Node calls the callback as a plain function: `this` is undefined here
  // (a module is strict), whatever the outcome.
  'exec and execFile callbacks get no this': async () => {
    const thisOf = (call) => new Promise((resolve) => call(function () { resolve(this === undefined ? 'undefined' : typeof this); }));
    return {
      ok: await thisOf((cb) => execFile('true', cb)),
      failed: await thisOf((cb) => exec('exit 3', cb)),
      missing: await thisOf((cb) => execFile('no-such-program-spawnpool', cb)),
    };
  },
  // An argument ToString cannot convert: Node 20 throws that error from
  // the call, Node 22 and 24 pass an empty argument.
  'arguments that do not convert to a string': async () => {
    const outcomes = [];
    for (const arg of [Symbol('s'), Object.create(null), { toString() { return {}; }, valueOf() { return 'v'; } }]) {
      try {
        outcomes.push(await new Promise((resolve) => execFile('printf', ['[%s]', arg], (err, stdout) => resolve(stdout))));
      } catch (err) {
        outcomes.push(`threw ${err.constructor.name}: ${err.message}`);
      }
    }
    const { stdout } = await promisify(execFile)('echo', ['after']);
    return { outcomes, stdout };
  },

  // Issue 8 (4): yes into a reader that goes away.
  'yes | head -n 1 in a shell': async () => settle(promisify(exec)('yes | head -n 1')),
  'yes with its stdout destroyed': async () => {
    const child = spawn('yes');
    const stderr = collect(child.stderr);
    await once(child.stdout, 'data');
    // Unread output in the pipe makes the writer's next write fail with
    // ECONNRESET rather than EPIPE: give yes the time to fill it.
    busy(20);
    child.stdout.destroy();
    const [code, signal] = await once(child, 'close');
    return { code, signal, stderr: await stderr };
  },

  // Issue 8 (5): event and microtask trace with the loop blocked.
  'trace: stdout, stderr, exit 3': async () => eventTrace('sh', ['-c', 'echo out; echo err >&2; exit 3']),
  // The child sleeps first so that, under Node too, nothing of it reaches the
  // loop before the setImmediate blocks it.
  'trace: stdout, stderr, exit 3, blocked in setImmediate': async () =>
    eventTrace('sh', ['-c', 'sleep 0.1; echo out; echo err >&2; exit 3'], { blockInImmediate: true }),
  'trace: stdout only': async () => eventTrace('echo', ['hi']),
  // head exits after one line, without waiting for the end of its stdin:
  // under Node the line is in its pipe before the loop is blocked.
  'trace: head with stdin': async () => eventTrace('head', ['-n', '1'], { input: 'fed\n' }),
  'trace: killed by a signal': async () => eventTrace('sh', ['-c', 'echo before; kill -TERM $$']),
});
