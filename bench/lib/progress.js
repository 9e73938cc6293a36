// The live progress line on stderr: rewritten in place (\r) on a TTY, one
// plain line per change otherwise (CI logs, pipes).

/** Create a progress reporter writing to `stream`. */
export function createProgress(stream = process.stderr, { tty = Boolean(stream.isTTY) } = {}) {
  const t0 = performance.now();
  let text = '';
  let timer = null;
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)}s`;
  const render = () => {
    const cols = stream.columns || 100;
    const line = `[${elapsed()}] ${text}`;
    stream.write(`\r\x1b[2K${line.length > cols - 1 ? `${line.slice(0, cols - 2)}…` : line}`);
  };
  if (tty) {
    timer = setInterval(render, 250);
    timer.unref();
  }
  return {
    /** Replace the live line. */
    status(next) {
      if (next === text) return;
      text = next;
      if (tty) render();
      else stream.write(`[${elapsed()}] ${text}\n`);
    },
    /** Print a line that stays (a note, a warning). */
    log(line) {
      if (tty) stream.write(`\r\x1b[2K${line}\n`);
      else stream.write(`${line}\n`);
      if (tty && text) render();
    },
    /** Clear the live line and stop updating it. */
    done() {
      if (timer) clearInterval(timer);
      if (tty) stream.write('\r\x1b[2K');
      text = '';
    },
  };
}
