// What a child inherits from its parent that a spawn server took once, at
// its own start: the file mode creation mask, the credentials and the
// nice value. Node's child gets them as they are at spawn(); a server's
// children get the server's. Node programs change them through
// process.umask(mask), process.setuid() and its siblings (a server started
// as root drops its privileges once it has bound its port) and
// os.setPriority(): those are wrapped here, so that a change after the pool
// started costs nothing per spawn until it happens, and the first spawn
// after it finds out and renews the pool (Pool.renew): new servers,
// started then, inherit the process as it is.
import { readFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

// node:os itself, whose functions can be replaced (an import's cannot).
const os = createRequire('/')('node:os');

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
  wrapSetPriority();
}

// os.setPriority(prio) and os.setPriority(pid, prio) for this process set
// the calling thread's nice value (setpriority(2) on Linux), which a child
// spawned from it inherits. The wrapper counts every call: which pid a
// call named is not worth a check, the comparison below is cheap.
function wrapSetPriority() {
  const original = os.setPriority;
  if (typeof original !== 'function') return;
  const wrapped = {
    setPriority(...args) {
      const result = Reflect.apply(original, os, args);
      changes++;
      return result;
    },
  }.setPriority;
  Object.defineProperty(wrapped, 'length', { value: original.length });
  os.setPriority = wrapped;
  // `import { setPriority } from 'node:os'` sees the wrapper too.
  try {
    syncBuiltinESMExports();
  } catch { /* not in every runtime */ }
}

function priority() {
  try {
    return os.getPriority();
  } catch {
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
 * Whether the process's umask, credentials or nice value differ from `state`'s (taken
 * by inheritedState() when the pool started). Free while none of the
 * setters was called; a change that was undone counts as none.
 */
export function inheritedChanged(state) {
  if (state.changes === changes) return false;
  // An unreadable mask at the start: any mask set since counts as a change.
  const same = credentials() === state.credentials && (mask === null || mask === state.mask) && priority() === state.priority;
  if (same) state.changes = changes;
  return !same;
}
