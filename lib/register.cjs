// `node --require spawnpool/register app.js`: the CommonJS entry of the hook.
// Like lib/register.js, it leads to the package's own: dist/register.cjs.
'use strict';

require('../dist/register.cjs');
