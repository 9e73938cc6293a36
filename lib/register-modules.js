// spawnpool/register over lib/'s modules, without the bundle: what Deno
// loads (package.json's "deno" condition: a require() of the bundle would
// need --allow-read there), and the hook of an install that has no bundle.
// See lib/register.js.
import { spawn, exec, execFile } from './index.js';
import { install } from './hook.js';

install({ spawn, exec, execFile });
