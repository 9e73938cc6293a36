// `node --require spawnpool/register app.js`, by path: the package's hook,
// dist/register.cjs (see lib/register.js); lib/'s modules where dist/ was
// never made (a checkout before `npm install`).
'use strict';

const { existsSync } = require('node:fs');
const { join } = require('node:path');

const hook = join(__dirname, '..', 'dist', 'register.cjs');
require(existsSync(hook) ? hook : './register-modules.cjs');
