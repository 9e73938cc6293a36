// cross-spawn 7 (CommonJS, require('child_process') at call time).
import crossSpawn from 'cross-spawn';
import { once } from 'node:events';
import { run, errShape, pidKind } from './harness.js';

/** Runs one child to 'close': output, exit, error, pid when spawn() returned. */
function outcome(child) {
  const out = { stdout: '', stderr: '', sync: pidKind(child.pid), events: [] };
  child.stdout?.setEncoding('utf8').on('data', (c) => { out.stdout += c; });
  child.stderr?.setEncoding('utf8').on('data', (c) => { out.stderr += c; });
  child.on('error', (err) => {
    out.events.push('error');
    out.error = errShape(err);
  });
  child.on('exit', (code, signal) => out.events.push(`exit ${code} ${signal}`));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      out.events.push(`close ${code} ${signal}`);
      resolve(out);
    });
  });
}

run({
  "spawn + 'close'": async () => outcome(crossSpawn('echo', ['hi'])),
  'non-zero exit': async () => outcome(crossSpawn('sh', ['-c', 'echo out; echo err >&2; exit 5'])),
  'ENOENT': async () => outcome(crossSpawn('spawnpool-no-such-command', ['x'])),
  'shell': async () => outcome(crossSpawn('echo "$A-$B"', { shell: true, env: { ...process.env, A: 'a', B: 'b' } })),
  'stdin': async () => {
    const child = crossSpawn('tr', ['a-z', 'A-Z']);
    const result = outcome(child);
    child.stdin.end('shout');
    return result;
  },
  'kill': async () => {
    const child = crossSpawn('sleep', ['5']);
    const result = outcome(child);
    await once(child, 'spawn');
    child.kill('SIGINT');
    return result;
  },
  'sync': async () => {
    const r = crossSpawn.sync('echo', ['sync']);
    return { status: r.status, stdout: String(r.stdout) };
  },
});
