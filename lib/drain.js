// Graceful shutdown: on a signal, stop taking spawns, let running children
// finish (or kill them after a timeout), then end as the signal would have.
import { constants } from 'node:os';
import { invalidArgValue, invalidArgType } from './errors.js';
import { debug } from './observe.js';

/**
 * Installs a `signal` listener (default SIGTERM) that closes `pool` with
 * `{ timeout }` and then re-raises the signal, so the process ends as it
 * would have without spawnpool, unless another listener for that signal
 * remains (then the application owns the shutdown and the process is left
 * alone). Returns a function that removes the listener.
 */
export function drainOnSignal(pool, signal = 'SIGTERM', { timeout } = {}) {
  if (typeof signal !== 'string') throw invalidArgType('signal', 'string', signal);
  if (!(signal in constants.signals) || signal === 'SIGKILL' || signal === 'SIGSTOP') {
    throw invalidArgValue('signal', signal, 'must be a signal a process can catch');
  }
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 0)) {
    throw invalidArgValue('options.timeout', timeout, 'must be a non-negative integer (ms)');
  }
  const onSignal = () => {
    process.removeListener(signal, onSignal);
    debug('%s: draining the pool (timeout %s ms)', signal, timeout ?? 'none');
    pool.close({ timeout }).then(() => {
      debug('%s: pool drained', signal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  };
  process.on(signal, onSignal);
  return () => process.removeListener(signal, onSignal);
}
