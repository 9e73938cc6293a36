#!/usr/bin/env node
// Makes dist/spawnpool.cjs: spawnpool bundled into one script with esbuild
// (a devDependency), which the package's entry points (dist/index.js and
// the others) load, so that importing it loads two modules instead of
// twenty-four, compiled with a V8 code cache. Why, and
// what it buys: docs/benchmarks.md, "Ninth pass"; how: docs/install.md,
// "The bundle and its code cache".
//
//   node scripts/bundle.js          the install step; never fails:
//       1. the bundle: kept when it was made from the lib/ at hand (the
//          packed tarball carries one), else made by the package's own
//          esbuild (the pinned devDependency: a git checkout), else none
//          (the entry points, dist/index.js and the others, then load
//          lib/'s modules: lib/load.cjs)
//       2. the code cache for the Node running this, made after a warm-up
//          spawn through the bundle (lib/load.cjs uses it when the same V8
//          runs the same bundle; any other compiles the bundle as usual)
//   node scripts/bundle.js --pack   the prepack step: always makes the
//                                   bundle, and fails without esbuild (no
//                                   code cache: the installing Node makes
//                                   its own)
//   node scripts/bundle.js --no-cache   1 only
//   node scripts/bundle.js --check      exits 1 unless the bundle was made
//                                       from the lib/ at hand, and
//                                       dist/index.js hands it the
//                                       namespaces of all its builtins
//
// Builtins keep their ES module semantics: lib/'s `import { closeSync } from
// 'node:fs'` is a binding to node:fs's ES module namespace, which holds the
// values of the moment that namespace was made (and of each
// syncBuiltinESMExports()), not what a later patch of the fs object put
// there. The ES module entry (dist/index.js) imports each builtin's
// namespace and the bundle's imports read from them (lib/load.cjs); the
// CommonJS entry requires the ES module entry, so it is the same. lib/
// imports builtins only as named or namespace imports: a default import is
// the module object itself, which the namespace does not give, and is
// refused here.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as vm from 'node:vm';
import { unwrapNames } from './unwrap-names.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const lib = join(root, 'lib');
const dist = join(root, 'dist');
const bundleFile = join(dist, 'spawnpool.cjs');
const require = createRequire(import.meta.url);
const args = new Set(process.argv.slice(2));
const say = (line) => console.log(`spawnpool: ${line}`);
const rel = (p) => relative(process.cwd(), p) || '.';

class BundleError extends Error {}

/** The esbuild version package.json pins: the only one that makes the bundle. */
const pinnedEsbuild = () => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies?.esbuild ?? null;

/**
 * What the bundle is made from: lib/'s modules (the files npm packs and
 * esbuild reads, *.js and *.cjs), this script, and the pinned esbuild.
 */
function sourcesHash() {
  const hash = createHash('sha256');
  const names = readdirSync(lib, { withFileTypes: true })
    .filter((e) => e.isFile() && /^[^.].*\.c?js$/.test(e.name)).map((e) => e.name).sort();
  for (const name of names) hash.update(`${name}\0`).update(readFileSync(join(lib, name))).update('\0');
  hash.update(readFileSync(fileURLToPath(import.meta.url))).update(`\0${pinnedEsbuild()}`);
  return hash.digest('hex').slice(0, 16);
}

// The first line names the sources (after "lib/") and, after "bundle", the
// hash of the text below it: lib/load.cjs names the code cache after the
// latter (and the file's size and mtime), so a cache is only ever offered to
// the very text it was made from (V8 itself checks only the source's length).
// Its pattern is lib/load.cjs's, which reads it at every load.
const { HEADER_RE } = require('../lib/load.cjs');
const header = (content, sources) => `// spawnpool bundle ${content} of lib/ ${sources}: made by scripts/bundle.js, do not edit\n`;

function bundleIsCurrent(hash) {
  try {
    return HEADER_RE.exec(readFileSync(bundleFile, 'utf8'))?.[2] === hash;
  } catch {
    return false;
  }
}

/** This package's own esbuild at the pinned version, or null (never one found further up the tree). */
function loadEsbuild() {
  try {
    const own = createRequire(join(root, 'package.json'));
    const path = own.resolve('esbuild');
    if (!path.startsWith(`${realpathSync(join(root, 'node_modules'))}/`)) return null;
    const esbuild = own('esbuild');
    return esbuild.version === pinnedEsbuild() ? esbuild : null;
  } catch {
    return null;
  }
}

/** esbuild plugin: lib/ imports its own files, and builtins (node:…) by name or as a namespace; nothing else. */
const onlyBuiltins = {
  name: 'only-builtins',
  setup(build) {
    build.onResolve({ filter: /^node:/ }, ({ path }) => ({ path, external: true }));
    build.onResolve({ filter: /^[^./]/ }, ({ path }) => {
      throw new BundleError(`lib/ imports ${JSON.stringify(path)}: builtins are imported as node:…, and nothing else is`);
    });
    build.onLoad({ filter: /\/lib\/[^/]+\.js$/ }, ({ path }) => {
      const source = readFileSync(path, 'utf8');
      const byDefault = /^import\s+([A-Za-z_$][\w$]*\s*(,[^;]*)?|\{[^}]*\bdefault\b[^}]*\})\s+from\s+['"]node:[^'"]+['"]/m.exec(source);
      if (byDefault) throw new BundleError(`${relative(root, path)}: \`${byDefault[0]}\`: import a builtin by name or as a namespace`);
      return { contents: source, loader: 'js' };
    });
  },
};

async function makeBundle(esbuild, hash) {
  const result = await esbuild.build({
    stdin: {
      contents: "export * as api from './index.js';\nexport { install } from './hook.js';\n",
      resolveDir: lib,
      sourcefile: 'bundle-entry.js',
    },
    bundle: true,
    // The same text wherever it is run from (esbuild's path comments are relative to this).
    absWorkingDir: root,
    tsconfigRaw: '{}',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // Function and class names stay what the sources say (spawn.name, ChildProcess.name).
    keepNames: true,
    write: false,
    logLevel: 'silent',
    plugins: [onlyBuiltins],
    // The bundle sits in dist/, one level below the package root like lib/,
    // so URLs relative to it (../native/build/…) name the same files.
    define: { 'import.meta.url': '__spawnpool_url' },
    banner: { js: "'use strict';\nconst __spawnpool_url = require('node:url').pathToFileURL(__filename).href;" },
  });
  const text = unwrapNames(result.outputFiles[0].text);
  // The rewrite is line by line: what it gives must still parse.
  try {
    new vm.Script(text, { filename: bundleFile });
  } catch (err) {
    throw new BundleError(`the bundle does not parse after its names were unwrapped: ${err.message}`);
  }
  // A default import read through the handed-over namespace would be the
  // namespace, not the module object: refused, whatever its spelling.
  const viaDefault = /\bimport_node_[\w$]+\.default\b/.exec(text);
  if (viaDefault) throw new BundleError(`the bundle reads a builtin's default export (${viaDefault[0]}): import it by name or as a namespace`);
  const content = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const full = header(content, hash) + text;
  let old = null;
  try {
    old = readFileSync(bundleFile, 'utf8');
  } catch {}
  if (old === full) return;
  writeAtomically(bundleFile, full);
  removeCaches((name) => !name.includes(`-${content}-`));
}

/** Removes dist/'s code caches whose name `which` accepts (all by default). */
function removeCaches(which = () => true) {
  let names = [];
  try {
    names = readdirSync(dist);
  } catch {}
  for (const name of names) if (name.endsWith('.cache') && which(name)) rmSync(join(dist, name), { force: true });
}

function writeAtomically(file, text) {
  mkdirSync(dist, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** The builtins the bundle imports (esbuild turns each import into one `require("node:…")`). */
function bundleBuiltins() {
  const text = readFileSync(bundleFile, 'utf8');
  return [...new Set(Array.from(text.matchAll(/\brequire\("(node:[^"]+)"\)/g), (m) => m[1]))].sort();
}

/**
 * What is wrong with dist/index.js's builtins, or null: the bundle imports
 * builtins whose namespaces it does not hand over.
 */
function namespacesProblem() {
  const entry = readFileSync(join(dist, 'index.js'), 'utf8');
  const imported = new Map(Array.from(entry.matchAll(/^import \* as ([\w$]+) from '(node:[^']+)';$/gm), (m) => [m[2], m[1]]));
  const handed = new Map(Array.from(entry.matchAll(/^ {2}'(node:[^']+)': ([\w$]+),$/gm), (m) => [m[1], m[2]]));
  const missing = bundleBuiltins().filter((id) => !imported.has(id) || handed.get(id) !== imported.get(id));
  return missing.length === 0 ? null : `dist/index.js does not hand the bundle the namespaces of ${missing.join(', ')}: add them there`;
}

/** Code caches of other V8s for this bundle are left alone (another Node may share this install). */
function makeCodeCache() {
  // One server to start with, whatever the machine, in a pool that may grow
  // to the default size: the default sizing, which an application's first
  // spawn runs, is compiled too. No cache read: this run makes it.
  const env = { ...process.env, SPAWNPOOL_MIN: '1', SPAWNPOOL_CODE_CACHE: '0' };
  delete env.SPAWNPOOL_SIZE;
  delete env.SPAWNPOOL_MAX;
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--cache-child'], {
    cwd: root, encoding: 'utf8', timeout: 30_000, env,
  });
  if (r.status !== 0) {
    throw new BundleError(`no code cache: the warm-up ${r.error?.message ?? `exited ${r.status ?? r.signal}`}: ${(r.stderr ?? '').trim().split('\n')[0]}`);
  }
  say(r.stdout.trim());
}

/** In a fresh process: spawns through the bundle as an application would, then saves what V8 compiled. */
async function cacheChild() {
  const api = await import(pathToFileURL(join(dist, 'index.js')).href);
  const load = require('../lib/load.cjs');
  if (load.script === null) throw new BundleError('this runtime loads the bundle without vm.Script');
  if (!(await api.ready())) throw new BundleError('the pool did not start (no spawn server)');
  const { promisify } = await import('node:util');
  await new Promise((resolve, reject) => {
    const child = api.spawn('sh', ['-c', 'echo out; echo err >&2']);
    child.stdout.on('data', () => {});
    child.stderr.on('data', () => {});
    child.on('error', reject);
    child.on('close', resolve);
  });
  await promisify(api.execFile)('sh', ['-c', 'echo hi']);
  await promisify(api.exec)('echo hi');
  await api.close();
  const data = load.script.createCachedData();
  writeAtomically(load.cacheFile, data);
  console.log(`code cache for V8 ${process.versions.v8}: ${rel(load.cacheFile)} (${Math.round(data.length / 1024)} KiB)`);
}

async function main() {
  const pack = args.has('--pack');
  const hash = sourcesHash();
  let bundled = !pack && bundleIsCurrent(hash);
  if (!bundled && !pack) {
    // Whatever happens next, the bundle of other sources (and its caches) must not be run.
    rmSync(bundleFile, { force: true });
    removeCaches();
  }
  if (!bundled) {
    const esbuild = loadEsbuild();
    if (esbuild !== null) {
      await makeBundle(esbuild, hash);
      say(`bundled lib/ into ${rel(bundleFile)}`);
      bundled = true;
    } else if (pack) {
      throw new BundleError(`esbuild ${pinnedEsbuild()} is not installed (npm install first): the tarball must carry the bundle`);
    } else {
      say(`no bundle (no esbuild ${pinnedEsbuild()} in this package's node_modules): spawnpool loads lib/'s modules`);
    }
  }
  const problem = bundled ? namespacesProblem() : null;
  if (problem !== null) throw new BundleError(problem);
  if (bundled && !pack && !args.has('--no-cache')) makeCodeCache();
}

if (args.has('--cache-child')) {
  await cacheChild();
} else if (args.has('--check')) {
  const current = bundleIsCurrent(sourcesHash());
  const problem = current ? namespacesProblem() : null;
  if (!current) say(`${rel(bundleFile)} is missing or older than lib/: node scripts/bundle.js`);
  else say(problem ?? `${rel(bundleFile)} is lib/ as it is`);
  process.exitCode = current && problem === null ? 0 : 1;
} else {
  try {
    await main();
  } catch (err) {
    // esbuild wraps what a plugin throws: its message is the plugin's.
    const known = err instanceof BundleError || Array.isArray(err?.errors);
    console.error(`spawnpool: ${known ? err.message : err.stack}`);
    // The install step never fails: without a bundle (or a cache), the
    // entry points load lib/'s modules (or compile the bundle as usual).
    if (args.has('--pack')) process.exitCode = 1;
  }
}
