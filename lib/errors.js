// Node-shaped errors, in one place. Codes and messages follow Node's
// lib/internal/errors.js so that code written against node:child_process
// (which matches on `code`, and sometimes on `message`) sees no difference.
import { inspect, format, getSystemErrorName } from 'node:util';

const classRe = /^[A-Z][a-zA-Z0-9]*$/;
// Node accepts 'Function' and 'Object' as spellings of the primitive types.
const kTypes = ['string', 'function', 'number', 'object', 'Function', 'Object', 'boolean', 'bigint', 'symbol'];

const nodeErrorClasses = new Map();

// Node's NodeError classes: `constructor` reads as the base class and
// toString() shows the code, e.g. "TypeError [ERR_X]: message".
function nodeErrorClass(Base, code) {
  const key = `${Base.name} ${code}`;
  let NodeError = nodeErrorClasses.get(key);
  if (!NodeError) {
    NodeError = class NodeError extends Base {
      get ['constructor']() { return Base; }
      toString() { return `${this.name} [${code}]: ${this.message}`; }
    };
    nodeErrorClasses.set(key, NodeError);
  }
  return NodeError;
}

/**
 * Node builds errors whose message is a format string with the message first
 * (own keys stack, message, code) and those with a message function with the
 * code first (stack, code, message); `codeFirst` picks the latter.
 */
function nodeError(Base, code, message, { codeFirst = false, cause } = {}) {
  const NodeError = nodeErrorClass(Base, code);
  const err = codeFirst ? new NodeError() : new NodeError(message, cause === undefined ? undefined : { cause });
  err.code = code;
  if (codeFirst) {
    Object.defineProperty(err, 'message', { value: message, enumerable: false, writable: true, configurable: true });
  }
  // V8 formats the stack on first access: show the code in its header as
  // Node's prepareStackTrace does for its own errors.
  err.name = `${Base.name} [${code}]`;
  void err.stack;
  delete err.name;
  return err;
}

// Port of Node's determineSpecificType (lib/internal/errors.js, same in 20-24).
function describeReceived(value) {
  if (value === null || value === undefined) return ` Received ${value}`;
  switch (typeof value) {
    case 'bigint': return ` Received type bigint (${value}n)`;
    case 'number': return ` Received type number (${Object.is(value, -0) ? '-0' : value})`;
    case 'boolean': return ` Received type boolean (${value})`;
    case 'symbol': return ` Received type symbol (${String(value)})`;
    case 'function': return ` Received function ${value.name}`;
    case 'object':
      if (value.constructor && 'name' in value.constructor) return ` Received an instance of ${value.constructor.name}`;
      return ` Received ${inspect(value, { depth: -1 })}`;
    case 'string': {
      const shown = value.length > 28 ? `${value.slice(0, 25)}...` : value;
      return ` Received type string (${shown.includes("'") ? JSON.stringify(shown) : `'${shown}'`})`;
    }
    default: {
      let shown = inspect(value, { colors: false });
      if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
      return ` Received type ${typeof value} (${shown})`;
    }
  }
}

function formatList(list, joiner = 'or') {
  if (list.length < 3) return list.join(` ${joiner} `);
  return `${list.slice(0, -1).join(', ')}, ${joiner} ${list[list.length - 1]}`;
}

/** ERR_INVALID_ARG_TYPE, with Node's wording for types, classes and instances. */
export function invalidArgType(name, expected, actual) {
  expected = Array.isArray(expected) ? expected : [expected];
  let msg = 'The ';
  if (name.endsWith(' argument')) msg += `${name} `;
  else msg += `"${name}" ${name.includes('.') ? 'property' : 'argument'} `;
  msg += 'must be ';
  const types = [];
  const instances = [];
  const other = [];
  for (const value of expected) {
    if (kTypes.includes(value)) {
      types.push(value.toLowerCase());
    } else if (classRe.test(value)) {
      instances.push(value);
    } else {
      other.push(value);
    }
  }
  if (instances.length > 0 && types.includes('object')) {
    types.splice(types.indexOf('object'), 1);
    instances.push('Object');
  }
  if (types.length > 0) {
    msg += `${types.length > 1 ? 'one of type' : 'of type'} ${formatList(types)}`;
    if (instances.length > 0 || other.length > 0) msg += ' or ';
  }
  if (instances.length > 0) {
    msg += `an instance of ${formatList(instances)}`;
    if (other.length > 0) msg += ' or ';
  }
  if (other.length > 0) {
    if (other.length > 1) msg += `one of ${formatList(other)}`;
    else msg += other[0].toLowerCase() !== other[0] ? `an ${other[0]}` : `${other[0]}`;
  }
  msg += `.${describeReceived(actual)}`;
  return nodeError(TypeError, 'ERR_INVALID_ARG_TYPE', msg, { codeFirst: true });
}

/** ERR_INVALID_ARG_VALUE: right type, unacceptable value. */
export function invalidArgValue(name, value, reason = 'is invalid') {
  let shown = inspect(value);
  if (shown.length > 128) shown = `${shown.slice(0, 128)}...`;
  const kind = name.includes('.') ? 'property' : 'argument';
  return nodeError(TypeError, 'ERR_INVALID_ARG_VALUE', `The ${kind} '${name}' ${reason}. Received ${shown}`, { codeFirst: true });
}

/** ERR_OUT_OF_RANGE. */
export function outOfRange(name, range, value) {
  let received;
  if (Number.isInteger(value) && Math.abs(value) > 2 ** 32) received = addNumericalSeparator(String(value));
  else if (typeof value === 'bigint') {
    received = value > 2n ** 32n || value < -(2n ** 32n) ? addNumericalSeparator(String(value)) : String(value);
    received += 'n';
  }
  else received = inspect(value);
  return nodeError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be ${range}. Received ${received}`, { codeFirst: true });
}

function addNumericalSeparator(val) {
  let res = '';
  let i = val.length;
  const start = val[0] === '-' ? 1 : 0;
  for (; i >= start + 4; i -= 3) res = `_${val.slice(i - 3, i)}${res}`;
  return `${val.slice(0, i)}${res}`;
}

/** ERR_UNKNOWN_SIGNAL. */
export function unknownSignal(signal) {
  return nodeError(TypeError, 'ERR_UNKNOWN_SIGNAL', format('Unknown signal: %s', signal));
}

/** ERR_INVALID_SYNC_FORK_INPUT: stdio data entries are for the *Sync functions only. */
export function invalidSyncForkInput(value) {
  return nodeError(TypeError, 'ERR_INVALID_SYNC_FORK_INPUT',
    `Asynchronous forks do not support Buffer, TypedArray, DataView or string input: ${inspect(value)}`);
}

/** A plain Error with a code, for spawnpool's own conditions (documented in README). */
export function poolError(code, message, cause) {
  return nodeError(Error, code, message, { cause });
}

/**
 * Node's ErrnoException: `${syscall} ${CODE}` with errno negative, as libuv
 * reports it. `errno` is the positive Linux errno.
 */
export function errnoError(errno, syscall) {
  const code = getSystemErrorName(-errno);
  const err = new Error(`${syscall} ${code}`);
  err.errno = -errno;
  err.code = code;
  err.syscall = syscall;
  return err;
}

/** ERR_CHILD_PROCESS_STDIO_MAXBUFFER, for exec/execFile output over maxBuffer. */
export function maxBufferExceeded(streamName) {
  return nodeError(RangeError, 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER', `${streamName} maxBuffer length exceeded`);
}

/** Node's AbortError (code ABORT_ERR); `cause` is the signal's reason. */
export class AbortError extends Error {
  constructor(message = 'The operation was aborted', options = undefined) {
    if (options !== undefined && typeof options !== 'object') {
      throw invalidArgType('options', 'Object', options);
    }
    super(message, options);
    this.code = 'ABORT_ERR';
    this.name = 'AbortError';
  }
}

/** A plain Error with extra own properties, as Node's genericNodeError builds it. */
export function genericNodeError(message, properties) {
  return Object.assign(new Error(message), properties);
}
