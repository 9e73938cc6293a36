// tinyexec 1: a thenable over spawn, line iteration over combined streams.
import { x, NonZeroExitError } from 'tinyexec';
import { run, errShape, pidKind, settle, scriptWithoutInterpreter } from './harness.js';

const tinyError = (err) => ({
  ...errShape(err, ['exitCode']),
  nonZero: err instanceof NonZeroExitError,
  output: err.output,
});

run({
  "x('echo', ['hi'])": async () => settle(x('echo', ['hi']), tinyError),

  'pid right after the call': async () => {
    const proc = x('true');
    const sync = pidKind(proc.pid);
    await proc;
    return { sync };
  },

  'iterate lines': async () => {
    const lines = [];
    for await (const line of x('printf', ['a\\nb\\nc\\n'])) lines.push(line);
    return lines;
  },

  'stdout and stderr': async () => settle(x('sh', ['-c', 'echo out; echo err >&2']), tinyError),

  'non-zero exit, throwOnError': async () => settle(x('sh', ['-c', 'echo out; exit 3'], { throwOnError: true }), tinyError),

  'non-zero exit, no throw': async () => settle(x('sh', ['-c', 'exit 3']), tinyError),

  'iterate lines, non-zero exit with throwOnError': async () => {
    const lines = [];
    const outcome = await settle((async () => {
      for await (const line of x('sh', ['-c', 'echo one; exit 4'], { throwOnError: true })) lines.push(line);
    })(), tinyError);
    return { lines, outcome };
  },

  'ENOENT': async () => settle(x('spawnpool-no-such-command', ['x'], { throwOnError: true }), tinyError),
  // .pipe() writes into the new child's stdin from its spawn() on: when its
  // exec fails, those writes must not raise an 'error' nobody listens for
  // (the process died of an uncaught EPIPE in about half the runs).
  'pipe into a script whose interpreter is missing': async () => {
    const script = scriptWithoutInterpreter();
    const outcomes = [];
    for (let i = 0; i < 8; i++) {
      const result = await settle(x('echo', ['hi']).pipe(script, [], { throwOnError: true }), tinyError);
      outcomes.push(JSON.stringify(result).replaceAll(script, '<script>'));
    }
    return [...new Set(outcomes)];
  },

  'timeout': async () => {
    const proc = x('sleep', ['5'], { timeout: 100 });
    const outcome = await settle(proc, tinyError);
    return { outcome, killed: proc.killed, exitCode: proc.exitCode, signalCode: proc.signalCode, aborted: proc.aborted };
  },

  'kill': async () => {
    const proc = x('sleep', ['5']);
    await new Promise((resolve) => proc.process.once('spawn', resolve));
    const sent = proc.kill();
    const outcome = await settle(proc, tinyError);
    return { sent, outcome, killed: proc.killed, signalCode: proc.signalCode };
  },

  'stdin string': async () => settle(x('cat', [], { stdin: 'typed' }), tinyError),

  'pipe': async () => settle(x('printf', ['b\\na\\n']).pipe('sort'), tinyError),

  'shell': async () => settle(x('echo $((6 * 7)) | tr 4 X', [], { nodeOptions: { shell: true } }), tinyError),
});
