// spawnpool/register under Deno: package.json's "deno" export condition
// gives Deno lib/'s modules (a require() of the bundle would need
// --allow-read there), and this hook over them. See lib/register.js.
import { spawn, exec, execFile } from './index.js';
import { install } from './hook.js';

install({ spawn, exec, execFile });
