// `node --import spawnpool/register app.js`: every node:child_process user in
// the process (libraries included) spawns through spawnpool's default pool.
// The pool starts at the first spawn, so a process that never spawns pays
// only for loading this module. See docs/register.md.
import { spawn, exec, execFile } from './index.js';
import { install } from './hook.js';

install({ spawn, exec, execFile });
