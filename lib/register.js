// `node --import spawnpool/register app.js`: every node:child_process user in
// the process (libraries included) spawns through spawnpool's default pool.
// The pool starts at the first spawn, so a process that never spawns pays
// only for loading this module. See docs/register.md.
//
// The package's hook is dist/register.js, which
// installs the default pool of the instance `import 'spawnpool'` gives. This
// path, the one docs/register.md gave for NODE_OPTIONS, leads to the same
// hook (through lib/register.cjs: synchronously, so that no top-level await
// keeps this module from being require()d), and so to the same pool.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('./register.cjs');
