// Reference "node-floor": the baseline server with the child replaced by
// its output from memory, one 64 KiB piece per loop turn as a pipe gives
// it. What node:http and the pipe into the response cost alone, so that
// the CPU budget shows which part of a Node contender's main thread is
// spawning. No process is started.
import http from 'node:http';
import process from 'node:process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { listen, spawnHandler } from './common.js';

const PIECE = 64 * 1024;
const outputs = new Map();

/** What the program would print (echo and cat are all the routes run). */
function outputOf(file, args) {
  const key = `${file}\0${args.join('\0')}`;
  let out = outputs.get(key);
  if (out === undefined) {
    if (file === 'echo') out = Buffer.from(`${args.join(' ')}\n`);
    else if (file === 'cat') out = readFileSync(args[0]);
    else throw new Error(`node-floor: no output known for ${file}`);
    outputs.set(key, out);
  }
  return out;
}

function fakeSpawn(file, args) {
  const child = new EventEmitter();
  const out = outputOf(file, args);
  let at = 0;
  child.stdout = new Readable({ read() {} });
  const next = () => {
    child.stdout.push(out.subarray(at, at + PIECE));
    at += PIECE;
    if (at < out.length) setImmediate(next);
    else child.stdout.push(null);
  };
  setImmediate(next);
  return child;
}

process.title = 'node-floor';
listen(http.createServer(spawnHandler(fakeSpawn)));
