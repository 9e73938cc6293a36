// Node's delivery model for events that arrive together in one socket read.
//
// Under node:child_process every pipe read, every EOF, the exit and every
// handle close is its own libuv callback, and after each one Node runs the
// nextTick queue and the microtasks (InternalCallbackScope::Close). Code
// depends on that: `await once(child, 'spawn')` must resume before 'exit'
// is emitted; a consumer attached in a promise reaction after one stream's
// 'end' must see the other stream's data. A server's frames arrive in one
// read, so each frame is delivered as one such callback: run it, then
// settle ticks and microtasks exactly as Node would before the next one.
//
// Handle closes ('close' of the stdio streams) run in libuv's close phase,
// after the check phase, in LIFO order of their uv_close() calls
// (uv__make_close_pending pushes on a list's head): destroying stdout then
// stdin gives stdin's 'close' first. closePhase() reproduces that order.

import { addon } from './launch.js';

// process._tickCallback is Node's runNextTicks(): microtasks, then ticks and
// rejections, as after any callback. Bun and Deno lack it; there each
// frame is delivered back to back, as before.
//
// A next-tick callback that throws is an uncaught exception, handled (by
// 'uncaughtException') before anything else runs, as when Node runs the
// ticks after a callback of its own. Thrown on from here, it would reach
// the launch addon's callback scope first, whose close finds the throwing
// tick's async id still on the stack and aborts the process; the addon
// hands it to Node's handling at once instead. The ticks after it run
// after the next callback, as under Node.
const uncaught = typeof addon?.uncaught === 'function' ? addon.uncaught : null;
const settle = typeof process._tickCallback !== 'function'
  ? () => {}
  : uncaught === null
    ? () => process._tickCallback()
    : () => {
      try {
        process._tickCallback();
      } catch (err) {
        uncaught(err);
      }
    };

let depth = 0;

/**
 * Runs `fn` as Node runs one libuv callback, then settles ticks and
 * microtasks. Nested calls (from a listener that caused another
 * delivery) settle only at the outermost level, as Node does.
 */
export function asCallback(fn, ...args) {
  depth++;
  try {
    fn(...args);
  } finally {
    depth--;
  }
  if (depth === 0) settle();
}

let closing = [];
let closeScheduled = false;

// Whether this runs in the check phase, from a callback of ours (the close
// phase we emulate, frames delivered late). A close asked for there is due
// in Node before the next poll phase (libuv's close phase of this
// iteration, or of the next one with a poll that does not wait), but our
// setImmediate runs after it, behind whatever that poll reads: a server's
// frames then go first. Such closes are overdue at the next read.
let inCheck = false;
let overdue = false;

/** Wraps `fn` for setImmediate: closes it asks for are due before the next poll. */
export function checkPhase(fn) {
  return () => {
    const was = inCheck;
    inCheck = true;
    try {
      fn();
    } finally {
      inCheck = was;
    }
  };
}

/**
 * Called before a server's read is delivered (poll phase): runs the closes
 * asked for in the check phase before it, where Node would have run them.
 */
export function closeOverdue() {
  if (overdue) runClosePhase();
}

const runClosePhaseInCheck = checkPhase(runClosePhase);

// libuv's own close phase, through the addon (an idle handle closed for
// the purpose): after every setImmediate of the iteration, as Node's pipe
// handles close. Without it (no addon, a worker thread, Bun, Deno) a
// setImmediate stands in, queued before any a listener adds afterwards.
const nativeClosePhase = typeof addon?.onClosePhase === 'function' && addon.onClosePhase(runClosePhase) === 1;

function scheduleClosePhase() {
  closeScheduled = true;
  if (!nativeClosePhase || addon.closeSoon() !== 0) setImmediate(runClosePhaseInCheck);
}

// Whether the (emulated or native) close phase runs: a close asked for
// there is due in the next iteration's close phase, not overdue.
let inClose = false;

function runClosePhase() {
  closeScheduled = false;
  overdue = false;
  const batch = closing;
  closing = [];
  const was = inClose;
  inClose = true;
  try {
    // Later closes first, as libuv's closing_handles list.
    for (let i = batch.length - 1; i >= 0; i--) {
      try {
        asCallback(batch[i]);
      } catch (err) {
        // A throwing 'close' listener must not cost the others their event.
        closing = batch.slice(0, i).concat(closing);
        if (!closeScheduled) scheduleClosePhase();
        throw err;
      }
    }
  } finally {
    inClose = was;
  }
}

/** Runs `fn` in the close phase (LIFO, after pending immediates). */
export function closePhase(fn) {
  closing.push(fn);
  if (inCheck && !inClose && !nativeClosePhase) overdue = true;
  if (!closeScheduled) scheduleClosePhase();
}

// Node emits 'spawn' on the tick after spawn(), before any output of any
// child is read: children spawned together all see 'spawn' before the
// first 'data' of any of them. Code relies on it (nano-spawn's pipe() waits
// for both 'spawn's, then connects one's stdout to the other's stdin). A
// cohort is the children spawned before the next check phase; a member's
// other frames wait until every member has its spawn outcome.
let cohort = null;

const COHORT_MAX_HOLD_MS = 50;

// A member whose server is slow to answer must not hold the others' output
// for long: after COHORT_MAX_HOLD_MS what is parked goes on regardless.
function closeCohort() {
  const c = cohort;
  cohort = null;
  if (c.pending > 0) setTimeout(() => { if (c.pending > 0) release(c); }, COHORT_MAX_HOLD_MS).unref();
}

function release(c) {
  if (c.parked.length === 0) c.holding = false;
  else if (!c.flushing) {
    c.flushing = true;
    setImmediate(checkPhase(() => flushParked(c)));
  }
}

/**
 * The cohort a child spawned now belongs to; `deliver(session, msg)` hands
 * on a parked frame (pushed as session, msg onto `parked`); a frame left
 * when a listener throws waits with its session (`session.defer(msg)`).
 */
export function joinCohort(deliver) {
  if (cohort === null) {
    cohort = { pending: 0, parked: [], holding: true, flushing: false, deliver };
    setImmediate(closeCohort);
  }
  cohort.pending++;
  return cohort;
}

/** A member has its spawn outcome; the last one releases the parked frames. */
export function leaveCohort(c) {
  // Frames arriving before the flush are parked behind the others.
  if (--c.pending === 0) release(c);
}

function flushParked(c) {
  // No frame can arrive while this runs: none is parked behind these.
  c.holding = false;
  const parked = c.parked;
  c.parked = [];
  c.flushing = false;
  for (let i = 0; i < parked.length; i += 2) {
    try {
      asCallback(c.deliver, parked[i], parked[i + 1]);
    } catch (err) {
      // The rest go ahead of what their sessions receive from now on.
      for (let j = i + 2; j < parked.length; j += 2) parked[j].defer(parked[j + 1]);
      throw err;
    }
  }
}
