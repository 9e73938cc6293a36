// Runtime-neutral differential check: representative scenarios against the
// runtime's own node:child_process and against spawnpool, in whatever
// runtime runs this file (Node, Bun, Deno), compared field by field.
//
//   node test/runtimes/run-scenarios.js
//   bun test/runtimes/run-scenarios.js
//   deno run -A test/runtimes/run-scenarios.js
//
// The pool serves (SPAWNPOOL_RUNTIME_MODE=serve unless set otherwise), and
// the check fails if it did not. Where the runtime's own spawn departs from
// Node's (KNOWN_DEPARTURES) spawnpool must give Node's value, recorded here
// from Node. Ends with "# runtime: N ok, N not ok"; exits non-zero on a mismatch.
process.env.SPAWNPOOL_RUNTIME_MODE ??= 'serve';

const nodeCp = await import('node:child_process');
// What the package gives this runtime: Deno's "deno" export condition names
// lib/'s modules, Node and Bun load the bundle (docs/install.md).
const spawnpool = await import(globalThis.Deno ? '../../lib/index.js' : '../../dist/index.js');
const { promisify } = await import('node:util');
const { createHash } = await import('node:crypto');

const runtime = globalThis.Deno?.permissions ? 'deno' : globalThis.Bun ? 'bun' : 'node';
const FIVE_MB = 5 * 1024 * 1024;
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** What a user sees of one child: events in order, output, final fields. */
function record(child) {
  return new Promise((resolve) => {
    const events = [];
    const out = { stdout: [], stderr: [] };
    const pidAtSpawn = [];
    for (const name of ['stdout', 'stderr']) child[name]?.on('data', (d) => out[name].push(d));
    child.on('spawn', () => { events.push(['spawn']); pidAtSpawn.push(typeof child.pid); });
    child.on('error', (err) => events.push(['error', errShape(err)]));
    child.on('exit', (code, signal) => events.push(['exit', code, signal]));
    child.on('close', (code, signal) => {
      events.push(['close', code, signal]);
      const stdout = Buffer.concat(out.stdout);
      resolve({
        events,
        pidAtSpawn,
        stdout: stdout.length > 4096 ? { length: stdout.length, sha256: sha256(stdout) } : stdout.toString(),
        stderr: Buffer.concat(out.stderr).toString(),
        exitCode: child.exitCode,
        signalCode: child.signalCode,
        killed: child.killed,
        spawnfile: child.spawnfile,
        spawnargs: child.spawnargs,
      });
    });
  });
}

function errShape(err) {
  if (!err) return err;
  const shape = { message: err.message, code: err.code, errno: err.errno, syscall: err.syscall, path: err.path };
  if ('spawnargs' in err) shape.spawnargs = err.spawnargs;
  for (const k of ['killed', 'signal', 'cmd', 'stdout', 'stderr']) if (k in err) shape[k] = err[k];
  return shape;
}

const SCENARIOS = {
  'echo': (cp) => record(cp.spawn('echo', ['hi', 'there'])),
  'stdin to cat': (cp) => {
    const child = cp.spawn('cat');
    const done = record(child);
    child.stdin.write('line one\n');
    child.stdin.end(Buffer.from('line two\n'));
    return done;
  },
  'exit code 7': (cp) => record(cp.spawn('sh', ['-c', 'exit 7'])),
  'kill SIGTERM': (cp) => {
    const child = cp.spawn('sleep', ['10']);
    child.once('spawn', () => child.kill());
    return record(child);
  },
  'kill SIGKILL, return value': async (cp) => {
    const child = cp.spawn('sleep', ['10']);
    const done = record(child);
    await new Promise((resolve) => child.once('spawn', resolve));
    const sent = child.kill('SIGKILL');
    return { sent, ...(await done), afterExit: child.kill() };
  },
  'killed by its own signal': (cp) => record(cp.spawn('sh', ['-c', 'kill -9 $$'])),
  'ENOENT': (cp) => record(cp.spawn('spawnpool-no-such-program', ['a'])),
  'ENOENT absolute': (cp) => record(cp.spawn('/nonexistent/prog')),
  'unknown signal throws': (cp) => {
    const child = cp.spawn('true');
    let thrown = null;
    try {
      child.kill('SIGFOO');
    } catch (err) {
      thrown = { code: err.code, name: err.name };
    }
    return record(child).then((r) => ({ thrown, exitCode: r.exitCode }));
  },
  'large output 5 MB': (cp) => record(cp.spawn('head', ['-c', String(FIVE_MB), '/dev/urandom']))
    .then((r) => ({ ...r, stdout: typeof r.stdout === 'object' ? r.stdout.length : r.stdout })),
  'large output 5 MB, exact bytes': (cp) => record(cp.spawn('sh', ['-c', `yes spawnpool | head -c ${FIVE_MB}`])),
  'exec promisified': (cp) => promisify(cp.exec)('echo out; echo err >&2'),
  'exec promisified, failing': (cp) => promisify(cp.exec)('echo partial; exit 3').then(
    () => 'resolved', (err) => errShape(err)),
  'execFile promisified': (cp) => promisify(cp.execFile)('printf', ['%s-%s', 'a', 'b']),
  'execFile callback, ENOENT': (cp) => new Promise((resolve) => {
    cp.execFile('spawnpool-no-such-program', ['x'], (err, stdout, stderr) => resolve({ err: errShape(err), stdout, stderr }));
  }),
  'execFile timeout kills': (cp) => new Promise((resolve) => {
    cp.execFile('sleep', ['5'], { timeout: 150 }, (err, stdout) => resolve({ err: errShape(err), stdout }));
  }),
  'exec with encoding buffer': (cp) => new Promise((resolve) => {
    cp.exec('printf abc', { encoding: 'buffer' }, (err, stdout) => resolve({ err, isBuffer: Buffer.isBuffer(stdout), stdout: [...stdout] }));
  }),
};

// Fields where the runtime's own spawn differs from Node's: spawnpool must
// give Node's value (`node`, as Node 20 reports it).
const ENOENT_SHAPE = (file, args) => ({
  message: `spawn ${file} ENOENT`, code: 'ENOENT', errno: -2, syscall: `spawn ${file}`, path: file, spawnargs: args,
});
const ENOENT_CLOSE = { 'exitCode': -2, 'events.1': ['close', -2, null] };
const KNOWN_DEPARTURES = {
  bun: {
    // Bun: "Executable not found in $PATH: ...", exitCode null, 'close' (null, undefined).
    'ENOENT': { 'events.0.1': ENOENT_SHAPE('spawnpool-no-such-program', ['a']), ...ENOENT_CLOSE },
    'ENOENT absolute': { 'events.0.1': ENOENT_SHAPE('/nonexistent/prog', []), ...ENOENT_CLOSE },
    'execFile callback, ENOENT': {
      'err': { ...ENOENT_SHAPE('spawnpool-no-such-program', ['x']), cmd: 'spawnpool-no-such-program x' },
    },
  },
  deno: {
    // Deno: exitCode null and 'close' (null, null) after a spawn error.
    'ENOENT': ENOENT_CLOSE,
    'ENOENT absolute': ENOENT_CLOSE,
  },
  node: {},
};
// spawnpool's exec/execFile are Node's, built on its spawn, served or delegated.
const EXEC_DEPARTURES = {
  bun: {
    // Bun leaves out the "\n${stderr}" that Node appends to "Command failed: cmd".
    'exec promisified, failing': { 'message': 'Command failed: echo partial; exit 3\n' },
    'execFile timeout kills': { 'err.message': 'Command failed: sleep 5\n' },
  },
};

/** Paths (a.b.0) where the two values differ. */
function diffPaths(a, b, path = '', out = []) {
  if (Object.is(a, b)) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) diffPaths(a[k], b[k], path ? `${path}.${k}` : k, out);
    return out;
  }
  out.push(path);
  return out;
}

const at = (value, path) => path.split('.').reduce((v, k) => v?.[k], value);
const settle = (fn, cp) => Promise.resolve().then(() => fn(cp)).then(
  (value) => ({ value }), (err) => ({ threw: errShape(err) }));

const serving = process.env.SPAWNPOOL_RUNTIME_MODE === 'serve';
let passed = 0;
let failed = 0;
for (const [name, scenario] of Object.entries(SCENARIOS)) {
  const [own, pool] = [await settle(scenario, nodeCp), await settle(scenario, spawnpool)];
  // Delegated, spawnpool is the runtime's own spawn, departures included.
  const departures = { ...(serving && KNOWN_DEPARTURES[runtime][name]), ...EXEC_DEPARTURES[runtime]?.[name] };
  const problems = [];
  for (const path of diffPaths(pool, own)) {
    const known = Object.keys(departures).find((p) => path === `value.${p}` || path.startsWith(`value.${p}.`));
    if (!known) problems.push(`${path}: spawnpool ${JSON.stringify(at(pool, path))}, own ${JSON.stringify(at(own, path))}`);
  }
  for (const [path, expected] of Object.entries(departures)) {
    const actual = at(pool.value, path);
    if (diffPaths(actual, expected).length) problems.push(`${path}: spawnpool ${JSON.stringify(actual)}, Node gives ${JSON.stringify(expected)}`);
  }
  if (problems.length === 0) {
    passed++;
    console.log(`ok ${name}`);
  } else {
    failed++;
    console.log(`not ok ${name}\n  ${problems.join('\n  ')}`);
  }
}

const stats = spawnpool.stats();
if (serving ? stats.spawned > 0 && stats.fallbacks === 0 : stats.spawned === 0) {
  passed++;
  console.log(`ok ${serving ? 'served by the pool' : 'delegated'} (spawned ${stats.spawned}, fallbacks ${stats.fallbacks})`);
} else {
  failed++;
  console.log(`not ok mode ${process.env.SPAWNPOOL_RUNTIME_MODE}: spawned ${stats.spawned}, fallbacks ${stats.fallbacks}`);
}
console.log(`# ${runtime}: ${passed} ok, ${failed} not ok`);
process.exitCode = failed === 0 ? 0 : 1;
