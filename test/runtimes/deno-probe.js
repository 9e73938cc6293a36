// Run by deno-permissions.js under Deno with various permission flags:
// spawns one program through spawnpool and prints what happened as JSON.
import { spawn, stats } from '../../lib/index.js'; // the package's "deno" export condition

const program = Deno.args[0] ?? 'echo';
const warnings = [];
process.on('warning', (w) => warnings.push({ code: w.code, message: w.message }));
const report = (extra) => {
  // stats() must work whatever the permissions (no NotCapable).
  const served = stats().spawned;
  // Warnings are emitted on a later tick.
  setTimeout(() => console.log(JSON.stringify({ ...extra, served, warnings })), 10);
};
try {
  const child = spawn(program, ['hi']);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.on('error', (err) => report({ error: { name: err.name, code: err.code, message: err.message } }));
  child.on('close', (code) => report({ code, out }));
} catch (err) {
  report({ threw: { name: err.name, code: err.code, message: err.message } });
}
