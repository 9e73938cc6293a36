// The package's entry points (dist/index.js and the others) load lib/
// bundled into one script (dist/spawnpool.cjs, made by scripts/bundle.js)
// with a V8 code cache. What users import must be
// lib/index.js exactly: the same exports, names, arities, strictness, one
// instance whichever way it is loaded, and the same view of builtins a
// program patches later. And every way dist/ can come about (esbuild at
// hand, a tarball's bundle without esbuild, neither; a cache that fits, one
// that does not) must give a working package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as pkg from 'spawnpool';
import * as sources from '../../lib/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

/** Runs `code` as an ES module in a fresh Node; returns its parsed last stdout line. */
function runModule(code, { cwd = ROOT, env = {}, node = [] } = {}) {
  const r = spawnSync(process.execPath, [...node, '--input-type=module', '-e', code], {
    cwd, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, `exit ${r.status ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

/** A copy of the package (lib, scripts, dist's entry points, package.json) sharing this checkout's native build. */
function packageCopy(t, { withBundle = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const part of ['lib', 'scripts', 'package.json']) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), {
    recursive: true, filter: (src) => withBundle || !/(spawnpool\.cjs|\.cache)$/.test(src),
  });
  symlinkSync(join(ROOT, 'native'), join(dir, 'native'));
  return dir;
}

/** Runs scripts/bundle.js with `args` in the package at `dir`. */
const bundler = (dir, args = [], env = {}) => spawnSync(process.execPath, ['scripts/bundle.js', ...args], {
  cwd: dir, encoding: 'utf8', env: { ...process.env, ...env },
});

/** One spawn through the entry at `url`: the child's output, and what lib/load.cjs says of the cache. */
const spawnThrough = (url) => `
  const { spawn, close } = await import(${JSON.stringify(url)});
  const child = spawn('sh', ['-c', 'echo through']);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  await close();
  let cacheRejected;
  const load = (await import('node:module')).createRequire(${JSON.stringify(url)})('../lib/load.cjs'); cacheRejected = load.script === null ? 'no bundle' : load.cacheRejected;
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
  // require() gives the ES module entry's namespace, as require(esm) of lib/index.js did.
  assert.equal(cjs, require('../../dist/index.js'));
  assert.equal(Object.prototype.toString.call(cjs), '[object Module]');
  assert.equal(cjs.__esModule, true);
  for (const name of ['spawn', 'exec', 'execFile', 'stats', 'createPool', 'ChildProcess']) {
    assert.equal(pkg[name], api[name], `import: ${name}`);
    assert.equal(cjs[name], api[name], `require: ${name}`);
  }
  assert.notEqual(pkg.spawn, sources.spawn, 'the package entry is the bundle, not lib/');
  assert.match(readFileSync(join(ROOT, 'dist/index.js'), 'utf8'), /lib\/load\.cjs/);
});

test('the bundle is made from lib/ as it is (npm test makes it first)', () => {
  const r = bundler(ROOT, ['--check']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("no closure made per call is renamed at each call: keepNames' __name only where the declaration names it otherwise", () => {
  const text = readFileSync(join(ROOT, 'dist/spawnpool.cjs'), 'utf8');
  // `const f = __name(() => ..., "f")` defines name on every closure made;
  // the bundle drops the wrapper where the declaration gives that name.
  const wrapped = [...text.matchAll(/^ *(?:const|let|var) ([\w$]+) = \/\* @__PURE__ \*\/ __name\([^]*?, "([\w$]+)"\);$/gm)]
    .filter(([, binding, name]) => binding === name);
  assert.deepEqual(wrapped.map(([, name]) => name), []);
  assert.match(text, /^ {2}const emit = \(\) => \{$/m);
  // Nor is a class named by a define (its constructor would never be
  // optimized), nor a function declaration that has its name already.
  assert.deepEqual(text.match(/__name\(this, "[\w$]+"\)/g), null);
  assert.deepEqual([...text.matchAll(/^ *__name\(([\w$]+), "([\w$]+)"\);$/gm)].filter(([, a, b]) => a === b), []);
  for (const name of ['ChildProcess', 'Session', 'Server', 'ChildReadable', 'ChildWritable', 'Decoder']) {
    assert.match(text, new RegExp(`^var ${name} = class\\b`, 'm'), name);
  }
  // Where esbuild renamed (spawn2), the wrapper stays, and the name is the source's.
  assert.match(text, /__name\(function spawn2\(/);
  assert.equal(pkg.spawn.name, 'spawn');
});

test('unwrapNames: only where the code names itself, and the names come out the same', async () => {
  const { unwrapNames } = await import('../../scripts/unwrap-names.js');
  const source = [
    'var __name = (target, value) => Object.defineProperty(target, "name", { value, configurable: true });',
    'const out = {};',
    'const one = /* @__PURE__ */ __name(() => 1, "one");',
    'const many = /* @__PURE__ */ __name(async (a) => {',
    '  await a;',
    '}, "many");',
    // esbuild's renaming of a named function expression: the name it asks for is not the expression's.
    'const foo = /* @__PURE__ */ __name(function foo2(x) {',
    '  return x;',
    '}, "foo");',
    'var f2 = /* @__PURE__ */ __name(() => 1, "f"), f3 = /* @__PURE__ */ __name(() => 2, "f2");',
    'const gen = /* @__PURE__ */ __name(function* () {',
    '  yield 1;',
    '}, "gen");',
    'var Plain = class {',
    '  static {',
    '    __name(this, "Plain");',
    '  }',
    '};',
    'var Renamed2 = class {',
    '  static {',
    '    __name(this, "Renamed");',
    '  }',
    '};',
    'var Own = class Own extends Plain {',
    '  static {',
    '    __name(this, "Own");',
    '  }',
    '};',
    'function declared() {',
    '}',
    '__name(declared, "declared");',
    'async function declared2() {',
    '}',
    '__name(declared2, "declaredAsync");',
    'Object.assign(out, { one, many, foo, f2, f3, gen, Plain, Renamed2, Own, declared, declared2 });',
    'return out;',
  ].join('\n');
  const unwrapped = unwrapNames(source);
  const names = (text) => Object.fromEntries(Object.entries(new Function(text)()).map(([k, v]) => [k, v.name]));
  assert.deepEqual(names(unwrapped), names(source));
  assert.deepEqual(names(source), {
    one: 'one', many: 'many', foo: 'foo', f2: 'f', f3: 'f2', gen: 'gen', Plain: 'Plain', Renamed2: 'Renamed', Own: 'Own',
    declared: 'declared', declared2: 'declaredAsync',
  });
  // Dropped where the code names itself; kept where esbuild renamed.
  // Kept: foo2's, the two on f2's line, Renamed2's and declared2's.
  assert.equal((unwrapped.match(/__name\(/g) ?? []).length, 5);
  assert.match(unwrapped, /^const one = \(\) => 1;$/m);
  assert.match(unwrapped, /^const many = async \(a\) => \{$/m);
  assert.match(unwrapped, /__name\(function foo2\(x\)/);
});

test("the bundle's classes are their own names, and ChildProcess's constructor gets optimized", () => {
  const { names, optimized } = runModule(`
    const { ChildProcess } = await import('spawnpool');
    const names = [ChildProcess.name, Object.getOwnPropertyDescriptor(ChildProcess, 'name')];
    %PrepareFunctionForOptimization(ChildProcess);
    new ChildProcess(); new ChildProcess();
    %OptimizeFunctionOnNextCall(ChildProcess);
    new ChildProcess();
    // Bit 4 of %GetOptimizationStatus: optimized by TurboFan.
    console.log(JSON.stringify({ names, optimized: (%GetOptimizationStatus(ChildProcess) & 16) !== 0 }));`,
  { node: ['--allow-natives-syntax'] });
  assert.deepEqual(names, ['ChildProcess', { value: 'ChildProcess', writable: false, enumerable: false, configurable: true }]);
  assert.equal(optimized, true);
});

test('closures keep the names lib/ gives them: a stack trace through the bundle names emitClose', () => {
  const { stack } = runModule(`
    const { spawn } = await import('spawnpool');
    const child = spawn('echo', ['hi']);
    child.stdout.resume();
    const stack = await new Promise((resolve) => {
      const emit = child.stdout.emit;
      child.stdout.emit = function (event, ...args) {
        if (event === 'close') resolve(new Error().stack);
        return emit.call(this, event, ...args);
      };
    });
    console.log(JSON.stringify({ stack }));`);
  assert.match(stack, /\n {4}at emitClose \(.*dist\/spawnpool\.cjs:/);
});

test("the bundle's functions are strict mode code, as the ES modules' are", () => {
  // Reading .caller of a strict function throws; of a sloppy one it does not.
  for (const [label, api] of [['lib/', sources], ['bundle', pkg]]) {
    assert.throws(() => api.spawn.caller, TypeError, label);
    assert.throws(() => api.createPool.caller, TypeError, label);
  }
});

test('a builtin patched around the import: spawnpool calls what the ES modules would', async () => {
  // Without the launch addon, spawnpool writes its requests with
  // fs.writeSync (with it, the addon's write). An ES module's named
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
      const { count, channels } = runModule(`
        const fs = process.getBuiltinModule('node:fs');
        const dc = process.getBuiltinModule('node:diagnostics_channel');
        let count = 0;
        let channels = 0;
        const patch = () => {
          const write = fs.writeSync;
          fs.writeSync = function (...a) { count++; return write.apply(this, a); };
          const channel = dc.channel;
          dc.channel = function (...a) { channels++; return channel.apply(this, a); };
        };
        let sp;
        const load = async () => { sp = await import(${JSON.stringify(url)}); await sp.ready(); count = 0; };
        ${steps.replace("import('node:fs')", "import('node:fs'); await import('node:diagnostics_channel')")}
        await new Promise((resolve) => sp.spawn('true').on('close', resolve));
        await sp.close();
        console.log(JSON.stringify({ count, channels }));`, { env: { SPAWNPOOL_ADDON: '0' } });
      (calls[name] ??= {})[label] = count;
      (calls[`${name} (diagnostics_channel.channel, a namespace import)`] ??= {})[label] = channels;
    }
  }
  for (const [name, { 'lib/': own, bundle }] of Object.entries(calls)) {
    const why = `${name}: the patched function was called ${own} times from lib/, ${bundle} from the bundle`;
    // The channels are made at import, a fixed number; the writes per spawn may vary with timing.
    if (name.includes('diagnostics_channel')) assert.equal(bundle, own, why);
    else assert.equal(bundle > 0, own > 0, why);
  }
  // Both outcomes occur, so the comparison can fail either way.
  assert.ok(calls['patched, then imported']['lib/'] > 0, JSON.stringify(calls));
  assert.equal(calls['imported, then patched']['lib/'], 0, JSON.stringify(calls));
  const ns = ' (diagnostics_channel.channel, a namespace import)';
  assert.ok(calls[`patched, then imported${ns}`]['lib/'] > 0, JSON.stringify(calls));
  // Node's own modules call the patched dc.channel too (they use the module
  // object); spawnpool's channels at import are the difference.
  assert.ok(calls[`node:fs imported elsewhere first, then patched, then spawnpool imported${ns}`]['lib/']
    < calls[`patched, then imported${ns}`]['lib/'], JSON.stringify(calls));
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
  // Where the copy's loader looks for its cache (the copy's bundle has an mtime of its own).
  const { cacheFile } = runModule(`
    const load = (await import('node:module')).createRequire(${JSON.stringify(pathToFileURL(join(dir, 'lib/load.cjs')).href)})('./load.cjs');
    load.load();
    console.log(JSON.stringify({ cacheFile: load.cacheFile }));`);
  assert.ok(cacheFile.startsWith(join(dir, 'dist')), cacheFile);
  writeFileSync(cacheFile, Buffer.alloc(4096, 0x5a));
  const r = runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href));
  assert.deepEqual(r, { out: 'through\n', code: 0, cacheRejected: true });
});

test("a tarball's bundle is kept without esbuild while lib/ is unchanged, and dropped when lib/ differs", (t) => {
  const dir = packageCopy(t);
  const bundle = () => bundler(dir, ['--no-cache'], { NODE_PATH: '' });
  // The copy has no node_modules: esbuild cannot be found from it.
  let r = bundle();
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /no bundle/);
  assert.ok(existsSync(join(dir, 'dist/spawnpool.cjs')), 'the bundle was kept');
  const kept = runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href));
  assert.equal(kept.out, 'through\n');
  assert.notEqual(kept.cacheRejected, 'no bundle', 'served by the bundle');

  appendFileSync(join(dir, 'lib/errors.js'), '\n// changed\n');
  r = bundle();
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /no bundle/);
  assert.ok(!existsSync(join(dir, 'dist/spawnpool.cjs')), 'the stale bundle was removed');
  const got = runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href));
  assert.deepEqual(got, { out: 'through\n', code: 0, cacheRejected: 'no bundle' });
});

test('no esbuild and no bundle: the entry points load lib/, for import, require and the register hook', (t) => {
  const dir = packageCopy(t, { withBundle: false });
  const r = bundler(dir);
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

test('a code cache is only ever offered to the bundle it was made from', (t) => {
  // V8 checks a cache against the source's length only: a lib/ edit that
  // keeps the bundle's length must not run the old code from the old cache.
  const dir = packageCopy(t);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const url = pathToFileURL(join(dir, 'dist/index.js')).href;
  const bundle = () => bundler(dir);
  const strategyError = () => runModule(`
    const { createPool } = await import(${JSON.stringify(url)});
    const load = (await import('node:module')).createRequire(${JSON.stringify(url)})('../lib/load.cjs');
    let message = null;
    try { createPool({ strategy: 'randoM' }); } catch (err) { message = err.message; }
    console.log(JSON.stringify({ message, cacheRejected: load.cacheRejected, cacheFile: load.cacheFile }));`);
  let r = bundle();
  assert.equal(r.status, 0, r.stderr);
  const before = strategyError();
  assert.equal(before.cacheRejected, false, 'the copy made and used its cache');
  assert.match(before.message, /strategy/);
  const oldCache = readFileSync(before.cacheFile);

  const config = join(dir, 'lib/config.js');
  const source = readFileSync(config, 'utf8');
  assert.ok(source.includes("'random'"));
  writeFileSync(config, source.replace("'random'", "'randoM'"));   // same length
  r = bundle();
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /bundled lib/);
  assert.ok(!existsSync(before.cacheFile), 'the new bundle removed the old cache');
  // The old cache put back under its own name: the new bundle does not look there.
  writeFileSync(before.cacheFile, oldCache);
  const after = strategyError();
  assert.equal(after.message, null, 'randoM is a strategy of the new bundle');
  assert.notEqual(after.cacheFile, before.cacheFile);
  assert.equal(after.cacheRejected, false, 'the new bundle has a cache of its own');
});

test("the install step uses only this package's pinned esbuild, never one found further up", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-up-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, 'esbuild-was-loaded');
  mkdirSync(join(dir, 'node_modules/esbuild/lib'), { recursive: true });
  cpSync(join(ROOT, 'node_modules/esbuild/package.json'), join(dir, 'node_modules/esbuild/package.json'));
  writeFileSync(join(dir, 'node_modules/esbuild/lib/main.js'), `require('fs').writeFileSync(${JSON.stringify(marker)}, ''); module.exports = { version: ${JSON.stringify(require('esbuild/package.json').version)} };`, { flag: 'w' });
  const pkgDir = join(dir, 'node_modules', 'spawnpool');
  for (const part of ['lib', 'scripts', 'package.json', 'dist']) cpSync(join(ROOT, part), join(pkgDir, part), { recursive: true });
  symlinkSync(join(ROOT, 'native'), join(pkgDir, 'native'));
  appendFileSync(join(pkgDir, 'lib/errors.js'), '\n// changed\n');   // the bundle is stale
  const r = bundler(pkgDir);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /no bundle/);
  assert.ok(!existsSync(marker), 'an esbuild outside the package was loaded');
});

test('the install step exits 0 even where the bundle cannot be written', (t) => {
  const dir = packageCopy(t, { withBundle: false });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // dist/spawnpool.cjs's temporary file cannot be made: a directory is in the way of the rename.
  mkdirSync(join(dir, 'dist/spawnpool.cjs'));
  writeFileSync(join(dir, 'dist/spawnpool.cjs/keep'), '');
  const r = bundler(dir);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr, /spawnpool: /);
  const pack = bundler(dir, ['--pack']);
  assert.notEqual(pack.status, 0, 'prepack fails where the bundle cannot be made');
});

test('an ES module that imports spawnpool can itself be require()d (no top-level await in the entry points)', (t) => {
  // require(esm) refuses a module graph with top-level await (ERR_REQUIRE_ASYNC_MODULE).
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-tla-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const esm = join(dir, 'uses-spawnpool.mjs');
  writeFileSync(esm, `import { spawn } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/index.js')).href)};
import ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/register.js')).href)};
export const kind = typeof spawn;\n`);
  const r = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(esm)}).kind)`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'function');
});

test('--check fails when dist/index.js does not hand the bundle a builtin it imports', (t) => {
  const dir = packageCopy(t);
  const entry = join(dir, 'dist/index.js');
  assert.equal(bundler(dir, ['--check']).status, 0);
  const original = readFileSync(entry, 'utf8');
  const cases = {
    'import and entry': original.replace(/^import \* as fs from 'node:fs';\n/m, '').replace(/^ {2}'node:fs': fs,\n/m, ''),
    'entry only': original.replace(/^ {2}'node:fs': fs,\n/m, ''),
  };
  for (const [label, text] of Object.entries(cases)) {
    assert.notEqual(text, original, label);
    writeFileSync(entry, text);
    const r = bundler(dir, ['--check']);
    assert.equal(r.status, 1, label);
    assert.match(r.stdout, /node:fs/, label);
  }
});

test('a rebuild that fails leaves no bundle of other sources behind: lib/ serves', (t) => {
  const dir = packageCopy(t);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // A default import of a builtin (refused: it would read the namespace), in double quotes.
  const errors = join(dir, 'lib/errors.js');
  writeFileSync(errors, `import osDefault from "node:os";\nexport const unusedOs = osDefault;\n${readFileSync(errors, 'utf8')}`);
  const r = bundler(dir);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr, /import a builtin by name or as a namespace/);
  assert.ok(!existsSync(join(dir, 'dist/spawnpool.cjs')), 'the bundle of the earlier lib/ is gone');
  assert.deepEqual(readdirSync(join(dir, 'dist')).filter((n) => n.endsWith('.cache')), []);
  assert.deepEqual(runModule(spawnThrough(pathToFileURL(join(dir, 'dist/index.js')).href)),
    { out: 'through\n', code: 0, cacheRejected: 'no bundle' });
});

test('a Node without require(esm): require() and --require of the package get the bundle', () => {
  // Node 20.19+ can be run as the Nodes before it (no require() of ES modules).
  const flag = '--no-experimental-require-module';
  const r = spawnSync(process.execPath, [flag, '-r', join(ROOT, 'dist/register.cjs'), '-e', `
    const sp = require('spawnpool');
    const cp = require('node:child_process');
    console.log(JSON.stringify({ hooked: cp.spawn === sp.spawn, bundle: require('./lib/load.cjs').script !== null }));`], {
    cwd: ROOT, encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { hooked: true, bundle: true });
});
