// Loads spawnpool for the package's entry points (dist/index.js, index.cjs,
// register.js, register.cjs): dist/spawnpool.cjs, lib/ bundled into one
// script by scripts/bundle.js. Under Node it is compiled with vm.Script and
// the V8 code cache the install step made for this V8 (functions a first
// spawn runs come compiled); a missing or rejected cache only costs the
// compile. One instance per process: every entry point requires this module.
'use strict';

const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');
const bundle = join(dist, 'spawnpool.cjs');
const cacheFile = join(dist, `spawnpool-${process.arch}-v8-${process.versions.v8}.cache`);

/** Runs the bundle; `builtins` maps a builtin's id (node:fs) to what its imports read, else its module object. */
function run(builtins) {
  // Bun and Deno have node:vm but not V8's code cache: a plain require.
  if (process.versions.bun !== undefined || process.versions.deno !== undefined) {
    return { exports: require(bundle), script: null, cacheRejected: null };
  }
  const { Script } = require('node:vm');
  const { createRequire } = require('node:module');
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  // The wrapper shares the bundle's first line, so line numbers in stack traces are the file's.
  const source = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`;
  const script = new Script(source, { filename: bundle, cachedData });
  const fileRequire = createRequire(bundle);
  const bundleRequire = builtins === undefined ? fileRequire
    : (id) => (Object.hasOwn(builtins, id) ? builtins[id] : fileRequire(id));
  const module = { exports: {} };
  script.runInThisContext()(module.exports, bundleRequire, module, bundle, dist);
  return { exports: module.exports, script, cacheRejected: cachedData === undefined ? null : script.cachedDataRejected };
}

let loaded = null;

/**
 * The bundle's exports, `api` (lib/index.js's) and `install` (lib/hook.js's),
 * run at the first call. The ES module entry passes the builtins' ES module
 * namespaces; the CommonJS entries pass nothing.
 */
exports.load = (builtins) => (loaded ??= run(builtins)).exports;
/** Where this V8's code cache is read from. */
exports.cacheFile = cacheFile;
Object.defineProperties(exports, {
  /** The compiled bundle (null before load() and where it was required), for scripts/bundle.js's code cache. */
  script: { get: () => loaded?.script ?? null, enumerable: true },
  /** null: no cache for this V8 (or not loaded); false: used; true: V8 refused it (another build or flags). */
  cacheRejected: { get: () => loaded?.cacheRejected ?? null, enumerable: true },
});
