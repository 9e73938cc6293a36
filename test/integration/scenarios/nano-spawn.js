// nano-spawn 2: awaits 'spawn' before it listens for 'close' (issue 8,
// pattern 2), and iterates stdout by lines.
import spawn from 'nano-spawn';
import { run, errShape, settle, busy } from './harness.js';

const shape = ({ stdout, stderr, output, command }) => ({ stdout, stderr, output, command });
const nanoError = (err) => ({ ...errShape(err, ['exitCode', 'signalName', 'output', 'command', 'isCanceled']) });
const settled = (promise) => settle(promise.then(shape), nanoError);

run({
  'await spawn(echo hi)': async () => settled(spawn('echo', ['hi'])),

  // nano-spawn listens for 'close' only after 'spawn' (issue 8, pattern 2).
  'await spawn(echo hi), loop busy in setImmediate': async () => {
    const subprocess = spawn('echo', ['hi']);
    setImmediate(() => busy(50));
    return settled(subprocess);
  },

  'iterating stdout lines': async () => {
    const lines = [];
    for await (const line of spawn('printf', ['a\\nb\\nc\\n']).stdout) lines.push(line);
    return lines;
  },

  'iterating stdout and stderr': async () => {
    const lines = [];
    for await (const line of spawn('sh', ['-c', 'echo out; echo err >&2'])) lines.push(line);
    return lines.sort();
  },

  // `output` interleaves the two streams as they were read: 200,000 bytes,
  // then "done". The writes block, so every byte of stdout is in its
  // socket before "done" is written on any kernel (an asynchronous
  // process.stdout.write of 200,000 bytes lands whole only where the
  // socket's send buffer takes it at once: 219,264 bytes here).
  'stdout and stderr of a busy child': async () =>
    settled(spawn(process.execPath, ['-e', 'const fs = require("fs"); fs.writeSync(1, "x".repeat(200000)); fs.writeSync(2, "done\\n")'])
      .then((r) => ({ ...r, stdout: r.stdout.length, output: r.output.length }))),

  'non-zero exit': async () => settled(spawn('sh', ['-c', 'echo out; echo err >&2; exit 2'])),

  'ENOENT': async () => settled(spawn('spawnpool-no-such-command', ['x'])),

  'stdin string': async () => settled(spawn('cat', { stdin: { string: 'from stdin' } })),

  'timeout': async () => settled(spawn('sleep', ['5'], { timeout: 100 })),

  'pipe': async () => settled(spawn('printf', ['b\\na\\n']).pipe('sort')),

  'shell': async () => settled(spawn('echo $((6 * 7))', { shell: true })),

  'nodeChildProcess: pid and kill': async () => {
    const subprocess = spawn('sleep', ['5']);
    const child = await subprocess.nodeChildProcess;
    const pid = Number.isInteger(child.pid) && child.pid > 0;
    child.kill();
    return { pid, outcome: await settled(subprocess) };
  },
});
