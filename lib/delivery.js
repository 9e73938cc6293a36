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

// process._tickCallback is Node's runNextTicks(): microtasks, then ticks and
// rejections, as after any callback. Bun and Deno lack it; there each
// frame is delivered back to back, as before.
const settle = typeof process._tickCallback === 'function' ? () => process._tickCallback() : () => {};

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

function runClosePhase() {
  closeScheduled = false;
  const batch = closing;
  closing = [];
  // Later closes first, as libuv's closing_handles list.
  for (let i = batch.length - 1; i >= 0; i--) {
    try {
      asCallback(batch[i]);
    } catch (err) {
      // A throwing 'close' listener must not cost the others their event.
      closing = batch.slice(0, i).concat(closing);
      if (!closeScheduled) {
        closeScheduled = true;
        setImmediate(runClosePhase);
      }
      throw err;
    }
  }
}

/** Runs `fn` in the emulated close phase (LIFO, after pending immediates). */
export function closePhase(fn) {
  closing.push(fn);
  if (!closeScheduled) {
    closeScheduled = true;
    setImmediate(runClosePhase);
  }
}
