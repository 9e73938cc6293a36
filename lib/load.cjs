// Loads spawnpool for the package's entry points (dist/index.js and, through
// it, index.cjs, register.js, register.cjs): dist/spawnpool.cjs, lib/
// bundled into one script by scripts/bundle.js. Under Node it is compiled
// with vm.Script and the V8 code cache the install step made for this V8
// and this very bundle (functions a first spawn runs come compiled); a
// missing or refused cache only costs the compile. Without a bundle (no
// esbuild at install, --ignore-scripts in a checkout), lib/'s ES modules,
// through require(esm). One instance per process: every entry point comes
// here.
'use strict';

const { existsSync, readFileSync, statSync } = require('node:fs');
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');
const bundle = join(dist, 'spawnpool.cjs');

// The bundle's first line, as scripts/bundle.js writes it (and reads it
// back, from here): the hash of the text below it, then that of the sources.
const HEADER_RE = /^\/\/ spawnpool bundle ([0-9a-f]{16}) of lib\/ ([0-9a-f]{16}): made by scripts\/bundle\.js, do not edit\n/;

/**
 * The cache file for this V8 and this bundle: its header names the hash of
 * the text scripts/bundle.js wrote, and the file's size and mtime change
 * with any edit made since (patch-package, a hand edit), so a cache is never
 * offered to another text (V8 itself checks only the source's length).
 */
function cacheFileFor(source) {
  const id = HEADER_RE.exec(source)?.[1] ?? 'unknown';
  const { size, mtimeMs } = statSync(bundle);
  return join(dist, `spawnpool-${id}-${size}-${Math.trunc(mtimeMs)}-${process.arch}-v8-${process.versions.v8}.cache`);
}

/**
 * Runs the bundle. `builtins` maps a builtin's id (node:fs) to the ES module
 * namespace its imports read; without it they read the module object.
 */
function run(builtins) {
  const required = (exports) => ({ exports, script: null, cacheFile: null, cacheRejected: null });
  // No bundle; or Deno, whose imports of the package get lib/'s modules
  // (its "deno" export condition), so its require() must too: one instance.
  if (process.versions.deno !== undefined || !existsSync(bundle)) {
    return required({ api: require('./index.js'), install: require('./hook.js').install });
  }
  // Bun has node:vm but not V8's code cache; a sandbox such as Jest's runs
  // modules in a context of its own, which vm.Script's runInThisContext
  // would leave: a plain require in both cases.
  const vm = require('node:vm');
  if (process.versions.bun !== undefined || vm.runInThisContext('globalThis') !== globalThis) return required(require(bundle));
  const { createRequire } = require('node:module');
  const text = readFileSync(bundle, 'utf8');
  const cacheFile = cacheFileFor(text);
  let cachedData;
  try {
    // SPAWNPOOL_CODE_CACHE=0: compile without it (scripts/bundle.js makes the cache so).
    if (process.env.SPAWNPOOL_CODE_CACHE !== '0') cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  // The wrapper shares the bundle's first line, so line numbers in stack traces are the file's.
  const source = `(function (exports, require, module, __filename, __dirname) {${text}\n})`;
  const script = new vm.Script(source, { filename: bundle, cachedData });
  const fileRequire = createRequire(bundle);
  const bundleRequire = builtins === undefined ? fileRequire
    : (id) => (Object.hasOwn(builtins, id) ? builtins[id] : fileRequire(id));
  const module = { exports: {} };
  script.runInThisContext()(module.exports, bundleRequire, module, bundle, dist);
  return {
    exports: module.exports, script, cacheFile, cacheRejected: cachedData === undefined ? null : script.cachedDataRejected,
  };
}

let loaded = null;

/**
 * The bundle's exports, `api` (lib/index.js's) and `install` (lib/hook.js's),
 * run at the first call. dist/index.js passes the builtins' ES module
 * namespaces; later calls return the same exports.
 */
exports.load = (builtins) => (loaded ??= run(builtins)).exports;
exports.HEADER_RE = HEADER_RE;
Object.defineProperties(exports, {
  /** The compiled bundle (null before load(), where it was required, and without one), for scripts/bundle.js's code cache. */
  script: { get: () => loaded?.script ?? null, enumerable: true },
  /** Where this V8's code cache for this bundle is read from (null before load(), and where none is used). */
  cacheFile: { get: () => loaded?.cacheFile ?? null, enumerable: true },
  /** null: no cache read (none for this V8 and bundle, or not loaded); false: used; true: V8 refused it. */
  cacheRejected: { get: () => loaded?.cacheRejected ?? null, enumerable: true },
});
