// execa 9 over node:child_process: under spawnpool/register it replaces the
// served child's stdout/stdio[i] with its own streams (issue 8, pattern 1).
import { execa, $ } from 'execa';
import { Transform } from 'node:stream';
import { run, errShape, pidKind, settle, scriptWithoutInterpreter } from './harness.js';

const NODE = process.execPath;

// What a user reads off an execa result or error; durationMs left out.
const FIELDS = ['command', 'escapedCommand', 'exitCode', 'signal', 'signalDescription', 'stdout', 'stderr', 'all',
  'stdio', 'failed', 'timedOut', 'isCanceled', 'isGracefullyCanceled', 'isTerminated', 'isMaxBuffer', 'isForcefullyTerminated',
  'shortMessage', 'originalMessage', 'code'];

function shape(result) {
  const out = {};
  for (const k of FIELDS) if (k in result) out[k] = result[k];
  out.pipedFrom = (result.pipedFrom ?? []).map(shape);
  return out;
}
const execaError = (err) => ({ ...errShape(err), ...shape(err) });
const settled = (promise) => settle(promise.then(shape), execaError);

run({
  'node -e, buffered stdout and stderr': async () =>
    settled(execa(NODE, ['-e', 'console.log("out"); console.error("err")'])),

  'pid right after the call': async () => {
    const subprocess = execa('true');
    const sync = pidKind(subprocess.pid);
    await subprocess;
    return { sync };
  },

  '$ template': async () => settled($`echo ${'hi there'}`),
  '$ with lines': async () => settled($({ lines: true })`printf a\nb\nc\n`),

  '.pipe to another command': async () => settled(execa('printf', ['b\\na\\nc\\n']).pipe('sort', ['-r'])),

  'input option': async () => settled(execa('cat', { input: 'from input' })),

  'timeout': async () => settled(execa('sleep', ['5'], { timeout: 100 })),

  'lines option': async () => settled(execa('printf', ['x\\ny\\n'], { lines: true })),

  'subprocess.kill()': async () => {
    const subprocess = execa('sleep', ['5']);
    await new Promise((resolve) => subprocess.once('spawn', resolve));
    const sent = subprocess.kill();
    return { sent, outcome: await settled(subprocess) };
  },

  'non-zero exit': async () => settled(execa('sh', ['-c', 'echo out; echo err >&2; exit 3'])),

  'ENOENT': async () => settled(execa('spawnpool-no-such-command', ['x'])),
  // execa waits for an 'exit' after a 'spawn': it hung here when the exec
  // failed after 'spawn' with no 'exit' to follow. That 'exit' gives execa
  // an exitCode (-2) where Node's failed spawn gives none: left out
  // (docs/behaviour-differences.md).
  'a script whose interpreter is missing': async () => {
    const script = scriptWithoutInterpreter();
    const results = [];
    for (const options of [{}, { reject: false }, { timeout: 2000 }]) {
      const result = await settled(execa(script, options));
      const { exitCode, ...rest } = result.threw ?? result.value;
      results.push({ [result.threw ? 'threw' : 'value']: JSON.parse(JSON.stringify(rest).replaceAll(script, '<script>')),
        exitCode: exitCode === undefined || exitCode === -2 ? 'none or -2' : exitCode });
    }
    return results;
  },

  'all: interleaved output': async () => settled(execa('sh', ['-c', 'echo 1; sleep 0.05; echo 2 >&2'], { all: true })),

  // execa swaps subprocess.stdout for the generator's output stream.
  'generator transform on stdout': async () => settled(execa('printf', ['a\\nb\\n'], {
    * stdout(line) { yield line.toUpperCase(); },
  })),

  'stdout piped through a Node transform': async () => {
    const subprocess = execa('printf', ['abc\\n'], { buffer: false });
    let text = '';
    subprocess.stdout.pipe(new Transform({
      transform(chunk, enc, cb) { cb(null, chunk.toString().toUpperCase()); },
    })).on('data', (chunk) => { text += chunk; });
    const outcome = await settled(subprocess);
    await new Promise(setImmediate);
    return { text, outcome };
  },

  'iterate lines': async () => {
    const lines = [];
    for await (const line of execa('printf', ['l1\\nl2\\nl3\\n'])) lines.push(line);
    return lines;
  },

  'stdin from a string, stdout and stderr both read': async () =>
    settled(execa(NODE, ['-e', 'process.stdin.pipe(process.stdout); process.stderr.write("e")'], { input: 'piped' })),

  'verbose off prints nothing': async () => settled(execa('echo', ['quiet'], { verbose: 'none' })),

  // Issue 8 (4): yes into head through execa's pipe.
  // How much of yes's output execa buffered before the end is a matter of
  // timing: only its start is compared. So is the errno of yes's last write
  // once execa has destroyed its stdout: ECONNRESET if unread bytes were
  // still queued, EPIPE if not (Node alone: 14 EPIPE in 200 runs). Or yes
  // is killed by SIGPIPE, when its write comes after the close (Node 24
  // alone, sometimes): one outcome, a broken pipe, told three ways.
  'yes piped into head -n 1': async () => settle(execa('yes').pipe('head', ['-n', '1']).then(shape), (err) => {
    const {
      message, stdout, stderr, all, stdio, originalMessage, shortMessage, exitCode, signal, signalDescription, isTerminated,
      ...rest
    } = execaError(err);
    const brokenPipe = signal === 'SIGPIPE'
      || (exitCode === 1 && /: (Connection reset by peer|Broken pipe)$/.test(String(stderr)));
    return { ...rest, stdout: String(stdout).slice(0, 4), brokenPipe };
  }),
  'yes | head -n 1 in a shell': async () => settled(execa('yes | head -n 1', { shell: true })),
});
