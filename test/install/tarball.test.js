// The packed tarball installs everywhere and works wherever it installed:
// `npm pack` (its prepack builds the prebuilt static server), then
// `npm install <tgz>` into scratch projects, offline, in the situations a
// user meets — no compiler, scripts disabled, not Linux — and a script there
// imports (or requires) 'spawnpool' and runs `echo hi`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));
const target = `linux-${process.arch}`;
const TIMEOUT = 30_000; // per command; the whole file takes a few seconds

// npm test runs the suites a second time against the sanitized server
// ($SPAWNPOOL_SERVER): this file tests the package's own server, once is enough.
const skip = process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch)
  ? `prebuilt servers are made for linux-x64 and linux-arm64, not ${process.platform}-${process.arch}`
  : process.env.SPAWNPOOL_SERVER ? '$SPAWNPOOL_SERVER is set (this file tests the installed server)' : false;

let dir;
let tarball;
let env;

/** The first `name` on $PATH. */
function which(name) {
  for (const entry of (process.env.PATH ?? '').split(delimiter)) {
    if (entry && existsSync(join(entry, name))) return join(entry, name);
  }
  return null;
}

/** Runs a command; resolves to { code, stdout, stderr } whatever its status. */
async function run(file, args, options) {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { timeout: TIMEOUT, ...options });
    return { code: 0, stdout, stderr };
  } catch (error) {
    if (typeof error.code !== 'number') throw error;
    return { code: error.code, stdout: error.stdout, stderr: error.stderr };
  }
}

/** A project with only a package.json, where the tarball is installed. */
function scratchProject(name) {
  const project = join(dir, name);
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `scratch-${name}`, private: true }));
  for (const fixture of readdirSync(fixtures)) copyFileSync(join(fixtures, fixture), join(project, fixture));
  return project;
}

/**
 * `npm install --offline <tgz>` in a new scratch project; asserts exit 0.
 * Returns the project and npm's output.
 */
async function install(name, { args = [], extraEnv = {} } = {}) {
  const project = scratchProject(name);
  const r = await run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', ...args, tarball],
    { cwd: project, env: { ...env, ...extraEnv } });
  assert.equal(r.code, 0, `npm install (${name}) failed:\n${r.stdout}${r.stderr}`);
  return { project, output: r.stdout + r.stderr };
}

/** Runs a fixture script in `project`; returns its JSON line and stderr. */
async function echo(project, script = 'echo.mjs', node = process.execPath, extraEnv = {}) {
  const r = await run(node, [script], { cwd: project, env: { ...env, ...extraEnv } });
  assert.equal(r.code, 0, `${script} failed:\n${r.stdout}${r.stderr}`);
  return { ...JSON.parse(r.stdout), stderr: r.stderr };
}

let npm;

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'spawnpool-install-'));
  npm = which('npm') ?? process.env.npm_execpath;
  assert.ok(npm, 'npm not found on $PATH');
  // A clean npm: no settings inherited from an `npm test` around us or from
  // the user's npmrc, a cache of its own (the tarball has no dependencies).
  writeFileSync(join(dir, 'npmrc'), '');
  env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|spawnpool_|cc$|node_options$)/i.test(k)));
  Object.assign(env, {
    npm_config_userconfig: join(dir, 'npmrc'),
    npm_config_cache: join(dir, 'npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_prefer_offline: 'true',
  });
  const packed = join(dir, 'pack');
  mkdirSync(packed);
  const r = await run(npm, ['pack', '--loglevel=error', '--pack-destination', packed], { cwd: root, env });
  assert.equal(r.code, 0, `npm pack failed:\n${r.stdout}${r.stderr}`);
  tarball = join(packed, readdirSync(packed).find((f) => f.endsWith('.tgz')));
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('with a C compiler: the server and the launch addon are built, and the addon starts the servers', { skip }, async () => {
  const { project } = await install('compiler', { args: ['--foreground-scripts'] });
  const build = join(project, 'node_modules', 'spawnpool', 'native', 'build');
  assert.ok(existsSync(join(build, 'spawnd')), 'native/build/spawnd was built');
  assert.ok(existsSync(join(build, 'launch.node')), 'native/build/launch.node was built');
  const result = await echo(project);
  assert.deepEqual(result, { out: 'hi\n', code: 0, spawned: 1, fallbacks: 0, stderr: '' });
  // The installed addon loads (the servers then start with posix_spawn, not by a fork of Node).
  const code = `const { addon, loadError } = await import('./node_modules/spawnpool/lib/launch.js');
    console.log(JSON.stringify({ addon: addon !== null, error: loadError?.message ?? null }));`;
  writeFileSync(join(project, 'addon.mjs'), code);
  const r = await run(process.execPath, ['addon.mjs'], { cwd: project, env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { addon: true, error: null });
  // The package entry is the tarball's bundle (no esbuild here), compiled
  // with the code cache the install step made for this Node.
  writeFileSync(join(project, 'bundle.mjs'), `import { createRequire } from 'node:module';
    const sp = await import('spawnpool');
    const load = createRequire(import.meta.url)('./node_modules/spawnpool/lib/load.cjs');
    console.log(JSON.stringify({ bundle: load.script !== null && load.load().api.spawn === sp.spawn, cacheRejected: load.cacheRejected }));`);
  const b = await run(process.execPath, ['bundle.mjs'], { cwd: project, env });
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(JSON.parse(b.stdout), { bundle: true, cacheRejected: false });
});

test('no C compiler: the prebuilt static server is installed and serves', { skip }, async () => {
  // PATH holds node and npm only (no cc, gcc, clang); npm's script shell is
  // named by its absolute path, since `sh` is not on that PATH either.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync(npm, join(bin, 'npm'));
  const { project } = await install('no-compiler', {
    args: ['--script-shell=/bin/sh'],
    extraEnv: { PATH: bin, CC: join(dir, 'no-such-cc') },
  });
  const pkg = join(project, 'node_modules', 'spawnpool');
  const prebuilt = join(pkg, 'native', 'build', 'prebuilt', target, 'spawnd');
  const server = join(pkg, 'native', 'build', 'spawnd');
  assert.ok(existsSync(prebuilt), `the tarball carries no ${target} prebuilt server`);
  assert.ok(readFileSync(server).equals(readFileSync(prebuilt)), 'native/build/spawnd is the prebuilt server');

  const result = await echo(project);
  assert.deepEqual(result, { out: 'hi\n', code: 0, spawned: 1, fallbacks: 0, stderr: '' });
});

test('the prebuilt server is statically linked (runs on glibc and musl alike)', { skip: skip || (!which('file') && 'no `file` command') }, async () => {
  const project = join(dir, 'no-compiler');
  const prebuilt = join(project, 'node_modules', 'spawnpool', 'native', 'build', 'prebuilt', target, 'spawnd');
  const r = await run(which('file'), ['-b', prebuilt], { env });
  assert.match(r.stdout, /ELF 64-bit LSB executable.*statically linked/);
});

test("require('spawnpool') from a .cjs file, on every Node at hand", { skip }, async (t) => {
  const project = join(dir, 'no-compiler');
  const nodes = [process.execPath, ...[22, 24].map((v) => join(root, `node_modules/node-${v}/bin/node`))];
  for (const node of nodes.filter((n) => existsSync(n))) {
    const version = (await run(node, ['--version'], { env })).stdout.trim();
    await t.test(`node ${version}`, async () => {
      const result = await echo(project, 'echo.cjs', node);
      assert.deepEqual(result, { out: 'hi\n', code: 0, spawned: 1, fallbacks: 0, stderr: '' });
    });
  }
});

test('--ignore-scripts: installs, and the prebuilt server the tarball carries serves', { skip }, async () => {
  const { project } = await install('ignore-scripts', { args: ['--ignore-scripts'] });
  assert.ok(!existsSync(join(project, 'node_modules', 'spawnpool', 'native', 'build', 'spawnd')));
  const result = await echo(project);
  assert.equal(result.out, 'hi\n');
  assert.equal(result.code, 0);
  assert.equal(result.spawned, 1);
  assert.equal(result.fallbacks, 0);
  assert.doesNotMatch(result.stderr, /SPAWNPOOL_UNAVAILABLE/);
});

test('not Linux ($SPAWNPOOL_PLATFORM=darwin): installs, builds nothing, one notice', { skip }, async () => {
  const { project, output } = await install('darwin', {
    args: ['--foreground-scripts'],
    extraEnv: { SPAWNPOOL_PLATFORM: 'darwin' },
  });
  assert.ok(!existsSync(join(project, 'node_modules', 'spawnpool', 'native', 'build', 'spawnd')));
  const notices = output.match(/^spawnpool: NOTICE: .*$/gm) ?? [];
  assert.equal(notices.length, 1, output);
  assert.match(notices[0], /Linux only \(this is darwin-.*every spawn\/exec\/execFile call will go to node:child_process/);
  const result = await echo(project, 'echo.mjs', process.execPath, { SPAWNPOOL_PLATFORM: 'darwin' });
  assert.equal(result.out, 'hi\n');
  assert.equal(result.code, 0);
  assert.ok(result.fallbacks >= 1, `fallbacks: ${result.fallbacks}`);
});
