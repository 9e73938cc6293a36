// What spawnpool/register did to this process: which functions
// node:child_process hands out, whether spawns reach the pool, whether Node's
// originals stay in use where they must. Run under several flag sets by
// register.test.js, which asserts on the facts reported.
import cpDefault, * as cpNamespace from 'node:child_process';
import { spawn as namedSpawn, exec as namedExec, execFile as namedExecFile } from 'child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { promisify } from 'node:util';
import * as spawnpool from 'spawnpool';
import { nodeChildProcess } from '../../../lib/node-child-process.js';
import { run } from './harness.js';

const require = createRequire(import.meta.url);
const required = require('child_process');
const crossSpawn = require('cross-spawn'); // a CommonJS library in node_modules

async function output(child) {
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (c) => { text += c; });
  const [code] = await new Promise((resolve) => child.on('close', (...args) => resolve(args)));
  return { text, code };
}

run({
  'who serves node:child_process': async () => {
    const ours = (name) => [cpDefault[name], cpNamespace[name], required[name]].every((f) => f === spawnpool[name]);
    const nodes = (name) => [cpDefault[name], cpNamespace[name], required[name]].every((f) => f === nodeChildProcess[name]);
    return {
      registered: spawnpool.stats().registered,
      spawnpool: { spawn: ours('spawn'), exec: ours('exec'), execFile: ours('execFile') },
      named: [namedSpawn === spawnpool.spawn, namedExec === spawnpool.exec, namedExecFile === spawnpool.execFile],
      node: {
        spawn: nodes('spawn'),
        fork: nodes('fork'),
        spawnSync: nodes('spawnSync'),
        execSync: nodes('execSync'),
        execFileSync: nodes('execFileSync'),
        ChildProcess: nodes('ChildProcess'),
      },
    };
  },

  'spawns: one served, servers started with Node\'s spawn': async () => {
    const before = spawnpool.stats();
    const result = await output(cpDefault.spawn('echo', ['served']));
    const after = spawnpool.stats();
    return {
      result,
      served: after.spawned - before.spawned,
      fallbacks: after.fallbacks - before.fallbacks,
      servers: after.servers.length > 0,
    };
  },

  'promisified exec and execFile': async () => {
    const a = await promisify(cpDefault.exec)('echo a');
    const b = await promisify(required.execFile)('echo', ['b']);
    return [a, b];
  },

  'unservable stdio goes to Node, once': async () => {
    const before = spawnpool.stats();
    const child = cpDefault.spawn(process.execPath, ['-e', 'process.send("ipc ok")'], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] });
    const [message] = await once(child, 'message');
    await once(child, 'close');
    const after = spawnpool.stats();
    return { message, fallbacks: after.fallbacks - before.fallbacks, served: after.spawned - before.spawned };
  },

  'a CommonJS library in node_modules': async () => {
    const before = spawnpool.stats().spawned;
    const result = await output(crossSpawn('echo', ['cross']));
    return { result, served: spawnpool.stats().spawned - before };
  },

  // A child Node started by this one: the hook reaches it through NODE_OPTIONS.
  'a child node process': async () => {
    const script = `
      import('${new URL('../../../dist/index.js', import.meta.url).href}').then(async ({ stats }) => {
        const { execFile } = await import('node:child_process');
        execFile('echo', ['nested'], (err, stdout) => {
          const s = stats();
          console.log(JSON.stringify({ stdout, registered: s.registered, spawned: s.spawned }));
        });
      });`;
    const child = cpDefault.spawn(process.execPath, ['-e', script]);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c) => { stderr += c; });
    const { text, code } = await output(child);
    return { code, stderr, child: text ? JSON.parse(text) : null };
  },
});
