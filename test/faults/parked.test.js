// Parked children under faults an application meets: a Ctrl-C or a group
// kill it handles, a burst and exit with large requests, a parked child
// killed from outside, a large stash. Each scenario runs in a node process
// of its own (some signal their whole process group) and reports JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn as nodeSpawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const LIB = fileURLToPath(new URL('../../dist/index.js', import.meta.url));

/** Runs `body` (an ES module's text, `sp` = spawnpool) in its own process group; its last stdout line, parsed. */
async function run(body, { timeout = 30000 } = {}) {
  const code = `import * as sp from ${JSON.stringify(LIB)};\n${body}`;
  const child = nodeSpawn(process.execPath, ['--input-type=module', '-e', code], {
    detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const timer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), timeout);
  const [status, signal] = await once(child, 'close');
  clearTimeout(timer);
  assert.equal(status, 0, `status ${status ?? signal}; stderr: ${err}`);
  return JSON.parse(out.trim().split('\n').at(-1));
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  test(`a ${sig} to the application's process group, handled, does not reach the programs it spawns afterwards`, async () => {
    // Ctrl-C, or systemd's KillMode=control-group: the application catches
    // it and runs cleanup programs; under Node they are new processes that
    // never saw the signal.
    const r = await run(`
      sp.configure({ size: 1, parked: 4 });
      await sp.ready();
      await new Promise((r) => setTimeout(r, 50));
      const hold = setInterval(() => {}, 1000);     // a signal listener holds nothing
      const got = new Promise((resolve) => process.once(${JSON.stringify(sig)}, resolve));
      process.kill(-process.pid, ${JSON.stringify(sig)});
      await got;
      clearInterval(hold);
      const outcomes = [];
      for (let i = 0; i < 10; i++) {
        const c = sp.spawn('sh', ['-c', 'echo ran'], { detached: i % 2 === 1 });
        let out = '';
        c.stdout.on('data', (d) => { out += d; });
        const [code, signal] = await new Promise((r) => c.on('close', (...a) => r(a)));
        outcomes.push(\`\${code} \${signal} \${out.trim()}\`);
      }
      await sp.close();
      console.log(JSON.stringify(outcomes));`);
    assert.deepEqual(r, Array(10).fill('0 null ran'));
  });
}

test('a program not detached runs in the application\'s process group, as under Node (a parked child waits in its own)', async () => {
  const r = await run(`
    import { readFileSync } from 'node:fs';
    const pgrp = (pid) => Number(readFileSync(\`/proc/\${pid}/stat\`, 'utf8').split(') ')[1].split(' ')[2]);
    const c = sp.spawn('sh', ['-c', 'cut -d" " -f5 /proc/self/stat']);
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    await new Promise((r) => c.on('close', r));
    await sp.close();
    console.log(JSON.stringify({ child: Number(out), mine: pgrp(process.pid) }));`);
  assert.equal(r.child, r.mine);
});

test('a signal the application sends to the pid right after spawn() is kept: the child ends by it', async () => {
  const r = await run(`
    const outcomes = new Set();
    for (let i = 0; i < 20; i++) {
      const c = sp.spawn('sleep', ['5']);
      process.kill(c.pid, 'SIGTERM');
      const [code, signal] = await new Promise((r) => c.on('exit', (...a) => r(a)));
      outcomes.add(\`\${code} \${signal}\`);
    }
    await sp.close();
    console.log(JSON.stringify([...outcomes]));`);
  assert.deepEqual(r, ['null SIGTERM']);
});

test('300 spawns with a 100 KB environment each, then process.exit() in the same tick: all 300 programs run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-parked-'));
  try {
    await run(`
      sp.configure({ size: 1, parked: 8 });
      await sp.ready();
      const big = 'x'.repeat(100000);
      for (let i = 0; i < 300; i++) sp.spawn('/bin/sh', ['-c', ': > ${dir}/' + i], { env: { BIG: big }, stdio: 'ignore' });
      console.log('{}');
      process.exit(0);`);
    const deadline = Date.now() + 10000;
    while (readdirSync(dir).length < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(readdirSync(dir).length, 300);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a parked child killed from outside: its pid, handed out, names its zombie (no other process) until the spawn ends as killed; the next spawns run', async () => {
  const r = await run(`
    import { execFileSync } from 'node:child_process';
    import { existsSync } from 'node:fs';
    sp.configure({ size: 1, parked: 1 });
    await sp.ready();
    // Both parked children (one ordinary, one session leader), however
    // long a loaded machine takes to make them.
    const server = sp.stats().servers[0].pid;
    let parked = [];
    for (const until = Date.now() + 5000; parked.length < 2 && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 20));
      try {
        parked = execFileSync('pgrep', ['-P', String(server)]).toString().trim().split('\\n').map(Number);
      } catch { /* none yet: pgrep exits 1 */ }
    }
    if (parked.length !== 2) throw new Error(\`parked children of \${server} after 5 s: \${parked}\`);
    for (const pid of parked) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    const outcomes = [];
    for (let i = 0; i < 4; i++) {
      const c = sp.spawn('echo', ['hi'], { detached: i % 2 === 1 });
      const existed = existsSync(\`/proc/\${c.pid}\`);
      let out = '';
      c.stdout.on('data', (d) => { out += d; });
      const [code, signal] = await new Promise((r) => c.on('close', (...a) => r(a)));
      outcomes.push({ killed: parked.includes(c.pid), existed, goneAtClose: !existsSync(\`/proc/\${c.pid}\`), end: \`\${code} \${signal} \${out.trim()}\` });
    }
    await sp.close();
    console.log(JSON.stringify(outcomes));`);
  for (const o of r) {
    // A killed one's zombie is reaped when the spawn's request reaches the
    // server, as any child's at its exit: it may be gone by then already.
    if (!o.killed) assert.equal(o.existed, true, JSON.stringify(r));
    assert.equal(o.goneAtClose, true, JSON.stringify(r));
    assert.equal(o.end, o.killed ? 'null SIGKILL ' : '0 null hi', JSON.stringify(r));
  }
  assert.ok(r.some((o) => o.killed), JSON.stringify(r));
});

test('the largest stash (parked: 256): every pid announced, no spawn waits', async () => {
  const r = await run(`
    sp.configure({ size: 1, parked: 256 });
    await sp.ready();
    await new Promise((r) => setTimeout(r, 300));
    let slowest = 0;
    for (let i = 0; i < 400; i++) {
      const t = performance.now();
      const c = sp.spawn('true');
      slowest = Math.max(slowest, performance.now() - t);
      await new Promise((r) => c.on('close', r));
    }
    const s = sp.stats();
    await sp.close();
    console.log(JSON.stringify({ timeouts: s.parkedTimeouts, fallbacks: s.fallbacks, slowUnder1s: slowest < 1000 }));`);
  assert.deepEqual(r, { timeouts: 0, fallbacks: 0, slowUnder1s: true });
});
