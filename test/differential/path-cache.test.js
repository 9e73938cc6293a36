// The spawn server remembers where it found each program on PATH and
// watches the PATH directories to forget it (native/path.c). Differential:
// each step changes the file system, then — in the same tick, before any
// event could be delivered to this process — runs the same program through
// node:child_process and spawnpool; both must run the same file (each
// prints its own path) or fail the same way. Every step runs twice, so the
// second spawn is a cache hit.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import {
  chmodSync, closeSync, linkSync, mkdirSync, mkdtempSync, openSync, realpathSync, renameSync, rmdirSync, rmSync,
  symlinkSync, unlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sp from 'spawnpool';
import { openFds } from '../helpers/leaks.js';

const T = realpathSync(mkdtempSync(join(tmpdir(), 'spawnpool-pathcache-')));
const A = join(T, 'a');
const B = join(T, 'b');
const M = join(T, 'missing');       // not there at first
const X = join(T, 'elsewhere');
for (const d of [A, B, X]) mkdirSync(d);
after(() => rmSync(T, { recursive: true, force: true }));
before(() => sp.ready());

/** A script at `path` that prints `label`. */
function prog(path, label, mode = 0o755) {
  writeFileSync(path, `#!/bin/sh\necho ${label}\n`);
  chmodSync(path, mode);
}

/** What running `prog` with this PATH gives: its output, or the error code. */
function run(spawn, path) {
  return new Promise((resolve) => {
    let out = '';
    let child;
    try {
      child = spawn('prog', [], { env: { PATH: path }, stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      resolve(`threw ${err.code}`);
      return;
    }
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.on('error', (err) => resolve(`error ${err.code}`));
    child.on('close', (code) => resolve(code === 0 ? out.trim() : `exit ${code}`));
  });
}

/** Both implementations, started in the same tick as the change before them. */
async function both(path) {
  const [node, pool] = await Promise.all([run(cp.spawn, path), run(sp.spawn, path)]);
  const [node2, pool2] = await Promise.all([run(cp.spawn, path), run(sp.spawn, path)]);
  return { node, pool, node2, pool2 };
}

async function step(name, change, path, expected) {
  change();
  const r = await both(path);
  assert.deepEqual(r, { node: expected, pool: expected, node2: expected, pool2: expected }, name);
}

test('a change to a PATH directory is seen by the very next spawn', async () => {
  const path = `${A}:${B}`;
  await step('only b has it', () => prog(join(B, 'prog'), 'b'), path, 'b');
  await step('a earlier on PATH gets it', () => prog(join(A, 'prog'), 'a'), path, 'a');
  await step('a loses its x bit', () => chmodSync(join(A, 'prog'), 0o644), path, 'b');
  await step('a gets it back', () => chmodSync(join(A, 'prog'), 0o755), path, 'a');
  await step('replaced by a rename over it', () => {
    prog(join(T, 'new'), 'a2');
    renameSync(join(T, 'new'), join(A, 'prog'));
  }, path, 'a2');
  await step('a loses it', () => unlinkSync(join(A, 'prog')), path, 'b');
  await step('b renames it away', () => renameSync(join(B, 'prog'), join(B, 'other')), path, 'error ENOENT');
  await step('b gets it back by rename', () => renameSync(join(B, 'other'), join(B, 'prog')), path, 'b');
});

test('changes no watch sees (through a hard link elsewhere, to a directory above a PATH entry) are found by the hit\'s stat', async () => {
  // The server watches the PATH directories, not every name of the
  // program's inode nor every directory above them: a hit is stat'ed.
  const D = join(T, 'hl'), E = join(T, 'hl2');
  for (const d of [D, E]) mkdirSync(d);
  prog(join(D, 'prog'), 'hl');
  prog(join(E, 'prog'), 'hl2');
  linkSync(join(D, 'prog'), join(X, 'alias'));
  await step('first found', () => {}, `${D}:${E}`, 'hl');
  await step('its x bit dropped through the other link', () => chmodSync(join(X, 'alias'), 0o644), `${D}:${E}`, 'hl2');
  const deep = join(T, 'r', 'x', 'y', 'bin');
  mkdirSync(deep, { recursive: true });
  prog(join(deep, 'prog'), 'deep');
  await step('first found, deep', () => {}, `${deep}:${E}`, 'deep');
  await step('a directory two levels above renamed away', () => renameSync(join(T, 'r', 'x'), join(T, 'r', 'x-old')), `${deep}:${E}`, 'hl2');
});

test('a missing PATH directory that appears later is searched again', async () => {
  const path = `${join(M, 'sub')}:${B}`;
  await step('missing dir', () => {}, path, 'b');
  await step('the dir appears with the program', () => {
    mkdirSync(join(M, 'sub'), { recursive: true });
    prog(join(M, 'sub', 'prog'), 'm');
  }, path, 'm');
  await step('the dir goes away', () => rmSync(M, { recursive: true }), path, 'b');
});

test('a symlinked program whose target vanishes falls through to the next entry', async () => {
  const path = `${A}:${B}`;
  prog(join(X, 'real'), 'x');
  await step('a/prog links to x', () => symlinkSync(join(X, 'real'), join(A, 'prog')), path, 'x');
  // The target is in a directory nobody watches: the hit is checked anyway.
  await step('the target vanishes', () => unlinkSync(join(X, 'real')), path, 'b');
  await step('the target comes back', () => prog(join(X, 'real'), 'x2'), path, 'x2');
  // A link to a file nobody may run is passed over; its target then gets
  // its x bit, in a directory nobody watches.
  await step('the target loses its x bit', () => chmodSync(join(X, 'real'), 0o644), path, 'b');
  await step('and gets it back', () => chmodSync(join(X, 'real'), 0o755), path, 'x2');
  unlinkSync(join(A, 'prog'));
});

test('a PATH directory replaced by a file, and made again, is seen', async () => {
  const path = `${A}:${B}`;
  prog(join(A, 'prog'), 'a');
  await step('a has it', () => {}, path, 'a');
  await step('a directory is replaced by a file', () => {
    rmSync(A, { recursive: true });
    writeFileSync(A, 'not a directory');
  }, path, 'b');
  await step('and back', () => {
    rmSync(A);
    mkdirSync(A);
    prog(join(A, 'prog'), 'a3');
  }, path, 'a3');
});

// Each directory below is a fresh one of its own: a directory an earlier
// step watched (the nearest ancestor of a missing one, say) would report
// the change whatever the code under test does.
const fresh = (name) => {
  const d = realpathSync(mkdtempSync(join(tmpdir(), `spawnpool-pathcache-${name}-`)));
  after(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

test('a PATH directory reached through a symlink that is re-pointed (ln -sfn) is seen', async () => {
  const versions = fresh('versions');
  const home = fresh('link');
  const link = join(home, 'current');   // like /opt/x/current/bin
  for (const v of ['v1', 'v2']) mkdirSync(join(versions, v, 'bin'), { recursive: true });
  prog(join(versions, 'v2', 'bin', 'prog'), 'v2');
  prog(join(B, 'prog'), 'b');
  symlinkSync(join(versions, 'v1'), link);
  const path = `${join(link, 'bin')}:${B}`;
  await step('v1 has none', () => {}, path, 'b');
  await step('the link is re-pointed at v2', () => {
    symlinkSync(join(versions, 'v2'), join(home, 'current.new'));
    renameSync(join(home, 'current.new'), link);
  }, path, 'v2');
});

test('a dangling symlink on PATH whose target appears later is seen', async () => {
  const targets = fresh('targets');
  const home = fresh('dangling');
  const dangling = join(home, 'dangling');
  symlinkSync(join(targets, 'later'), dangling);
  prog(join(B, 'prog'), 'b');
  const path = `${join(dangling, 'bin')}:${B}`;
  await step('the link leads nowhere', () => {}, path, 'b');
  await step('its target appears, with the program', () => {
    mkdirSync(join(targets, 'later', 'bin'), { recursive: true });
    prog(join(targets, 'later', 'bin', 'prog'), 'later');
  }, path, 'later');
});

const inotifyFds = (pid) => Object.values(openFds(pid)).filter((link) => link === 'anon_inode:inotify').length;

test('SPAWNPOOL_PATH_CACHE=0: the server holds no inotify instance, and lookups stay right', async () => {
  const withCache = sp.stats().servers.map((s) => s.pid).filter(Boolean);
  assert.ok(withCache.length > 0);
  for (const pid of withCache) assert.equal(inotifyFds(pid), 1, `server ${pid} of the default pool`);
  process.env.SPAWNPOOL_PATH_CACHE = '0';
  const pool = sp.createPool({ size: 1 });
  try {
    await pool.ready();
    delete process.env.SPAWNPOOL_PATH_CACHE;
    const [pid] = pool.stats().servers.map((s) => s.pid);
    assert.equal(inotifyFds(pid), 0);
    const path = `${A}:${B}`;
    prog(join(B, 'prog'), 'b');
    rmSync(join(A, 'prog'), { force: true });
    assert.equal(await run(pool.spawn, path), 'b');
    prog(join(A, 'prog'), 'a');
    assert.equal(await run(pool.spawn, path), 'a');
  } finally {
    delete process.env.SPAWNPOOL_PATH_CACHE;
    await pool.close();
  }
});

test('an empty PATH directory removed while held open, then made again with the program, is seen', async () => {
  const home = fresh('held');
  const dir = join(home, 'bin');
  mkdirSync(dir);
  prog(join(B, 'prog'), 'b');
  const path = `${dir}:${B}`;
  await step('the directory is empty', () => {}, path, 'b');
  // An open fd keeps the old directory alive: its IN_DELETE_SELF waits.
  const held = openSync(dir, 'r');
  try {
    await step('removed and made again, with the program', () => {
      rmdirSync(dir);
      mkdirSync(dir);
      prog(join(dir, 'prog'), 'again');
    }, path, 'again');
  } finally {
    closeSync(held);
  }
});

// Mounts need CAP_SYS_ADMIN: where the test runs without it, these say so
// and do not run.
const canMount = (() => {
  const d = fresh('probe');
  mkdirSync(join(d, 'm'));
  const r = cp.spawnSync('mount', ['-t', 'tmpfs', 'none', join(d, 'm')], { stdio: 'ignore' });
  if (r.status !== 0) return false;
  cp.spawnSync('umount', [join(d, 'm')], { stdio: 'ignore' });
  return true;
})();
const mountTest = canMount ? test : (name, fn) => test(name, { skip: 'mount(8) is not permitted here (no CAP_SYS_ADMIN)' }, fn);
const mustRun = (cmd, args) => {
  const r = cp.spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
};

mountTest('a program with every x bit on a noexec mount is passed over, as execvp does', async () => {
  const ne = join(fresh('noexec'), 'm');
  mkdirSync(ne);
  mustRun('mount', ['-t', 'tmpfs', '-o', 'noexec', 'none', ne]);
  try {
    prog(join(ne, 'prog'), 'noexec');
    prog(join(B, 'prog'), 'b');
    await step('0755 on noexec', () => {}, `${ne}:${B}`, 'b');
    await step('remounted exec', () => mustRun('mount', ['-o', 'remount,exec', ne]), `${ne}:${B}`, 'noexec');
    await step('remounted noexec', () => mustRun('mount', ['-o', 'remount,noexec', ne]), `${ne}:${B}`, 'b');
  } finally {
    mustRun('umount', [ne]);
  }
});

mountTest('a bind mount over a PATH directory, and its unmount, are seen', async () => {
  const home = fresh('bind');
  const dir = join(home, 'bin');
  const empty = join(home, 'empty');
  mkdirSync(dir);
  mkdirSync(empty);
  prog(join(dir, 'prog'), 'under');
  prog(join(B, 'prog'), 'b');
  const path = `${dir}:${B}`;
  await step('the program in the directory', () => {}, path, 'under');
  let mounted = false;
  try {
    await step('an empty directory bound over it', () => {
      mustRun('mount', ['--bind', empty, dir]);
      mounted = true;
    }, path, 'b');
    await step('unmounted', () => {
      mustRun('umount', [dir]);
      mounted = false;
    }, path, 'under');
  } finally {
    if (mounted) mustRun('umount', [dir]);
  }
});
