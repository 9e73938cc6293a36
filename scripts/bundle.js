#!/usr/bin/env node
// Makes dist/: the package's entry points, and spawnpool bundled into one
// script with esbuild (a devDependency) so that importing it loads two
// modules instead of twenty-four, compiled with a V8 code cache. Why, and
// what it buys: docs/benchmarks.md, "Ninth pass".
//
//   node scripts/bundle.js          the install step; never fails:
//       1. the bundle: made by esbuild when it is installed, else kept when
//          it was made from the lib/ at hand (the packed tarball carries
//          one), else none
//       2. the entry points dist/index.js, index.cjs, register.js,
//          register.cjs: on the bundle, else on lib/'s sources directly
//       3. the code cache for the Node running this, made after a warm-up
//          spawn through the bundle (lib/load.cjs uses it when the same V8
//          runs it later; any other V8 compiles the bundle as usual)
//   node scripts/bundle.js --pack   the prepack step: 1 and 2, and fails
//                                   without esbuild (no code cache: the
//                                   installing Node makes its own)
//   node scripts/bundle.js --no-cache   1 and 2 only
//   node scripts/bundle.js --check      exits 1 unless the bundle was made
//                                       from the lib/ at hand
//
// Builtins keep their ES module semantics: lib/'s `import { closeSync } from
// 'node:fs'` is a binding to node:fs's ES module namespace, which holds the
// values of the moment that namespace was made (and of each
// syncBuiltinESMExports()), not what a later patch of the fs object put
// there. The ES module entry imports each builtin's namespace and the bundle
// reads its imports from them, so a program that patches a builtin sees
// spawnpool behave as the ES modules would. Loaded by require() before any
// import, the bundle reads the builtins' module objects instead (their
// properties as they are at each call): see docs/install.md.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const lib = join(root, 'lib');
const dist = join(root, 'dist');
const bundleFile = join(dist, 'spawnpool.cjs');
const require = createRequire(import.meta.url);
const args = new Set(process.argv.slice(2));
const say = (line) => console.log(`spawnpool: ${line}`);
const rel = (p) => relative(process.cwd(), p) || '.';

class BundleError extends Error {}

/** A hash of every file under lib/: the bundle says which sources it was made from. */
function sourcesHash() {
  const hash = createHash('sha256');
  for (const name of readdirSync(lib).sort()) {
    hash.update(`${name}\0`).update(readFileSync(join(lib, name))).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

const HEADER = (hash) => `// spawnpool bundle of lib/ ${hash}: made by scripts/bundle.js, do not edit\n`;

function bundleIsCurrent(hash) {
  try {
    return readFileSync(bundleFile, 'utf8').startsWith(HEADER(hash));
  } catch {
    return false;
  }
}

function loadEsbuild() {
  try {
    return require('esbuild');
  } catch {
    return null;
  }
}

/** esbuild plugin: lib/ imports only its own files and builtins (as node:…); anything else is refused. */
const onlyBuiltins = {
  name: 'only-builtins',
  setup(build) {
    build.onResolve({ filter: /^node:/ }, ({ path }) => ({ path, external: true }));
    build.onResolve({ filter: /^[^./]/ }, ({ path }) => {
      throw new BundleError(`lib/ imports ${JSON.stringify(path)}: builtins are imported as node:…, and nothing else is`);
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
    banner: { js: `${HEADER(hash)}'use strict';\nconst __spawnpool_url = require('node:url').pathToFileURL(__filename).href;` },
  });
  if (result.errors.length > 0) throw new BundleError(result.errors.map((e) => e.text).join('; '));
  mkdirSync(dist, { recursive: true });
  const tmp = `${bundleFile}.${process.pid}.tmp`;
  writeFileSync(tmp, result.outputFiles[0].text);
  renameSync(tmp, bundleFile);
}

/** The builtins the bundle imports (esbuild turns each import into one `require("node:…")`). */
function bundleBuiltins() {
  const text = readFileSync(bundleFile, 'utf8');
  return [...new Set(Array.from(text.matchAll(/\brequire\("(node:[^"]+)"\)/g), (m) => m[1]))].sort();
}

/** The public names of lib/index.js, in its order: the ES module entry exports exactly these. */
async function publicNames() {
  const names = Object.keys(await import(pathToFileURL(join(lib, 'index.js')).href));
  return names.filter((n) => n !== 'default');
}

function writeEntries(bundled, names) {
  const banner = '// Made by scripts/bundle.js (npm install, npm pack): do not edit.\n';
  const builtins = bundled ? bundleBuiltins() : [];
  const entries = bundled ? {
    'index.js': `${banner}// spawnpool's ES module entry: the bundle, loaded by lib/load.cjs with the
// ES module namespaces of the builtins it imports.
import { createRequire } from 'node:module';
${builtins.map((id, i) => `import * as builtin${i} from '${id}';`).join('\n')}

// Deno gates require() of a file behind --allow-read (an import is not
// gated): there the entry imports lib/'s modules, as without a bundle.
const api = globalThis.Deno === undefined
  ? createRequire(import.meta.url)('../lib/load.cjs').load({
    ${builtins.map((id, i) => `'${id}': builtin${i},`).join('\n    ')}
  }).api
  : await import('../lib/index.js');
export const {
  ${names.join(',\n  ')},
} = api;
export default api.default;
`,
    'index.cjs': `${banner}// spawnpool's CommonJS entry: the bundle, loaded by lib/load.cjs (one instance with the ES module entry's).
'use strict';
module.exports = require('../lib/load.cjs').load().api;
`,
    'register.js': `${banner}// spawnpool/register under --import (docs/register.md).
import { createRequire } from 'node:module';
import './index.js';

if (globalThis.Deno === undefined) {
  createRequire(import.meta.url)('./register.cjs');
} else {
  // Deno: lib/'s modules, as dist/index.js loads them there.
  const [{ spawn, exec, execFile }, { install }] = await Promise.all([import('../lib/index.js'), import('../lib/hook.js')]);
  install({ spawn, exec, execFile });
}
`,
    'register.cjs': `${banner}// spawnpool/register under --require (docs/register.md).
'use strict';
const { api, install } = require('../lib/load.cjs').load();
install({ spawn: api.spawn, exec: api.exec, execFile: api.execFile });
`,
  } : {
    'index.js': `${banner}// No bundle (esbuild was not installed): the sources.
export * from '../lib/index.js';
export { default } from '../lib/index.js';
`,
    'index.cjs': `${banner}// No bundle (esbuild was not installed): the sources, through require(esm).
'use strict';
module.exports = require('../lib/index.js');
`,
    'register.js': `${banner}// spawnpool/register under --import, without a bundle: lib/'s modules.
import { spawn, exec, execFile } from '../lib/index.js';
import { install } from '../lib/hook.js';

install({ spawn, exec, execFile });
`,
    'register.cjs': `${banner}// spawnpool/register under --require, without a bundle: lib/'s ES modules
// through require(esm), which Node has without a flag from 20.19 and 22.12
// on (process.features.require_module). Older Nodes cannot load an ES
// module synchronously, and the hook must be in place before the
// application's first line: there it warns and leaves node:child_process as
// it is (use --import instead, Node >= 20.6 / 18.19).
'use strict';

try {
  require('./register.js');
} catch (err) {
  if (err?.code !== 'ERR_REQUIRE_ESM') throw err;
  process.emitWarning(
    \`spawnpool/register: this Node (\${process.version}) cannot require() an ES module; \` +
      'use --import spawnpool/register (or Node >= 20.19 / 22.12): node:child_process is left unchanged',
    { code: 'SPAWNPOOL_REGISTER_UNSUPPORTED' },
  );
}
`,
  };
  mkdirSync(dist, { recursive: true });
  for (const [name, text] of Object.entries(entries)) writeFileSync(join(dist, name), text);
}

/** Code caches of other V8s are left alone (another Node may share this install); this one's is remade. */
function makeCodeCache() {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--cache-child'], {
    cwd: root, encoding: 'utf8', timeout: 30_000, env: { ...process.env, SPAWNPOOL_SERVERS: '1' },
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
  const tmp = `${load.cacheFile}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, load.cacheFile);
  console.log(`code cache for V8 ${process.versions.v8}: ${rel(load.cacheFile)} (${Math.round(data.length / 1024)} KiB)`);
}

async function main() {
  const pack = args.has('--pack');
  const hash = sourcesHash();
  const esbuild = loadEsbuild();
  let bundled = false;
  if (esbuild !== null) {
    await makeBundle(esbuild, hash);
    say(`bundled lib/ into ${rel(bundleFile)}`);
    bundled = true;
  } else if (pack) {
    throw new BundleError('esbuild is not installed (npm install first): the tarball must carry the bundle');
  } else if (bundleIsCurrent(hash)) {
    bundled = true;
  } else {
    rmSync(bundleFile, { force: true });
    say('no bundle (esbuild is not installed): spawnpool loads from lib/');
  }
  writeEntries(bundled, await publicNames());
  if (bundled && !pack && !args.has('--no-cache')) {
    try {
      makeCodeCache();
    } catch (err) {
      if (!(err instanceof BundleError)) throw err;
      say(err.message);
    }
  }
}

if (args.has('--cache-child')) {
  await cacheChild();
} else if (args.has('--check')) {
  const current = bundleIsCurrent(sourcesHash());
  say(current ? `${rel(bundleFile)} is lib/ as it is` : `${rel(bundleFile)} is missing or older than lib/: node scripts/bundle.js`);
  process.exitCode = current ? 0 : 1;
} else {
  try {
    await main();
  } catch (err) {
    console.error(`spawnpool: ${err instanceof BundleError ? err.message : err.stack}`);
    if (args.has('--pack')) process.exitCode = 1;
    // The install step never fails: without a bundle the entries load lib/.
    else writeEntries(false, await publicNames());
  }
}
