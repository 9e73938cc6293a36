// `node --import spawnpool/register app.js`: every node:child_process user in
// the process (libraries included) spawns through spawnpool's default pool.
// The pool starts at the first spawn, so a process that never spawns pays
// only for loading this module. See docs/register.md.
//
// The hook is the package's: dist/register.js (scripts/bundle.js makes it),
// which installs the default pool of the instance `import 'spawnpool'`
// gives. This path (the one docs/register.md gave for NODE_OPTIONS) leads
// there too, so that the hook and the application share one pool.
import '../dist/register.js';
