// The package's entry points (dist/, made by scripts/bundle.js) load lib/
// bundled into one script with a V8 code cache. What users import must be
// lib/index.js exactly: the same exports, names, arities, strictness, one
// instance whichever way it is loaded, and the same view of builtins a
// program patches later. And every way dist/ can come about (esbuild at
// hand, a tarball's bundle without esbuild, neither; a cache that fits, one
// that does not) must give a working package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as pkg from 'spawnpool';
import * as sources from '../../lib/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

/** Runs `code` as an ES module in a fresh Node; returns its parsed last stdout line. */
function runModule(code, { cwd = ROOT, env = {} } = {}) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, `exit ${r.status ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

/** A copy of the package (lib, scripts, dist, package.json) sharing this checkout's native build. */
function packageCopy(t, { withDist = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const part of ['lib', 'scripts', 'package.json', ...(withDist ? ['dist'] : [])]) {
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  }
  symlinkSync(join(ROOT, 'native'), join(dir, 'native'));
  return dir;
}

/** One spawn through the entry at `url`: the child's output, and what lib/load.cjs says of the cache. */
const spawnThrough = (url) => `
  const { spawn, close } = await import(${JSON.stringify(url)});
  const child = spawn('sh', ['-c', 'echo through']);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  await close();
  let cacheRejected;
  const load = (await import('node:module')).createRequire(${JSON.stringify(url)})('../lib/load.cjs'); cacheRejected = load.script === null ? 'not loaded' : load.cacheRejected;
  console.log(JSON.stringify({ out, code, cacheRejected }));`;

test('the package exports what lib/index.js exports: names, arities, kinds', () => {
  assert.deepEqual(Object.keys(pkg), Object.keys(sources));
  for (const [name, value] of Object.entries(sources)) {
    assert.equal(typeof pkg[name], typeof value, name);
    if (typeof value === 'function') {
      assert.equal(pkg[name].name, value.name, `${name}.name`);
      assert.equal(pkg[name].length, value.length, `${name}.length`);
    }
  }
  assert.deepEqual(Object.keys(pkg.default), Object.keys(sources.default));
  for (const [name, value] of Object.entries(sources.default)) {
    assert.equal(pkg.default[name].name, value.name, `default.${name}.name`);
  }
  // The promisify.custom of exec and execFile came through too.
  const custom = Symbol.for('nodejs.util.promisify.custom');
  for (const name of ['exec', 'execFile']) assert.equal(typeof pkg[name][custom], typeof sources[name][custom], name);
});

test('import and require of the package give one instance: the bundle', () => {
  const { api } = require('../../lib/load.cjs').load();
  const cjs = require('spawnpool');
  for (const name of ['spawn', 'exec', 'execFile', 'stats', 'createPool', 'ChildProcess']) {
    assert.equal(pkg[name], api[name], `import: ${name}`);
    assert.equal(cjs[name], api[name], `require: ${name}`);
  }
  assert.notEqual(pkg.spawn, sources.spawn, 'the package entry is the bundle, not lib/');
  assert.match(readFileSync(join(ROOT, 'dist/index.js'), 'utf8'), /lib\/load\.cjs/);
});

test('the bundle is made from lib/ as it is (npm test makes it first)', () => {
  const r = spawnSync(process.execPath, ['scripts/bundle.js', '--check'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("the bundle's functions are strict mode code, as the ES modules' are", () => {
  // Reading .caller of a strict function throws; of a sloppy one it does not.
  for (const [label, api] of [['lib/', sources], ['bundle', pkg]]) {
    assert.throws(() => api.spawn.caller, TypeError, label);
    assert.throws(() => api.createPool.caller, TypeError, label);
  }
});

test('a builtin patched around the import: spawnpool calls what the ES modules would', async () => {
  // spawnpool writes its requests with fs.writeSync. An ES module's named
  // import of a builtin is bound to the builtin's namespace: the values of
  // the moment it was made (at the first import of that builtin) or of the
  // last syncBuiltinESMExports(). The bundle, loaded by the package's ES
  // module entry, must call what lib/'s modules call in each case.
  const cases = {
    'patched, then imported': 'patch(); await load();',
    'imported, then patched': 'await load(); patch();',
    'node:fs imported elsewhere first, then patched, then spawnpool imported': "await import('node:fs'); patch(); await load();",
    'the same, and syncBuiltinESMExports() after the patch': "await import('node:fs'); patch(); (await import('node:module')).syncBuiltinESMExports(); await load();",
  };
  const calls = {};
  for (const [label, url] of [['lib/', pathToFileURL(join(ROOT, 'lib/index.js')).href], ['bundle', 'spawnpool']]) {
    for (const [name, steps] of Object.entries(cases)) {
      const { count } = runModule(`
        const fs = process.getBuiltinModule('node:fs');
        let count = 0;
        const patch = () => { const original = fs.writeSync; fs.writeSync = function (...a) { count++; return original.apply(this, a); }; };
        let sp;
        const load = async () => { sp = await import(${JSON.stringify(url)}); await sp.ready(); count = 0; };
        ${steps}
        await new Promise((resolve) => sp.spawn('true').on('close', resolve));
        await sp.close();
        console.log(JSON.stringify({ count }));`, { env: { SPAWNPOOL_ADDON: '' } });
      (calls[name] ??= {})[label] = count;
    }
  }
  for (const [name, { 'lib/': own, bundle }] of Object.entries(calls)) {
    assert.equal(bundle > 0, own > 0, `${name}: the patched fs.writeSync was called ${own} times from lib/, ${bundle} from the bundle`);
  }
  // Both outcomes occur, so the comparison can fail either way.
  assert.ok(calls['patched, then imported']['lib/'] > 0, JSON.stringify(calls));
  assert.equal(calls['imported, then patched']['lib/'], 0, JSON.stringify(calls));
});

test('the code cache made by the install step is the one this Node uses', () => {
  const r = spawnSync(process.execPath, ['-e', `const l = require('./lib/load.cjs'); l.load(); console.log(JSON.stringify(l.cacheRejected))`], {
    cwd: ROOT, encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), false, 'false: cache accepted; null: no cache for this V8; true: rejected');
});

test('a code cache V8 refuses costs only the compile: the package works', (t) => {
  const dir = packageCopy(t);
  const cache = join(dir, 'dist', basename(require('../../lib/load.cjs').cacheFile));
  writeFileSync(cache, Buffer.alloc(4096, 0x5a));
  const r = runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href));
  assert.deepEqual(r, { out: 'through\n', code: 0, cacheRejected: true });
});

test("a tarball's bundle is kept without esbuild while lib/ is unchanged, and dropped when lib/ differs", (t) => {
  const dir = packageCopy(t);
  const bundle = () => spawnSync(process.execPath, ['scripts/bundle.js', '--no-cache'], {
    cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' },
  });
  // The copy has no node_modules: esbuild cannot be found from it.
  let r = bundle();
  assert.equal(r.status, 0, r.stderr);
  assert.match(readFileSync(join(dir, 'dist/index.js'), 'utf8'), /lib\/load\.cjs/);
  assert.deepEqual(runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href)).out, 'through\n');

  appendFileSync(join(dir, 'lib/errors.js'), '\n// changed\n');
  r = bundle();
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /no bundle/);
  assert.match(readFileSync(join(dir, 'dist/index.js'), 'utf8'), /from '\.\.\/lib\/index\.js'/);
  const got = runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href));
  assert.deepEqual(got, { out: 'through\n', code: 0, cacheRejected: 'not loaded' });
});

test('no esbuild and no bundle: the entry points load lib/, for import, require and the register hook', (t) => {
  const dir = packageCopy(t, { withDist: false });
  const r = spawnSync(process.execPath, ['scripts/bundle.js'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /no bundle/);
  const url = pathToFileURL(join(dir, 'dist/index.js')).href;
  assert.equal(runModule(spawnThrough(url)).out, 'through\n');
  const viaRequire = runModule(`
    import { createRequire } from 'node:module';
    const sp = createRequire(${JSON.stringify(url)})('./index.cjs');
    await import(${JSON.stringify(pathToFileURL(join(dir, 'dist/register.js')).href)});
    const cp = createRequire(${JSON.stringify(url)})('node:child_process');
    console.log(JSON.stringify({ same: sp.spawn === (await import(${JSON.stringify(url)})).spawn, hooked: cp.spawn === sp.spawn }));`);
  assert.deepEqual(viaRequire, { same: true, hooked: true });
});
