// Load generators. Each run() sends exactly `requests` GETs over
// `connections` keep-alive connections and resolves to one shape:
//   { rps, p50, p99 (ms), requests, seconds, errors, non2xx, bodyErrors, firstError, verified }
// `verified` says how bodies were checked: every body in full (autocannon,
// wrk) or, for bombardier (which cannot look at bodies), status + HTTP framing
// of every response and the total bytes read against the size of a correct
// response (bodies are also verified in full by the verify pass before it).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Run `file args`, collect stdout/stderr, kill it after `timeoutMs`. */
export function runCapture(file, args, { timeoutMs = 120_000, env, cwd, onStdout } = {}) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env, cwd });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => {
      stdout += d;
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-8192)));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: String(err.message), timedOut });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr, timedOut });
    });
  });
}

const oneLine = (text) => text.replace(/\s*\n\s*/g, ' | ').slice(0, 240);
const failed = (why) => ({ rps: null, p50: null, p99: null, requests: 0, seconds: 0, errors: 1, non2xx: 0, bodyErrors: 0, firstError: oneLine(why) });

/** bombardier's JSON result → the common shape, with the byte-count check. */
export function fromBombardier(json, { requests, bodyBytes, minHead }) {
  const r = json.result;
  const answered = r.req1xx + r.req2xx + r.req3xx + r.req4xx + r.req5xx;
  const out = {
    rps: answered / r.timeTakenSeconds,
    p50: r.latency.percentiles['50'] / 1000,
    p99: r.latency.percentiles['99'] / 1000,
    requests: answered,
    seconds: r.timeTakenSeconds,
    errors: r.others + Math.max(0, requests - answered - r.others),
    non2xx: answered - r.req2xx,
    bodyErrors: 0,
    bytesRead: r.bytesRead,
    firstError: null,
    verified: 'status+framing every response; total bytes',
  };
  if (out.errors) out.firstError = `${out.errors} requests failed (timeouts or connection/protocol errors)`;
  else if (out.non2xx) out.firstError = `${out.non2xx} responses were not 2xx`;
  // Every correct response carries at least the smallest head seen in the
  // verify pass plus the whole body; a short or empty body pulls the total under.
  const floor = r.req2xx * (minHead + bodyBytes);
  if (!out.errors && !out.non2xx && r.bytesRead < floor) {
    out.bodyErrors = Math.max(1, Math.floor((floor - r.bytesRead) / Math.max(1, bodyBytes)));
    out.firstError = `bytes read ${r.bytesRead} < ${floor} (${r.req2xx} × (head ${minHead} + body ${bodyBytes})): bodies short`;
  }
  return out;
}

async function bombardier(tool, { url, connections, requests, bodyBytes, minHead, timeoutMs }) {
  const args = ['-c', String(connections), '-n', String(requests), '-t', '10s', '-l', '-p', 'r', '-o', 'j', url];
  const res = await runCapture(tool.path, args, { timeoutMs });
  if (res.timedOut) return failed(`bombardier timed out after ${timeoutMs} ms`);
  let json;
  try {
    json = JSON.parse(res.stdout);
  } catch {
    return failed(`bombardier failed (${res.code}): ${(res.stderr || res.stdout).trim().slice(0, 300)}`);
  }
  return fromBombardier(json, { requests, bodyBytes, minHead });
}

// wrk has no request count: each thread stops itself after its share and
// says so; once all have, SIGINT ends wrk's sleep (it then reports the time
// actually taken). Every body is compared with the expected file in Lua.
const WRK_SCRIPT = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  limit = tonumber(args[1])
  local f = assert(io.open(args[2], "rb")); expected = f:read("*a"); f:close()
  count, bad, non2xx = 0, 0, 0
end
function response(status, headers, body)
  count = count + 1
  if status ~= 200 then non2xx = non2xx + 1 elseif body ~= expected then bad = bad + 1 end
  if count == limit then io.write("WRKDONE\\n"); io.flush(); wrk.thread:stop() end
end
function done(summary, latency, requests)
  local c, b, n = 0, 0, 0
  for _, t in ipairs(threads) do c = c + t:get("count"); b = b + t:get("bad"); n = n + t:get("non2xx") end
  local e = summary.errors
  io.write(string.format('WRKJSON {"count":%d,"bad":%d,"non2xx":%d,"us":%d,"errors":%d,"p50":%d,"p99":%d}\\n',
    c, b, n, summary.duration, e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
`;

async function wrk(tool, { url, connections, requests, expectedFile, timeoutMs, buildDir }) {
  const script = join(buildDir, 'wrk-verify.lua');
  writeFileSync(script, WRK_SCRIPT);
  const threads = Math.min(2, connections);
  const perThread = Math.ceil(requests / threads);
  const maxSec = Math.ceil(timeoutMs / 1000);
  const args = ['-t', String(threads), '-c', String(connections), '-d', `${maxSec}s`, '--timeout', '10s', '-s', script, url, '--', String(perThread), expectedFile];
  let signalled = false;
  const onStdout = (text, child) => {
    if (!signalled && text.split('WRKDONE').length - 1 >= threads) {
      signalled = true;
      child.kill('SIGINT');
    }
  };
  const res = await runCapture(tool.path, args, { timeoutMs: timeoutMs + 5000, onStdout });
  const m = /WRKJSON (\{.*\})/.exec(res.stdout);
  if (!m) return failed(`wrk failed (${res.code}): ${(res.stderr || res.stdout).trim().slice(0, 300)}`);
  const j = JSON.parse(m[1]);
  const out = {
    rps: j.count / (j.us / 1e6),
    p50: j.p50 / 1000,
    p99: j.p99 / 1000,
    requests: j.count,
    seconds: j.us / 1e6,
    errors: j.errors,
    non2xx: j.non2xx,
    bodyErrors: j.bad,
    firstError: null,
    verified: 'every body in full',
  };
  if (j.bad) out.firstError = `${j.bad} bodies differ from the expected output`;
  else if (j.non2xx) out.firstError = `${j.non2xx} responses were not 200`;
  else if (j.errors) out.firstError = `${j.errors} socket errors or timeouts`;
  return out;
}

async function autocannon(_tool, { url, connections, requests, expected, timeoutMs }) {
  const { default: run } = await import('autocannon');
  const want = expected.toString('latin1');
  let timer;
  let instance;
  // autocannon notices the end only at its next sample tick and rounds its
  // duration: time the run ourselves, start to last response.
  const t0 = performance.now();
  let last = t0;
  const done = new Promise((resolve, reject) => {
    instance = run({ url, connections, amount: requests, timeout: 10, sampleInt: 100, verifyBody: (body) => body === want }, (err, r) => (err ? reject(err) : resolve(r)));
    instance.on('response', () => (last = performance.now()));
    timer = setTimeout(() => instance.stop(), timeoutMs);
  });
  let r;
  try {
    r = await done;
  } catch (err) {
    return failed(`autocannon: ${err.message}`);
  } finally {
    clearTimeout(timer);
  }
  const answered = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
  const seconds = (last - t0) / 1000;
  const out = {
    rps: answered / seconds,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: answered,
    seconds,
    errors: r.errors + Math.max(0, requests - answered - r.errors), // errors include timeouts
    non2xx: r.non2xx,
    bodyErrors: r.mismatches,
    firstError: null,
    verified: 'every body in full',
  };
  if (r.mismatches) out.firstError = `${r.mismatches} bodies differ from the expected output`;
  else if (out.non2xx) out.firstError = `${out.non2xx} responses were not 2xx`;
  else if (out.errors) out.firstError = `${out.errors} requests failed (errors/timeouts)`;
  return out;
}

export const LOADGENS = { bombardier, wrk, autocannon };
