// `node --require spawnpool/register app.js`, by path: the package's hook,
// dist/register.cjs (see lib/register.js).
'use strict';

require('../dist/register.cjs');
