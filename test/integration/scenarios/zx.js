// zx 8: shell commands through $ (it captured child_process.spawn at load).
import { $, ProcessOutput } from 'zx';
import { run, settle } from './harness.js';

$.verbose = false;

const out = (p) => ({
  stdout: p.stdout,
  stderr: p.stderr,
  exitCode: p.exitCode,
  signal: p.signal,
  ok: p.ok,
});
const zxError = (err) => (err instanceof ProcessOutput
  ? { processOutput: out(err), messageHead: err.message.split('\n')[0] }
  : { name: err?.name, message: err?.message });
const settled = (promise) => settle(promise.then(out), zxError);

run({
  'echo hi | tr a-z A-Z': async () => settled($`echo hi | tr a-z A-Z`),
  'nothrow': async () => settled($({ nothrow: true })`echo failing >&2; exit 3`),
  'quiet': async () => settled($`echo quiet`.quiet()),
  'non-zero exit throws': async () => settled($`echo out; exit 2`),
  'command not found': async () => settled($`spawnpool-no-such-command`),
  'pipe': async () => settled($`printf 'b\na\n'`.pipe($`sort`)),
  'lines': async () => (await $`printf 'a\nb\n'`).lines(),
  'input': async () => settled($({ input: 'from input' })`cat`),
  'kill': async () => {
    const p = $`sleep 5`.nothrow();
    setTimeout(() => p.kill(), 50);
    return out(await p);
  },
  'timeout': async () => settled($({ timeout: '100ms', nothrow: true })`sleep 5`),
  'yes | head -n 1': async () => settled($`yes | head -n 1`),
  'stderr and stdout': async () => settled($`echo out; echo err >&2`),
});
