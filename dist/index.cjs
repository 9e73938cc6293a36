// spawnpool's CommonJS entry: the ES module entry through require(esm), so
// that require() and import give one instance with the same view of the
// builtins. A Node that cannot require() an ES module (before 20.19 and
// 22.12) gets the bundle directly, reading the builtins' module objects.
'use strict';

try {
  module.exports = require('./index.js');
} catch (err) {
  if (err?.code !== 'ERR_REQUIRE_ESM') throw err;
  module.exports = require('../lib/load.cjs').load().api;
}
