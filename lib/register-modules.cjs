// `--require` of spawnpool/register over lib/'s modules (an install without
// the bundle): it loads them with require(esm), which Node has without a
// flag from 20.19 and 22.12 on (process.features.require_module). Older
// Nodes cannot load an ES module synchronously, and the hook must be in
// place before the application's first line: there it warns and leaves
// node:child_process as it is (use --import instead, Node >= 20.6 / 18.19).
'use strict';

try {
  require('./register-modules.js');
} catch (err) {
  if (err?.code !== 'ERR_REQUIRE_ESM') throw err;
  process.emitWarning(
    `spawnpool/register: this Node (${process.version}) cannot require() an ES module; ` +
      'use --import spawnpool/register (or Node >= 20.19 / 22.12): node:child_process is left unchanged',
    { code: 'SPAWNPOOL_REGISTER_UNSUPPORTED' },
  );
}
