// spawnpool/register under --require (docs/register.md): node:child_process's
// spawn, exec and execFile become those of the instance dist/index.cjs gives.
// A Node that can load neither the bundle nor lib/'s ES modules (no bundle,
// and no require(esm): before 20.19 and 22.12) warns and leaves
// node:child_process as it is: the hook must be in place before the
// application's first line, so it cannot wait for an import.
'use strict';

let loaded = null;
try {
  require('./index.cjs');
  loaded = require('../lib/load.cjs').load();
} catch (err) {
  if (err?.code !== 'ERR_REQUIRE_ESM') throw err;
  process.emitWarning(
    `spawnpool/register: this Node (${process.version}) cannot require() an ES module, and spawnpool has no bundle ` +
      '(npm rebuild spawnpool where its esbuild is installed, or use Node >= 20.19 / 22.12): node:child_process is left unchanged',
    { code: 'SPAWNPOOL_REGISTER_UNSUPPORTED' },
  );
}
if (loaded !== null) loaded.install({ spawn: loaded.api.spawn, exec: loaded.api.exec, execFile: loaded.api.execFile });
