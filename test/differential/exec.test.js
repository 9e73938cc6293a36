// exec/execFile, differential: every scenario runs against node:child_process
// and against createExec(spawn under test), and the observations (callback
// arguments, error fields, output bytes, child event order) must be equal.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import * as childProcess from 'node:child_process';
import { createExec } from '../../lib/exec.js';

// The one place that picks the spawn under test: spawnpool's once
// lib/index.js exports it, Node's before that. SPAWNPOOL_DIFF_SPAWN=node
// forces Node's, to check the suite itself.
async function spawnUnderTest() {
  const index = new URL('../../dist/index.js', import.meta.url);
  if (process.env.SPAWNPOOL_DIFF_SPAWN !== 'node' && existsSync(index)) {
    const mod = await import(index);
    if (typeof mod.spawn === 'function') return { spawn: mod.spawn, label: 'spawnpool', stats: mod.stats };
  }
  return { spawn: childProcess.spawn, label: 'node:child_process spawn' };
}

const underTest = await spawnUnderTest();
const reference = { exec: childProcess.exec, execFile: childProcess.execFile };
const candidate = createExec(underTest.spawn);
const LIMIT = { timeout: 20_000 };
const CALL_DEADLINE = 8_000;

const scratch = mkdtempSync(join(tmpdir(), 'spawnpool-exec-'));
writeFileSync(join(scratch, 'not-executable'), 'echo never\n', { mode: 0o644 });
writeFileSync(join(scratch, 'no-shebang'), 'echo no shebang "$1"\n', { mode: 0o755 });
after(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * A scenario observes one API ({exec, execFile}); the candidate must observe
 * what Node observes. `check` pins Node's own result so a scenario that
 * stopped exercising anything (both sides equally wrong) is noticed.
 */
function scenario(name, observe, check) {
  test(`${name} [${underTest.label}]`, LIMIT, async () => {
    const expected = await observe(reference);
    check?.(expected);
    const actual = await observe(candidate);
    assert.deepStrictEqual(actual, expected);
  });
}

/** Everything user code can see on an error, the stack trace lines aside. */
function describeError(err) {
  if (err == null) return err;
  const stack = typeof err.stack === 'string' ? err.stack.split('\n    at ')[0] : err.stack;
  return {
    constructor: err.constructor?.name,
    isTypeError: err instanceof TypeError,
    isRangeError: err instanceof RangeError,
    name: err.name,
    message: err.message,
    string: String(err),
    stack,
    ownNames: Object.getOwnPropertyNames(err),
    fields: Object.fromEntries(Object.keys(err).map((key) => [key, err[key]])),
    cause: err.cause === undefined ? undefined : { name: err.cause.name, message: err.cause.message },
  };
}

function sha256(data) {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Calls api[method](...args, callback) and records the callback result and
 * the child's events in order. `events`: 'full' (with arguments), 'names', or
 * false when the order races by nature. `during(child, log)` acts mid-run.
 */
function observeCall(api, method, args, { events = 'full', during, output = (x) => x } = {}) {
  return new Promise((resolve) => {
    const log = [];
    let result;
    let closed = false;
    const observation = () => (events ? { ...result, events: log } : result);
    const settle = () => {
      if (result && closed) {
        clearTimeout(deadline);
        resolve(observation());
      }
    };
    // A call that never completes fails as a diff (what was missing), not as
    // a bare test timeout; Node finishes every scenario well within this.
    const deadline = setTimeout(() => resolve({ unfinished: { callback: !!result, close: closed }, ...observation() }), CALL_DEADLINE);
    const child = api[method](...args, (err, stdout, stderr) => {
      log.push('callback');
      result = { err: describeError(err), stdout: output(stdout), stderr: output(stderr), pidType: typeof child.pid };
      settle();
    });
    log.push('returned');
    const record = (name) => (...values) => {
      log.push(events === 'full' ? [name, ...values.map((v) => (v instanceof Error ? v.name : String(v)))].join(' ') : name);
    };
    for (const name of ['spawn', 'exit', 'error']) child.on(name, record(name));
    child.on('close', (...values) => {
      record('close')(...values);
      closed = true;
      settle();
    });
    during?.(child, log);
  });
}

const exec = (api, ...args) => observeCall(api, 'exec', args);
const execFile = (api, ...args) => observeCall(api, 'execFile', args);

// --- callback basics -------------------------------------------------------

scenario('exec success: (null, stdout, stderr) and event order', (api) => exec(api, 'echo hello'), (r) => {
  assert.equal(r.err, null);
  assert.equal(r.stdout, 'hello\n');
  assert.deepEqual(r.events, ['returned', 'spawn', 'exit 0 null', 'callback', 'close 0 null']);
});

scenario('execFile success with arguments', (api) => execFile(api, 'printf', ['%s|%s', 'a b', 'c']), (r) => {
  assert.equal(r.stdout, 'a b|c');
});

scenario('stdout and stderr together', (api) => exec(api, 'echo out; echo err >&2; echo out2'), (r) => {
  assert.deepEqual([r.stdout, r.stderr], ['out\nout2\n', 'err\n']);
});

scenario('non-zero exit: code, killed, signal, cmd, stdout, stderr', (api) => exec(api, 'echo partial; echo oops >&2; exit 3'), (r) => {
  assert.deepEqual(r.err.fields, { code: 3, killed: false, signal: null, cmd: 'echo partial; echo oops >&2; exit 3' });
  assert.equal(r.err.message, 'Command failed: echo partial; echo oops >&2; exit 3\noops\n');
});

scenario('execFile non-zero exit: cmd joins file and args', (api) => execFile(api, 'sh', ['-c', 'exit 7', 'x y']), (r) => {
  assert.equal(r.err.fields.cmd, 'sh -c exit 7 x y');
  assert.equal(r.err.fields.code, 7);
});

scenario('death by a signal nobody sent through exec: killed false', (api) => exec(api, 'kill -USR1 $$'), (r) => {
  assert.deepEqual(r.err.fields, { code: null, killed: false, signal: 'SIGUSR1', cmd: 'kill -USR1 $$' });
});

scenario('shell not found by exec: exit 127 and the shell\'s message', (api) => exec(api, 'no-such-program-spawnpool'), (r) => {
  assert.equal(r.err.fields.code, 127);
});

scenario('stdin is a pipe the caller can write', (api) => observeCall(api, 'exec', ['cat'], {
  during: (child) => child.stdin.end('from stdin'),
}), (r) => {
  assert.equal(r.stdout, 'from stdin');
});

// --- encodings ---------------------------------------------------------------

const binary = '\\000\\001\\177\\200\\303\\251\\377\\n';
for (const encoding of ['utf8', 'buffer', 'latin1', 'hex', 'base64', 'ucs2', 'no-such-encoding', undefined, null]) {
  scenario(`encoding ${encoding}: binary output`, (api) => execFile(api, 'printf', [binary], { encoding }), (r) => {
    assert.equal(Buffer.isBuffer(r.stdout), !['utf8', 'latin1', 'hex', 'base64', 'ucs2'].includes(encoding));
  });
}

scenario('encoding buffer: stderr and error message are built from Buffers', (api) => exec(api, 'printf "\\303\\251" >&2; exit 1', { encoding: 'buffer' }), (r) => {
  assert.ok(Buffer.isBuffer(r.stderr));
  assert.equal(r.err.message, 'Command failed: printf "\\303\\251" >&2; exit 1\né');
});

scenario('setEncoding by the caller on a Buffer-mode exec yields strings', (api) => observeCall(api, 'exec', ['printf abc'], {
  during: (child) => child.stdout.setEncoding('hex'),
}), (r) => {
  assert.equal(r.stdout, '616263');
  assert.ok(Buffer.isBuffer(r.stderr) === false);
});

// --- volume and maxBuffer ----------------------------------------------------

const tenMiB = 10 * 1024 * 1024;
const digest = (x) => ({ type: Buffer.isBuffer(x) ? 'buffer' : typeof x, length: x.length, sha256: sha256(x) });

for (const encoding of ['utf8', 'buffer']) {
  scenario(`10 MiB through exec (${encoding})`, (api) => observeCall(api, 'exec', [`yes 0123456789abcdef | head -c ${tenMiB}`, { maxBuffer: 16 * 1024 * 1024, encoding }], { output: digest }), (r) => {
    assert.equal(r.err, null);
    assert.equal(r.stdout.length, tenMiB);
  });
}

scenario('10 MiB over the default maxBuffer: truncated to exactly 1 MiB', (api) => observeCall(api, 'exec', [`yes 0123456789abcdef | head -c ${tenMiB}`], { output: digest, events: 'names' }), (r) => {
  assert.equal(r.err.fields.code, 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
  assert.equal(r.stdout.length, 1024 * 1024);
});

for (const stream of ['stdout', 'stderr']) {
  const redirect = stream === 'stderr' ? ' >&2' : '';
  for (const encoding of ['utf8', 'buffer']) {
    scenario(`maxBuffer exactly at the limit on ${stream} (${encoding})`, (api) => observeCall(api, 'exec', [`printf abcdef${redirect}`, { maxBuffer: 6, encoding }], { events: 'names' }), (r) => {
      assert.equal(r.err, null);
    });
    scenario(`maxBuffer one byte over on ${stream} (${encoding})`, (api) => observeCall(api, 'exec', [`printf abcdef${redirect}`, { maxBuffer: 5, encoding }], { events: 'names' }), (r) => {
      assert.equal(r.err.string, `RangeError [ERR_CHILD_PROCESS_STDIO_MAXBUFFER]: ${stream} maxBuffer length exceeded`);
      assert.equal(String(r[stream]), 'abcde');
    });
  }
}

scenario('maxBuffer over with multi-byte utf8: string sliced by characters', (api) => observeCall(api, 'exec', ['printf ééé', { maxBuffer: 5 }], { events: 'names' }), (r) => {
  assert.equal(r.stdout, 'ééé');
});

scenario('maxBuffer over with multi-byte output as buffer: sliced by bytes', (api) => observeCall(api, 'exec', ['printf ééé', { maxBuffer: 5, encoding: 'buffer' }], { events: 'names' }), (r) => {
  assert.equal(r.stdout.length, 5);
});

scenario('maxBuffer over with hex: maxBuffer hex digits kept, half the bytes', (api) => observeCall(api, 'exec', ['printf abcdef', { maxBuffer: 4, encoding: 'hex' }], { events: 'names' }), (r) => {
  assert.equal(r.stdout, '6162');
});

scenario('maxBuffer 0 with no output succeeds', (api) => exec(api, 'true', { maxBuffer: 0 }), (r) => {
  assert.equal(r.err, null);
});

scenario('200 concurrent execFile calls', async (api) => {
  const calls = Array.from({ length: 200 }, (_, i) => new Promise((resolve) => {
    const deadline = setTimeout(() => resolve('unfinished'), CALL_DEADLINE);
    api.execFile('printf', ['%s', String(i)], (err, stdout, stderr) => {
      clearTimeout(deadline);
      resolve([describeError(err), stdout, stderr]);
    });
  }));
  return Promise.all(calls);
}, (r) => {
  assert.deepEqual(r[199], [null, '199', '']);
});

// --- shells --------------------------------------------------------------------

const env = { PATH: process.env.PATH, FOO: 'foo value', BAR: 'b' };

scenario('exec: double quotes and a pipe', (api) => exec(api, 'echo "a b" | tr a-z A-Z'), (r) => {
  assert.equal(r.stdout, 'A B\n');
});

scenario('exec: single quotes stay literal', (api) => exec(api, "echo 'x  $FOO \"y\"'", { env }), (r) => {
  assert.equal(r.stdout, 'x  $FOO "y"\n');
});

scenario('exec: $VAR expansion from env', (api) => exec(api, 'echo "$FOO-$BAR"', { env }), (r) => {
  assert.equal(r.stdout, 'foo value-b\n');
});

scenario('exec: shell path', (api) => exec(api, 'echo $0', { shell: '/bin/bash' }), (r) => {
  assert.equal(r.stdout, '/bin/bash\n');
});

scenario('execFile shell: true joins args unescaped', (api) => execFile(api, 'echo', ['$FOO', '"q  r"'], { shell: true, env }), (r) => {
  assert.equal(r.stdout, 'foo value q  r\n');
});

scenario('execFile shell path', (api) => execFile(api, 'echo $0', { shell: '/bin/bash' }), (r) => {
  assert.equal(r.stdout, '/bin/bash\n');
});

scenario('execFile shell false: no expansion', (api) => execFile(api, 'echo', ['$FOO'], { env }), (r) => {
  assert.equal(r.stdout, '$FOO\n');
});

// --- promise forms ---------------------------------------------------------

async function observePromise(api, method, args) {
  const promise = promisify(api[method])(...args);
  const child = promise.child;
  const childShape = { hasKill: typeof child.kill === 'function', hasStdout: child.stdout != null };
  try {
    return { resolved: await promise, childShape };
  } catch (err) {
    return { rejected: describeError(err), childShape };
  }
}

scenario('promisify(exec) resolves {stdout, stderr}', (api) => observePromise(api, 'exec', ['echo o; echo e >&2']), (r) => {
  assert.deepEqual(r.resolved, { stdout: 'o\n', stderr: 'e\n' });
});

scenario('promisify(execFile) rejects with stdout and stderr on the error', (api) => observePromise(api, 'execFile', ['sh', ['-c', 'echo o; echo e >&2; exit 4']]), (r) => {
  assert.deepEqual(Object.keys(r.rejected.fields), ['code', 'killed', 'signal', 'cmd', 'stdout', 'stderr']);
});

scenario('promisify(execFile) rejects a missing program with ENOENT', (api) => observePromise(api, 'execFile', ['no-such-program-spawnpool']), (r) => {
  assert.equal(r.rejected.fields.code, 'ENOENT');
});

scenario('promise forms have the same name and length', (api) => {
  const forms = [promisify(api.exec), promisify(api.execFile)];
  return forms.map((f) => ({ name: f.name, length: f.length, hasPrototype: 'prototype' in f }));
});

// --- AbortSignal ---------------------------------------------------------------

scenario('signal aborted before the call: AbortError on the next tick', (api) => {
  const controller = new AbortController();
  controller.abort();
  return exec(api, 'exec sleep 5', { signal: controller.signal });
}, (r) => {
  assert.equal(r.err.fields.code, 'ABORT_ERR');
  assert.deepEqual(r.events, ['returned', 'spawn', 'callback', 'error AbortError', 'exit null SIGTERM', 'close null SIGTERM']);
});

function abortAfterOutput(reason, options = {}) {
  return (api) => {
    const controller = new AbortController();
    return observeCall(api, 'exec', ['echo started; exec sleep 5', { signal: controller.signal, ...options }], {
      during: (child, log) => child.stdout.once('data', () => {
        log.push('abort');
        controller.abort(reason);
        log.push('abort returned');
      }),
    });
  };
}

scenario('signal aborted after spawn: callback and error run inside abort()', abortAfterOutput(), (r) => {
  assert.equal(r.stdout, 'started\n');
  assert.deepEqual(r.err.cause, { name: 'AbortError', message: 'This operation was aborted' });
  assert.deepEqual(r.events, ['returned', 'spawn', 'abort', 'callback', 'error AbortError', 'abort returned', 'exit null SIGTERM', 'close null SIGTERM']);
});

scenario('abort reason becomes the AbortError cause', abortAfterOutput(new Error('because')), (r) => {
  assert.deepEqual(r.err.cause, { name: 'Error', message: 'because' });
});

scenario('abort kills with SIGTERM even when killSignal is set (Node quirk)', abortAfterOutput(undefined, { killSignal: 'SIGKILL' }), (r) => {
  assert.ok(r.events.includes('exit null SIGTERM'));
});

scenario('signal never aborted: no effect', (api) => exec(api, 'echo ok', { signal: new AbortController().signal }), (r) => {
  assert.equal(r.err, null);
});

// --- timeouts --------------------------------------------------------------------

// The loop ignores SIGPIPE so that it dies by the kill signal, not by writing
// to the pipe exec destroys just before killing.
const ticking = "trap '' PIPE; echo start; while :; do echo tick; sleep 0.01; done";
const tickShape = (stdout) => /^(start\n(tick\n)*)?$/.test(stdout);

for (const killSignal of [undefined, 'SIGKILL', 9, 'sigusr1']) {
  scenario(`timeout during output, killSignal ${killSignal}`, (api) => observeCall(api, 'exec', [ticking, { timeout: 300, killSignal }], { output: tickShape }), (r) => {
    assert.equal(r.err.fields.killed, true);
    assert.equal(r.stdout, true);
  });
}

scenario('timeout not reached: plain success', (api) => exec(api, 'echo fast', { timeout: 10_000 }), (r) => {
  assert.equal(r.err, null);
});

// --- invalid arguments (thrown synchronously) -------------------------------

const invalidCalls = {
  'command not a string': (api) => api.exec(42),
  'command with NUL': (api) => api.exec('echo \0'),
  'options not an object': (api) => api.execFile('echo', [], 'options'),
  'callback not a function': (api) => api.execFile('echo', [], {}, 'callback'),
  'args a string': (api) => api.execFile('echo', 'args'),
  'file not a string': (api) => api.execFile(42),
  'file empty': (api) => api.execFile(''),
  'file with NUL': (api) => api.execFile('ec\0ho'),
  'arg with NUL': (api) => api.execFile('echo', ['a', 'b\0']),
  'argv0 not a string': (api) => api.execFile('echo', { argv0: 1 }),
  'timeout negative': (api) => api.exec('echo', { timeout: -1 }),
  'timeout not an integer': (api) => api.exec('echo', { timeout: 0.5 }),
  'maxBuffer negative': (api) => api.exec('echo', { maxBuffer: -1 }),
  'maxBuffer a string': (api) => api.exec('echo', { maxBuffer: '1' }),
  'killSignal unknown': (api) => api.exec('echo', { killSignal: 'SIGNOPE' }),
  'killSignal an object': (api) => api.exec('echo', { killSignal: {} }),
  'signal not an AbortSignal': (api) => api.exec('echo', { signal: {} }),
  'cwd a number': (api) => api.execFile('echo', { cwd: 1 }),
  'cwd with NUL': (api) => api.execFile('echo', { cwd: '/tmp\0' }),
  'shell a number': (api) => api.execFile('echo', { shell: 1 }),
  'uid not an int32': (api) => api.execFile('echo', { uid: 1.5 }),
  'gid a string': (api) => api.execFile('echo', { gid: '0' }),
  'env value with NUL': (api) => api.execFile('echo', { env: { A: 'x\0' } }),
};

for (const [name, call] of Object.entries(invalidCalls)) {
  scenario(`invalid arguments: ${name}`, (api) => {
    try {
      const child = call(api);
      child.kill();
      return { threw: false };
    } catch (err) {
      return { threw: describeError(err) };
    }
  }, (r) => {
    assert.match(r.threw.fields.code, /^ERR_/);
  });
}

// --- spawn failures ------------------------------------------------------------

scenario('ENOENT for a missing program', (api) => execFile(api, 'no-such-program-spawnpool', ['a', 'b c']), (r) => {
  assert.deepEqual(r.err.fields, {
    errno: -2, code: 'ENOENT', syscall: 'spawn no-such-program-spawnpool', path: 'no-such-program-spawnpool',
    spawnargs: ['a', 'b c'], cmd: 'no-such-program-spawnpool a b c',
  });
  assert.deepEqual(r.events, ['returned', 'callback', 'error Error', 'close -2 null']);
});

scenario('EACCES for a directory', (api) => execFile(api, scratch), (r) => {
  assert.equal(r.err.fields.code, 'EACCES');
});

scenario('EACCES for a file without execute permission', (api) => execFile(api, join(scratch, 'not-executable')), (r) => {
  assert.equal(r.err.fields.code, 'EACCES');
});

// execvp (which libuv uses) runs a file without a #! line through /bin/sh on
// ENOEXEC; posix_spawn does not, so a spawn server must do it by hand.
scenario('an executable without #! runs through /bin/sh', (api) => execFile(api, join(scratch, 'no-shebang'), ['arg']), (r) => {
  assert.equal(r.stdout, 'no shebang arg\n');
});

scenario('execFile with a missing cwd: ENOENT naming the program', (api) => execFile(api, 'pwd', { cwd: '/no/such/dir/spawnpool' }), (r) => {
  assert.equal(r.err.fields.syscall, 'spawn pwd');
});

scenario('exec with a missing cwd: ENOENT naming the shell', (api) => exec(api, 'pwd', { cwd: '/no/such/dir/spawnpool' }), (r) => {
  assert.deepEqual(r.err.fields.spawnargs, ['-c', 'pwd']);
  assert.equal(r.err.fields.path, '/bin/sh');
});

// Last, so that a green run that never reached a spawn server (fallbacks to
// node:child_process) says so in the report.
if (underTest.stats) {
  test('spawnpool pool statistics after the suite', (t) => {
    t.diagnostic(`stats: ${JSON.stringify(underTest.stats())}`);
  });
}
