// What a child inherits from its parent that a spawn server took once, at
// its own start: the file mode creation mask, the credentials and the
// nice value. Node's child gets them as they are at spawn(); a server's
// children get the server's. Node programs change the first two through
// process.umask(mask), process.setuid() and its siblings (a server started
// as root drops its privileges once it has bound its port): those are
// wrapped here, so that a change after the pool started costs nothing per
// spawn until it happens. The nice value is read at each spawn (one
// getpriority(2), a tenth of a microsecond), so that os.setPriority()
// however imported, and a renice from outside, are seen too. The first
// spawn after a change renews the pool (Pool.renew): new servers, started
// then, inherit the process as it is.
import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';

const SETTERS = ['umask', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups'];

let changes = 0;      // calls of the wrapped setters so far
let mask = null;      // the umask as last set through process.umask(mask); null: not since load
let installed = false;

/** Wraps the process's setters of inherited state (once; where they exist). */
function install() {
  installed = true;
  for (const name of SETTERS) {
    const original = process[name];
    if (typeof original !== 'function') continue;
    const wrapped = {
      [name](...args) {
        const result = Reflect.apply(original, process, args);
        if (name === 'umask') {
          // Node takes a number or an octal string (it threw above if neither).
          if (args[0] !== undefined) {
            mask = (typeof args[0] === 'string' ? Number.parseInt(args[0], 8) : args[0]) & 0o777;
            changes++;
          }
        } else {
          changes++;
        }
        return result;
      },
    }[name];
    Object.defineProperty(wrapped, 'length', { value: original.length });
    process[name] = wrapped;
  }
}

// The calling thread's nice value, which a child spawned from it inherits.
// Unreadable (Deno without --allow-sys) counts as unchanged, and is not
// tried again: a throw per spawn would cost more than the read.
let priorityReadable = true;
function priority() {
  if (!priorityReadable) return undefined;
  try {
    return getPriority();
  } catch {
    priorityReadable = false;
    return undefined;
  }
}

// The umask without changing it, even for a moment (process.umask() with no
// argument sets it to 0 and back: a file another thread creates meanwhile
// gets mode 0666): /proc/self/status has it since Linux 4.7.
function readMask() {
  try {
    const line = /^Umask:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/status', 'latin1'));
    return line === null ? null : Number.parseInt(line[1], 8);
  } catch {
    return null;
  }
}

function credentials() {
  // Deno asks for --allow-sys=gid and getegid for some of these: unreadable
  // ones count as unchanged.
  const read = (name) => {
    try {
      return typeof process[name] === 'function' ? process[name]() : undefined;
    } catch {
      return undefined;
    }
  };
  return `${read('getuid')} ${read('geteuid')} ${read('getgid')} ${read('getegid')} ${read('getgroups')?.join(',')}`;
}

/**
 * What the servers a pool starts now inherit. Call before starting them;
 * `inheritedChanged(state)` then says whether a spawn would differ.
 */
export function inheritedState() {
  if (!installed) install();
  return { changes, mask: mask ?? readMask(), credentials: credentials(), priority: priority() };
}

/**
 * Whether the process's umask, credentials or nice value differ from
 * `state`'s (taken by inheritedState() when the pool started). One
 * getpriority(2) while none of the setters was called; a change that was
 * undone counts as none.
 */
export function inheritedChanged(state) {
  if (priority() !== state.priority) return true;
  if (state.changes === changes) return false;
  // An unreadable mask at the start: any mask set since counts as a change.
  const same = credentials() === state.credentials && (mask === null || mask === state.mask);
  if (same) state.changes = changes;
  return !same;
}
