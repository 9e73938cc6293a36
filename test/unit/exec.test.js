// exec.js against a scripted fake spawn: what it hands to spawn, how it
// buffers, truncates, kills and reports, without any real process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { setImmediate as tick } from 'node:timers/promises';
import { createExec } from '../../lib/exec.js';

class FakeChild extends EventEmitter {
  constructor(file, args, options) {
    super();
    Object.assign(this, { file, args, options, killed: false, signals: [] });
    this.stdout = new Readable({ read() {} });
    this.stderr = new Readable({ read() {} });
    this.killImpl = () => true;
  }

  kill(signal) {
    this.signals.push(signal);
    const sent = this.killImpl(signal);
    if (sent) this.killed = true;
    return sent;
  }

  async finish(code, signal = null) {
    await tick();
    this.emit('exit', code, signal);
    this.emit('close', code, signal);
  }
}

function fakeExec() {
  const children = [];
  const spawn = (file, args, options) => {
    const child = new FakeChild(file, args, options);
    children.push(child);
    return child;
  };
  return { ...createExec(spawn), children };
}

function callbackResult() {
  let settle;
  const done = new Promise((resolve) => { settle = resolve; });
  const callback = (err, stdout, stderr) => settle({ err, stdout, stderr });
  return { callback, done };
}

async function feed(stream, ...chunks) {
  for (const chunk of chunks) stream.push(chunk);
  await tick();
}

test('execFile hands spawn exactly the options Node does', () => {
  const { execFile, children } = fakeExec();
  const signal = new AbortController().signal;
  const args = ['a', 'b'];
  execFile('prog', args, {
    cwd: '/tmp', env: { A: '1' }, uid: 1, gid: 2, signal, shell: '/bin/bash', windowsHide: 1,
    timeout: 5, killSignal: 'SIGKILL', maxBuffer: 3, argv0: 'x', detached: true, stdio: 'inherit',
  });
  const [child] = children;
  assert.equal(child.file, 'prog');
  assert.deepEqual(child.args, ['a', 'b']);
  assert.notEqual(child.args, args, 'args are copied');
  assert.deepEqual(child.options, {
    cwd: '/tmp', env: { A: '1' }, gid: 2, shell: '/bin/bash', signal, uid: 1,
    windowsHide: true, windowsVerbatimArguments: false,
  });
});

test('execFile defaults: no args, null cwd/env, shell false', () => {
  const { execFile, children } = fakeExec();
  execFile('prog');
  assert.deepEqual(children[0].args, []);
  assert.deepEqual(children[0].options, {
    cwd: null, env: null, gid: undefined, shell: false, signal: undefined, uid: undefined,
    windowsHide: false, windowsVerbatimArguments: false,
  });
});

test('exec runs the command through a shell, keeping a shell path', () => {
  const { exec, children } = fakeExec();
  exec('echo hi');
  exec('echo hi', { shell: '/bin/bash' });
  exec('echo hi', { shell: false });
  assert.deepEqual(children.map((c) => [c.file, c.args, c.options.shell]), [
    ['echo hi', [], true],
    ['echo hi', [], '/bin/bash'],
    ['echo hi', [], true],
  ]);
});

test('success: utf8 strings joined across chunks, including a split character', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', callback);
  const [child] = children;
  const euro = Buffer.from('€');
  await feed(child.stdout, Buffer.from('a'), euro.subarray(0, 1), euro.subarray(1));
  await feed(child.stderr, Buffer.from('e'));
  await child.finish(0);
  assert.deepEqual(await done, { err: null, stdout: 'a€', stderr: 'e' });
});

for (const encoding of ['buffer', 'no-such-encoding', undefined, null]) {
  test(`encoding ${encoding} yields Buffers`, async () => {
    const { execFile, children } = fakeExec();
    const { callback, done } = callbackResult();
    execFile('prog', { encoding }, callback);
    await feed(children[0].stdout, Buffer.from([0xff, 0]));
    await children[0].finish(0);
    const { stdout, stderr } = await done;
    assert.deepEqual(stdout, Buffer.from([0xff, 0]));
    assert.deepEqual(stderr, Buffer.alloc(0));
  });
}

test('a setEncoding() by the caller turns Buffer output into a string', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  const child = execFile('prog', { encoding: 'buffer' }, callback);
  child.stdout.setEncoding('hex');
  await feed(child.stdout, Buffer.from([0xab]));
  await children[0].finish(0);
  const { stdout, stderr } = await done;
  assert.equal(stdout, 'ab');
  assert.deepEqual(stderr, Buffer.alloc(0));
});

test('non-zero exit: Command failed error with code, killed, signal, cmd', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', ['x', 'y z'], callback);
  await feed(children[0].stderr, 'bad\n');
  await children[0].finish(2);
  const { err, stdout, stderr } = await done;
  assert.equal(err.message, 'Command failed: prog x y z\nbad\n');
  assert.deepEqual(Object.keys(err), ['code', 'killed', 'signal', 'cmd']);
  assert.deepEqual([err.code, err.killed, err.signal, err.cmd], [2, false, null, 'prog x y z']);
  assert.deepEqual([stdout, stderr], ['', 'bad\n']);
});

test('death by signal is an error even with no exit code', async () => {
  const { exec, children } = fakeExec();
  const { callback, done } = callbackResult();
  exec('cmd', callback);
  await children[0].finish(null, 'SIGKILL');
  const { err } = await done;
  assert.deepEqual([err.code, err.killed, err.signal, err.cmd], [null, false, 'SIGKILL', 'cmd']);
});

test('a negative exit code is reported by its errno name', async () => {
  const { exec, children } = fakeExec();
  const { callback, done } = callbackResult();
  exec('cmd', callback);
  await children[0].finish(-2);
  assert.equal((await done).err.code, 'ENOENT');
});

test("'error' from spawn ends the call once, with cmd added and streams destroyed", async () => {
  const { execFile, children } = fakeExec();
  let calls = 0;
  let result;
  execFile('prog', ['a'], (...args) => { calls++; result = args; });
  const [child] = children;
  await feed(child.stdout, 'partial');
  const spawnError = Object.assign(new Error('spawn prog ENOENT'), { code: 'ENOENT' });
  child.emit('error', spawnError);
  assert.equal(calls, 1, 'callback runs synchronously inside emit');
  assert.equal(result[0], spawnError);
  assert.equal(spawnError.cmd, 'prog a');
  assert.deepEqual(result.slice(1), ['partial', '']);
  assert.ok(child.stdout.destroyed && child.stderr.destroyed);
  await child.finish(-2);
  assert.equal(calls, 1);
});

test('maxBuffer: exactly at the limit succeeds', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { maxBuffer: 4 }, callback);
  await feed(children[0].stdout, 'ab', 'cd');
  await feed(children[0].stderr, 'wxyz');
  await children[0].finish(0);
  assert.deepEqual(await done, { err: null, stdout: 'abcd', stderr: 'wxyz' });
  assert.deepEqual(children[0].signals, []);
});

for (const name of ['stdout', 'stderr']) {
  test(`maxBuffer: one byte over on ${name} truncates, kills, and reports ERR_CHILD_PROCESS_STDIO_MAXBUFFER`, async () => {
    const { execFile, children } = fakeExec();
    const { callback, done } = callbackResult();
    execFile('prog', ['-v'], { maxBuffer: 4, encoding: 'buffer', killSignal: 'sigint' }, callback);
    const [child] = children;
    await feed(child[name], Buffer.from('ab'), Buffer.from('cde'));
    assert.deepEqual(child.signals, [2]);
    assert.ok(child.stdout.destroyed && child.stderr.destroyed);
    await child.finish(null, 'SIGINT');
    const { err, ...output } = await done;
    assert.ok(err instanceof RangeError);
    assert.equal(err.code, 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
    assert.equal(err.message, `${name} maxBuffer length exceeded`);
    assert.equal(String(err), `RangeError [ERR_CHILD_PROCESS_STDIO_MAXBUFFER]: ${name} maxBuffer length exceeded`);
    assert.deepEqual(Object.keys(err), ['code', 'cmd']);
    assert.equal(err.cmd, 'prog -v');
    assert.deepEqual(output[name], Buffer.from('abcd'));
  });
}

test('maxBuffer with utf8 slices characters by the byte count (Node quirk)', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { maxBuffer: 5 }, callback);
  await feed(children[0].stdout, Buffer.from('ééé'));
  await children[0].finish(null, 'SIGTERM');
  const { err, stdout } = await done;
  assert.equal(err.code, 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
  assert.equal(stdout, 'ééé', '5 characters of a 3-character string: all of it, 6 bytes');
});

test('maxBuffer with hex keeps maxBuffer hex digits, half the bytes (Node quirk)', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { maxBuffer: 4, encoding: 'hex' }, callback);
  await feed(children[0].stdout, Buffer.from([1, 2, 3, 4, 5, 6]));
  await children[0].finish(null, 'SIGTERM');
  assert.equal((await done).stdout, '0102');
});

test('maxBuffer undefined or Infinity means no limit', async () => {
  for (const maxBuffer of [undefined, Infinity]) {
    const { execFile, children } = fakeExec();
    const { callback, done } = callbackResult();
    execFile('prog', { maxBuffer }, callback);
    await feed(children[0].stdout, 'x'.repeat(2 * 1024 * 1024));
    await children[0].finish(0);
    const { err, stdout } = await done;
    assert.equal(err, null);
    assert.equal(stdout.length, 2 * 1024 * 1024);
  }
});

test('default maxBuffer is 1 MiB', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', callback);
  await feed(children[0].stdout, 'x'.repeat(1024 * 1024), 'y');
  await children[0].finish(null, 'SIGTERM');
  const { err, stdout } = await done;
  assert.equal(err.code, 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
  assert.equal(stdout, 'x'.repeat(1024 * 1024));
});

test('timeout kills with killSignal and reports killed', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { timeout: 50, killSignal: 'SIGUSR1' }, callback);
  const [child] = children;
  t.mock.timers.tick(49);
  assert.deepEqual(child.signals, []);
  t.mock.timers.tick(1);
  assert.deepEqual(child.signals, [10]);
  assert.ok(child.stdout.destroyed);
  await child.finish(null, 'SIGUSR1');
  const { err } = await done;
  assert.deepEqual([err.code, err.killed, err.signal], [null, true, 'SIGUSR1']);
});

test('a timeout whose kill fails still reports killed: true on a failed exit, as Node does', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { timeout: 10 }, callback);
  children[0].killImpl = () => false;
  t.mock.timers.tick(10);
  assert.equal(children[0].killed, false);
  await children[0].finish(1);
  const { err } = await done;
  assert.deepEqual([err.code, err.killed, err.signal], [1, true, null]);
});

test('exit before the timeout clears the timer', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { timeout: 10 }, callback);
  await children[0].finish(0);
  await done;
  t.mock.timers.tick(20);
  assert.deepEqual(children[0].signals, []);
});

test('a throwing kill() ends the call with that error', async () => {
  const { execFile, children } = fakeExec();
  const { callback, done } = callbackResult();
  execFile('prog', { maxBuffer: 0 }, callback);
  const boom = new Error('kill EPERM');
  children[0].killImpl = () => { throw boom; };
  await feed(children[0].stdout, 'x');
  const { err, stdout } = await done;
  assert.equal(err, boom);
  assert.equal(err.cmd, 'prog');
  assert.equal(stdout, '');
});

test('no callback: output is collected and dropped silently', async () => {
  const { execFile, children } = fakeExec();
  execFile('prog');
  await feed(children[0].stdout, 'x');
  await children[0].finish(1);
});

test('promise forms resolve {stdout, stderr} and carry the child', async () => {
  const { exec, execFile, children } = fakeExec();
  const pending = promisify(exec)('cmd');
  assert.equal(pending.child, children[0]);
  await feed(children[0].stdout, 'out');
  await children[0].finish(0);
  assert.deepEqual(await pending, { stdout: 'out', stderr: '' });
  const failing = promisify(execFile)('prog', ['a']);
  await feed(children[1].stderr, 'err');
  await children[1].finish(1);
  await assert.rejects(failing, (err) => {
    assert.deepEqual(Object.keys(err), ['code', 'killed', 'signal', 'cmd', 'stdout', 'stderr']);
    assert.deepEqual([err.stdout, err.stderr, err.cmd], ['', 'err', 'prog a']);
    return true;
  });
});

test('promise forms are named like the running Node names them', () => {
  const { exec, execFile } = fakeExec();
  const named = Number(process.versions.node.split('.')[0]) >= 22;
  assert.equal(promisify(exec).name, named ? 'exec' : '');
  assert.equal(promisify(execFile).name, named ? 'execFile' : '');
  assert.equal(exec.length, 3);
  assert.equal(execFile.length, 4);
});

const invalid = [
  ['exec(1)', (x) => x.exec(1), 'ERR_INVALID_ARG_TYPE', 'The "command" argument must be of type string. Received type number (1)'],
  ['exec with NUL', (x) => x.exec('a\0b'), 'ERR_INVALID_ARG_VALUE', "The argument 'command' must be a string without null bytes. Received 'a\\x00b'"],
  ['options string', (x) => x.execFile('p', [], 'o'), 'ERR_INVALID_ARG_TYPE', 'The "options" argument must be of type object. Received type string (\'o\')'],
  ['options array', (x) => x.execFile('p', [], [], () => {}), 'ERR_INVALID_ARG_TYPE', 'The "options" argument must be of type object. Received an instance of Array'],
  ['callback string', (x) => x.execFile('p', [], {}, 'cb'), 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function. Received type string (\'cb\')'],
  ['argv0 number', (x) => x.execFile('p', { argv0: 1 }), 'ERR_INVALID_ARG_TYPE', 'The "options.argv0" property must be of type string. Received type number (1)'],
  ['timeout -1', (x) => x.exec('c', { timeout: -1 }), 'ERR_OUT_OF_RANGE', 'The value of "timeout" is out of range. It must be an unsigned integer. Received -1'],
  ['timeout 1.5', (x) => x.exec('c', { timeout: 1.5 }), 'ERR_OUT_OF_RANGE', 'The value of "timeout" is out of range. It must be an unsigned integer. Received 1.5'],
  ['maxBuffer string', (x) => x.exec('c', { maxBuffer: '1' }), 'ERR_OUT_OF_RANGE', 'The value of "options.maxBuffer" is out of range. It must be a positive number. Received \'1\''],
  ['maxBuffer NaN', (x) => x.exec('c', { maxBuffer: NaN }), 'ERR_OUT_OF_RANGE', 'The value of "options.maxBuffer" is out of range. It must be a positive number. Received NaN'],
  ['killSignal unknown', (x) => x.exec('c', { killSignal: 'SIGNOPE' }), 'ERR_UNKNOWN_SIGNAL', 'Unknown signal: SIGNOPE'],
  ['killSignal 0', (x) => x.exec('c', { killSignal: 0 }), 'ERR_UNKNOWN_SIGNAL', 'Unknown signal: 0'],
  ['killSignal object', (x) => x.exec('c', { killSignal: {} }), 'ERR_INVALID_ARG_TYPE', 'The "options.killSignal" property must be one of type string or number. Received an instance of Object'],
];

for (const [name, call, code, message] of invalid) {
  test(`validation before spawn: ${name}`, () => {
    const api = fakeExec();
    assert.throws(() => call(api), (err) => {
      assert.equal(err.code, code);
      assert.equal(err.message, message);
      assert.equal(String(err), `${err.name} [${code}]: ${message}`);
      return true;
    });
    assert.equal(api.children.length, 0);
  });
}

test('argument shuffling: execFile(file, options, cb) and execFile(file, cb)', async () => {
  const { execFile, children } = fakeExec();
  const first = callbackResult();
  execFile('p', { shell: true }, first.callback);
  const second = callbackResult();
  execFile('p', second.callback);
  assert.equal(children[0].options.shell, true);
  await children[0].finish(0);
  await children[1].finish(0);
  assert.equal((await first.done).err, null);
  assert.equal((await second.done).err, null);
});
