// spawnpool's ES module entry: lib/ bundled into one script
// (dist/spawnpool.cjs, made at install and at npm pack by scripts/bundle.js),
// loaded by lib/load.cjs with the ES module namespaces of the builtins it
// imports, so that they read as lib/'s ES modules would; lib/'s modules
// themselves where there is no bundle. docs/install.md, "The bundle and its
// code cache". `node scripts/bundle.js --check` checks that this list of
// builtins is the bundle's.
import { createRequire } from 'node:module';
import * as asyncHooks from 'node:async_hooks';
import * as buffer from 'node:buffer';
import * as childProcess from 'node:child_process';
import * as cluster from 'node:cluster';
import * as diagnosticsChannel from 'node:diagnostics_channel';
import * as events from 'node:events';
import * as fs from 'node:fs';
import * as nodeModule from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as stream from 'node:stream';
import * as url from 'node:url';
import * as util from 'node:util';
import * as workerThreads from 'node:worker_threads';

const { api } = createRequire(import.meta.url)('../lib/load.cjs').load({
  'node:async_hooks': asyncHooks,
  'node:buffer': buffer,
  'node:child_process': childProcess,
  'node:cluster': cluster,
  'node:diagnostics_channel': diagnosticsChannel,
  'node:events': events,
  'node:fs': fs,
  'node:module': nodeModule,
  'node:net': net,
  'node:os': os,
  'node:path': path,
  'node:stream': stream,
  'node:url': url,
  'node:util': util,
  'node:worker_threads': workerThreads,
});

export const {
  ChildProcess,
  _forkChild,
  close,
  configure,
  createPool,
  drainOnSignal,
  exec,
  execFile,
  execFileSync,
  execSync,
  fork,
  ready,
  spawn,
  spawnSync,
  stats,
} = api;
export default api.default;
