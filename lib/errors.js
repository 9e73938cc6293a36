// Node-shaped errors, in one place. Codes and messages follow Node's
// lib/internal/errors.js so that code written against node:child_process
// (which matches on `code`, and sometimes on `message`) sees no difference.
import { inspect, getSystemErrorName } from 'node:util';

const classRe = /^[A-Z][a-zA-Z0-9]*$/;
// Node accepts 'Function' and 'Object' as spellings of the primitive types.
const kTypes = ['string', 'function', 'number', 'object', 'Function', 'Object', 'boolean', 'bigint', 'symbol'];

function addCode(err, code) {
  // Node's errors show the code in `name` only while the stack is captured.
  Object.defineProperty(err, 'code', { value: code, enumerable: true, writable: true, configurable: true });
  err.name = `${err.constructor.name} [${code}]`;
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
  return addCode(new TypeError(msg), 'ERR_INVALID_ARG_TYPE');
}

/** ERR_INVALID_ARG_VALUE: right type, unacceptable value. */
export function invalidArgValue(name, value, reason = 'is invalid') {
  let shown = inspect(value);
  if (shown.length > 128) shown = `${shown.slice(0, 128)}...`;
  const kind = name.includes('.') ? 'property' : 'argument';
  return addCode(new TypeError(`The ${kind} '${name}' ${reason}. Received ${shown}`), 'ERR_INVALID_ARG_VALUE');
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
  return addCode(new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${received}`), 'ERR_OUT_OF_RANGE');
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
  return addCode(new TypeError(`Unknown signal: ${signal}`), 'ERR_UNKNOWN_SIGNAL');
}

/** A plain Error with a code, for spawnpool's own conditions (documented in README). */
export function poolError(code, message, cause) {
  const err = new Error(message, cause === undefined ? undefined : { cause });
  return addCode(err, code);
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
  return addCode(new RangeError(`${streamName} maxBuffer length exceeded`), 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
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
