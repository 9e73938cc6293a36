// A fork()ed helper for the fork-ipc and fork-advanced contenders.
// argv[2] = "buffered": execFile, reply {id, stdout} once (JSON IPC).
// argv[2] = "stream":   spawn, send {id, chunk} per stdout chunk then {id, end}
//                       (run with serialization: 'advanced', so chunks go as bytes).
import process from 'node:process';
import { execFile, spawn } from 'node:child_process';
import { CHILD_STDIO } from './common.js';

const mode = process.argv[2];

process.on('message', ({ id, file, args }) => {
  if (mode === 'buffered') {
    execFile(file, args, { encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout) => {
      process.send(err ? { id, error: String(err.code ?? err.message) } : { id, stdout });
    });
    return;
  }
  const child = spawn(file, args, { stdio: CHILD_STDIO });
  child.on('error', (err) => process.send({ id, error: String(err.code) }));
  child.stdout.on('data', (chunk) => process.send({ id, chunk }));
  child.stdout.on('end', () => process.send({ id, end: true }));
});
process.on('disconnect', () => process.exit(0));
