// Differential suite for lib/precheck.js: each scenario spawns for real with
// node:child_process (threw synchronously / emitted 'error' / spawned, and
// the code) and asks checkSpawn about the same arguments in the same tick;
// both must agree. Each scenario also names what Node does on Linux, so a
// scenario that stops testing what it says fails loudly.
// Runs as root (the uid/gid scenarios switch to 65534); run it with each
// Node: `<node> --test test/differential/precheck.test.js`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync, mkdtempSync, writeFileSync, mkdirSync, chmodSync, rmSync, realpathSync, symlinkSync, readFileSync, renameSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare } from '../fixtures/precheck-compare.js';

const COMPARE = fileURLToPath(new URL('../fixtures/precheck-compare.js', import.meta.url));
const isRoot = process.geteuid() === 0;
const NOBODY = 65534;

// ---------------------------------------------------------------- fixtures
// 0755 so that uid 65534 may walk it; PRIV is the one it may not.
const T = realpathSync(mkdtempSync(join(tmpdir(), 'spawnpool-precheck-')));
chmodSync(T, 0o755);
const BIN = join(T, 'bin');
const NOEXEC_BIN = join(T, 'bin-noexec');
const PRIV = join(T, 'private');
for (const dir of [BIN, NOEXEC_BIN, join(T, 'dir'), join(T, 'seq-a'), join(T, 'seq-b'), join(T, 'seq-c')]) mkdirSync(dir);
mkdirSync(PRIV, { mode: 0o700 });
const SCRIPT = '#!/bin/sh\nexit 0\n';
const script = (path, mode) => {
  writeFileSync(path, SCRIPT);
  chmodSync(path, mode);
};
script(join(BIN, 'prog'), 0o755);
script(join(BIN, 'only-group-x'), 0o710);
script(join(BIN, 'only-other-x'), 0o701);
script(join(NOEXEC_BIN, 'prog'), 0o644);
script(join(NOEXEC_BIN, 'no-x'), 0o644);
script(join(PRIV, 'prog'), 0o755);
// An ELF program: a script's interpreter line adds strings of its own to the
// exec (binfmt_script), which checkSpawn does not read.
copyFileSync('/bin/true', join(BIN, 'elf'));
chmodSync(join(BIN, 'elf'), 0o755);
mkdirSync(join(BIN, 'a-dir'));
symlinkSync('loop', join(T, 'loop'));
symlinkSync(join(BIN, 'prog'), join(T, 'link-to-prog'));
after(() => rmSync(T, { recursive: true, force: true }));

const withPath = (PATH, more = {}) => ({ env: PATH === undefined ? { HOME: '/' } : { PATH }, ...more });

async function agree(file, args, options, expected) {
  const { node, precheck } = await compare(file, args, options);
  assert.deepEqual(precheck, node, `${file}: checkSpawn said ${JSON.stringify(precheck)}, Node ${JSON.stringify(node)}`);
  assert.equal(node.kind === 'spawn' ? 'spawn' : node.code, expected, `Node itself: ${JSON.stringify(node)}`);
  if (node.kind === 'throw') assert.equal(node.message, `spawn ${node.code}`);
}

// The kernel's budget for argv + envp (see lib/precheck.js), from the same source.
function argBudget() {
  const m = /^Max stack size\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const soft = m[1] === 'unlimited' ? Infinity : Number(m[1]);
  return Math.max(Math.min(6 * 1024 * 1024, Math.floor(soft / 4)), 128 * 1024);
}

// ------------------------------------------------------------ program lookup
test('found through process.env.PATH', () => agree('sh', ['-c', 'exit 0'], {}, 'spawn'));
test('found through options.env.PATH', () => agree('prog', [], withPath(BIN), 'spawn'));
test('found only in options.env.PATH, not process.env.PATH', async () => {
  assert.ok(!process.env.PATH.split(':').includes(BIN));
  await agree('prog', [], withPath(`/nonexistent:${BIN}`), 'spawn');
});
test('not found in PATH', () => agree('spawnpool-no-such-program', [], withPath(`${BIN}:/usr/bin`), 'ENOENT'));
test('env without PATH: glibc searches /bin:/usr/bin', () => agree('ls', ['/'], withPath(undefined), 'spawn'));
test('env without PATH: the cwd is not searched', () => agree('prog', [], withPath(undefined, { cwd: BIN }), 'ENOENT'));
test('env without PATH: /usr/sbin is not searched', () => agree('sysctl', [], withPath(undefined), 'ENOENT'));
test('relative PATH entry, relative to cwd', () => agree('prog', [], withPath('bin', { cwd: T }), 'spawn'));
test('relative PATH entry, other cwd', () => agree('prog', [], withPath('bin', { cwd: NOEXEC_BIN }), 'ENOENT'));
test('empty PATH entry (trailing colon) is the cwd', () => agree('prog', [], withPath('/nonexistent:', { cwd: BIN }), 'spawn'));
test('empty PATH entry (leading colon) is the cwd', () => agree('prog', [], withPath(':/nonexistent', { cwd: BIN }), 'spawn'));
test('PATH="" is the cwd', () => agree('prog', [], withPath('', { cwd: BIN }), 'spawn'));
test('not executable in PATH: EACCES', () => agree('no-x', [], withPath(NOEXEC_BIN), 'EACCES'));
test('not executable first, executable later in PATH: spawns', () => agree('prog', [], withPath(`${NOEXEC_BIN}:${BIN}`), 'spawn'));
test('not executable, then missing: EACCES wins', () => agree('no-x', [], withPath(`${NOEXEC_BIN}:${BIN}`), 'EACCES'));
test('a directory in PATH: EACCES', () => agree('a-dir', [], withPath(BIN), 'EACCES'));
test('a file as the only PATH entry: ENOTDIR, thrown', () => agree('prog', [], withPath('/etc/passwd'), 'ENOTDIR'));
test('a file as the last PATH entry: the last error (ENOTDIR)', () => agree('prog', [], withPath('/nonexistent:/etc/passwd'), 'ENOTDIR'));
test('a file, then a missing entry: the last error (ENOENT)', () => agree('prog', [], withPath('/etc/passwd:/nonexistent'), 'ENOENT'));
test('a symlink loop in PATH stops the search: ELOOP', () => agree('prog', [], withPath(`${join(T, 'loop')}:${BIN}`), 'ELOOP'));
test('a name over NAME_MAX bytes: ENAMETOOLONG', () => agree('é'.repeat(128), [], withPath(BIN), 'ENAMETOOLONG'));
test('a name of NAME_MAX bytes: searched', () => agree('a'.repeat(255), [], withPath(BIN), 'ENOENT'));

test('absolute path: missing', () => agree(join(T, 'missing'), [], {}, 'ENOENT'));
test('absolute path: a directory', () => agree(join(T, 'dir'), [], {}, 'EACCES'));
test('absolute path: no x bit at all', () => agree(join(NOEXEC_BIN, 'no-x'), [], {}, 'EACCES'));
test('absolute path: only group x', () => agree(join(BIN, 'only-group-x'), [], {}, isRoot ? 'spawn' : 'EACCES'));
test('absolute path: only other x', () => agree(join(BIN, 'only-other-x'), [], {}, isRoot ? 'spawn' : 'EACCES'));
test('absolute path: a non-directory component', () => agree('/etc/passwd/x', [], {}, 'ENOTDIR'));
test('absolute path: a symlink loop', () => agree(join(T, 'loop'), [], {}, 'ELOOP'));
test('absolute path: a symlink to a program', () => agree(join(T, 'link-to-prog'), [], {}, 'spawn'));
test('absolute path: a component over NAME_MAX', () => agree(join(T, 'x'.repeat(256)), [], {}, 'ENAMETOOLONG'));
test('relative path with a slash, against cwd', () => agree('./prog', [], { cwd: BIN }, 'spawn'));
test('relative path with a slash, missing in cwd', () => agree('bin/prog', [], { cwd: BIN }, 'ENOENT'));

// ---------------------------------------------------------------------- cwd
test('cwd ok', () => agree(join(BIN, 'prog'), [], { cwd: T }, 'spawn'));
test('cwd missing', () => agree(join(BIN, 'prog'), [], { cwd: join(T, 'missing') }, 'ENOENT'));
test('cwd is a file', () => agree(join(BIN, 'prog'), [], { cwd: join(BIN, 'prog') }, 'ENOTDIR'));
test('cwd under a file', () => agree(join(BIN, 'prog'), [], { cwd: '/etc/passwd/x' }, 'ENOTDIR'));
test('cwd a symlink loop', () => agree(join(BIN, 'prog'), [], { cwd: join(T, 'loop') }, 'ELOOP'));
test('cwd too long', () => agree(join(BIN, 'prog'), [], { cwd: `/${'a'.repeat(5000)}` }, 'ENAMETOOLONG'));
test('cwd missing wins over a missing program', () => agree(join(T, 'missing'), [], { cwd: '/etc/passwd' }, 'ENOTDIR'));

// -------------------------------------------------------------------- E2BIG
test('one 200 KB argument: E2BIG', () => agree(join(BIN, 'prog'), ['x'.repeat(200_000)], {}, 'E2BIG'));
test('one argument of MAX_ARG_STRLEN - 1 bytes: spawns', () => agree(join(BIN, 'prog'), ['x'.repeat(131071)], {}, 'spawn'));
test('one argument of MAX_ARG_STRLEN bytes plus NUL: E2BIG', () => agree(join(BIN, 'prog'), ['x'.repeat(131072)], {}, 'E2BIG'));
test('a 200 KB argument counted in UTF-8 bytes', () => agree(join(BIN, 'prog'), ['é'.repeat(65536)], {}, 'E2BIG'));
test('a 200 KB argument to a missing program: ENOENT (the file is opened first)',
  () => agree(join(T, 'missing'), ['x'.repeat(200_000)], {}, 'ENOENT'));
test('a 200 KB argument to a file without x: EACCES', () => agree(join(NOEXEC_BIN, 'no-x'), ['x'.repeat(200_000)], {}, 'EACCES'));
test('a 200 KB argument through PATH, not found: ENOENT', () => agree('spawnpool-nope', ['x'.repeat(200_000)], withPath(BIN), 'ENOENT'));
test('a 200 KB argument through PATH, found: E2BIG', () => agree('prog', ['x'.repeat(200_000)], withPath(BIN), 'E2BIG'));
test('an environment of ~3 MB', () => {
  const env = { PATH: BIN };
  for (let i = 0; i < 30; i++) env[`BIG_${i}`] = 'v'.repeat(100_000);
  return agree('prog', [], { env }, argBudget() < 3_000_000 ? 'E2BIG' : 'spawn');
});

// Arguments that fill the budget exactly (+ `extra` bytes): every string with
// its NUL and a pointer, plus the filename execve got (a PATH candidate's
// full path, not argv[0]).
function argsFilling({ argv0, filename, env }, extra) {
  const envBytes = Object.entries(env).reduce((n, [k, v]) => n + Buffer.byteLength(`${k}=${v}`) + 1 + 8, 0);
  let left = argBudget() - envBytes - (Buffer.byteLength(filename) + 1) - (Buffer.byteLength(argv0) + 1 + 8) + extra;
  const args = [];
  while (left - 8 > 100_001) {
    args.push('a'.repeat(100_000));
    left -= 100_001 + 8;
  }
  args.push('z'.repeat(left - 8 - 1));
  return args;
}
const direct = { argv0: join(BIN, 'elf'), filename: join(BIN, 'elf'), env: { PATH: BIN } };
const searched = { argv0: 'elf', filename: join(BIN, 'elf'), env: { PATH: BIN } };
test('argv just under the limit: spawns', () => agree(direct.argv0, argsFilling(direct, 0), { env: direct.env }, 'spawn'));
test('argv one byte over the limit: E2BIG', () => agree(direct.argv0, argsFilling(direct, 1), { env: direct.env }, 'E2BIG'));
test('argv at the limit through PATH: spawns', () => agree('elf', argsFilling(searched, 0), { env: searched.env }, 'spawn'));
test('argv over the limit through PATH, by the candidate path counted as the filename: E2BIG', () =>
  agree('elf', argsFilling(searched, 1), { env: searched.env }, 'E2BIG'));

// ------------------------------------------------------------------ uid/gid
test('uid/gid switch as root', { skip: !isRoot && 'needs root' }, async () => {
  await agree('/bin/true', [], { uid: NOBODY, gid: NOBODY }, 'spawn');
  await agree('/bin/true', [], { uid: 0, gid: 0 }, 'spawn');
  await agree('/bin/true', [], { uid: NOBODY }, 'spawn');
  await agree('/bin/true', [], { gid: NOBODY }, 'spawn');
});
test('uid -1 and gid -1: EINVAL, thrown', async () => {
  await agree('/bin/true', [], { uid: -1 }, 'EINVAL');
  await agree('/bin/true', [], { gid: -1 }, 'EINVAL');
});
test('the child\'s uid and gid decide the x bit', { skip: !isRoot && 'needs root' }, async () => {
  await agree(join(BIN, 'only-group-x'), [], { uid: NOBODY, gid: NOBODY }, 'EACCES');
  await agree(join(BIN, 'only-other-x'), [], { uid: NOBODY, gid: NOBODY }, 'spawn');
  // setgroups(0, NULL), gid stays 0: the group x bit still applies.
  await agree(join(BIN, 'only-group-x'), [], { uid: NOBODY }, 'spawn');
  await agree(join(BIN, 'only-group-x'), [], { uid: NOBODY, gid: 0 }, 'spawn');
});
test('the child\'s uid needs search permission on the way to the program', { skip: !isRoot && 'needs root' }, async () => {
  await agree(join(PRIV, 'prog'), [], { uid: NOBODY, gid: NOBODY }, 'EACCES');
  await agree('prog', [], withPath(`${PRIV}:${BIN}`, { uid: NOBODY, gid: NOBODY }), 'spawn');
  await agree('prog', [], withPath(PRIV, { uid: NOBODY, gid: NOBODY }), 'EACCES');
  await agree(join(PRIV, 'prog'), [], {}, 'spawn');
});
test('chdir runs before setuid: a cwd only root may enter is fine', { skip: !isRoot && 'needs root' },
  () => agree('/bin/true', [], { cwd: PRIV, uid: NOBODY, gid: NOBODY }, 'spawn'));

test('EPERM: setuid/setgid from an unprivileged process', { skip: !isRoot && 'needs root' }, () => {
  const probe = spawnSync(process.execPath, ['-e', '0'], { uid: NOBODY, gid: NOBODY, cwd: '/' });
  assert.equal(probe.status, 0, `${process.execPath} must be executable by uid ${NOBODY}: ${probe.error ?? probe.stderr}`);
  const r = spawnSync(process.execPath, [COMPARE, 'unprivileged', join(BIN, 'only-group-x')], {
    uid: NOBODY, gid: NOBODY, cwd: '/', encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const results = JSON.parse(r.stdout);
  assert.ok(Object.keys(results).length >= 8);
  for (const [name, { expected, node, precheck }] of Object.entries(results)) {
    assert.deepEqual(precheck, node, `${name}: checkSpawn said ${JSON.stringify(precheck)}, Node ${JSON.stringify(node)}`);
    assert.equal(node.kind === 'spawn' ? 'spawn' : node.code, expected, `${name}, Node itself: ${JSON.stringify(node)}`);
  }
});

// ------------------------------------------- the cache, changes in the same tick
// Every step changes the file system and then compares, without yielding in
// between: a cached answer must never outlive what it describes.
test('same tick: create, chmod, spawn; then delete, spawn', async () => {
  const dir = join(T, 'seq-a');
  const file = join(dir, 'tool');
  const env = withPath(`${join(T, 'seq-c')}:${dir}`);
  await agree('tool', [], env, 'ENOENT');
  writeFileSync(file, SCRIPT);
  await agree('tool', [], env, 'EACCES');
  chmodSync(file, 0o755);
  await agree('tool', [], env, 'spawn');
  await agree('tool', [], env, 'spawn'); // a cached hit
  rmSync(file);
  await agree('tool', [], env, 'ENOENT');
  writeFileSync(file, SCRIPT, { mode: 0o755 });
  chmodSync(file, 0o755);
  await agree('tool', [], env, 'spawn');
  chmodSync(file, 0o644);
  await agree('tool', [], env, 'EACCES');
  chmodSync(file, 0o755);
  await agree('tool', [], env, 'spawn');
  rmSync(file);
  mkdirSync(file);
  await agree('tool', [], env, 'EACCES');
  rmSync(file, { recursive: true });
  symlinkSync(join(NOEXEC_BIN, 'no-x'), file);
  await agree('tool', [], env, 'EACCES');
  rmSync(file);
  symlinkSync(join(BIN, 'prog'), file);
  await agree('tool', [], env, 'spawn');
  rmSync(file);
});

test('same tick: the cached entry goes, a later entry still has the program', async () => {
  const [a, b] = [join(T, 'seq-b'), join(T, 'seq-c')];
  const env = withPath(`${a}:${b}`);
  script(join(a, 'both'), 0o755);
  script(join(b, 'both'), 0o755);
  await agree('both', [], env, 'spawn'); // remembers a/both
  rmSync(join(a, 'both'));
  await agree('both', [], env, 'spawn'); // falls through to b/both
  rmSync(join(b, 'both'));
  await agree('both', [], env, 'ENOENT');
  script(join(b, 'both'), 0o755);
  await agree('both', [], env, 'spawn'); // remembers b/both
  script(join(a, 'both'), 0o644); // an earlier, unexecutable one: execvp skips it
  await agree('both', [], env, 'spawn');
  chmodSync(join(a, 'both'), 0o755); // an earlier, executable one shadows it
  await agree('both', [], env, 'spawn');
  renameSync(join(b, 'both'), join(b, 'gone'));
  await agree('both', [], env, 'spawn');
  rmSync(join(a, 'both'));
  await agree('both', [], env, 'ENOENT');
});

test('same tick: a relative PATH entry is remembered per cwd', async () => {
  const env = (cwd) => withPath('rel', { cwd });
  const [one, two] = [join(T, 'seq-b'), join(T, 'seq-c')];
  mkdirSync(join(one, 'rel'));
  mkdirSync(join(two, 'rel'));
  script(join(one, 'rel', 'tool'), 0o755);
  await agree('tool', [], env(one), 'spawn');
  await agree('tool', [], env(two), 'ENOENT');
  script(join(two, 'rel', 'tool'), 0o644);
  await agree('tool', [], env(two), 'EACCES');
  await agree('tool', [], env(one), 'spawn');
  rmSync(join(one, 'rel', 'tool'));
  await agree('tool', [], env(one), 'ENOENT');
});

test('same tick: an empty PATH entry is remembered per cwd', async () => {
  const env = (cwd) => withPath(`/nonexistent::${NOEXEC_BIN}`, { cwd });
  const [one, two] = [join(T, 'seq-b'), join(T, 'seq-c')];
  script(join(one, 'here'), 0o755);
  await agree('here', [], env(one), 'spawn');
  await agree('here', [], env(two), 'ENOENT');
  rmSync(join(one, 'here'));
  await agree('here', [], env(one), 'ENOENT');
});

test('same tick: an absolute program created, changed, removed', async () => {
  const file = join(T, 'seq-c', 'direct');
  await agree(file, [], {}, 'ENOENT');
  script(file, 0o755);
  await agree(file, [], {}, 'spawn');
  chmodSync(file, 0o600);
  await agree(file, [], {}, 'EACCES');
  rmSync(file);
  await agree(file, [], {}, 'ENOENT');
});

test('same tick: the cwd removed under a cached hit', async () => {
  const cwd = join(T, 'seq-c', 'gone-cwd');
  mkdirSync(cwd);
  await agree('prog', [], withPath(BIN, { cwd }), 'spawn');
  rmSync(cwd, { recursive: true });
  await agree('prog', [], withPath(BIN, { cwd }), 'ENOENT');
  writeFileSync(cwd, '');
  await agree('prog', [], withPath(BIN, { cwd }), 'ENOTDIR');
  rmSync(cwd);
});
