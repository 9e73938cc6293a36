// Small numeric helpers for the report: medians of rounds and ratios.

/** Median of the finite numbers in `xs`, or null when there are none. */
export function median(xs) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of `xs`, or null when empty. */
export function percentile(xs, p) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const rank = Math.ceil((p / 100) * v.length);
  return v[Math.min(v.length, Math.max(1, rank)) - 1];
}

/** a / b, or null when either is missing or b is 0. */
export function ratio(a, b) {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return a / b;
}

/**
 * Collapse one contender's rounds for one workload into medians.
 * Rounds that failed (no rps) do not count towards the medians but their
 * errors do: any error in any round is reported.
 */
export function summarize(rounds) {
  const ok = rounds.filter((r) => Number.isFinite(r.rps));
  const sum = (k) => rounds.reduce((acc, r) => acc + (r[k] ?? 0), 0);
  return {
    rounds: rounds.length,
    okRounds: ok.length,
    rps: median(ok.map((r) => r.rps)),
    p50: median(ok.map((r) => r.p50)),
    p99: median(ok.map((r) => r.p99)),
    errors: sum('errors'),
    bodyErrors: sum('bodyErrors'),
    non2xx: sum('non2xx'),
    rpsMin: ok.length ? Math.min(...ok.map((r) => r.rps)) : null,
    rpsMax: ok.length ? Math.max(...ok.map((r) => r.rps)) : null,
    budget: medianBudget(ok.map((r) => r.budget).filter(Boolean)),
  };
}

/**
 * Field by field medians of `objects` (rounds or runs of one measurement):
 * for each of `keys`, the median of the objects' finite values (null when
 * none has one). null when there are no objects.
 */
export function fieldMedians(objects, keys) {
  if (objects.length === 0) return null;
  return Object.fromEntries(keys.map((k) => [k, median(objects.map((o) => o[k]))]));
}

/** Field by field medians of the rounds' CPU budgets (bench/lib/budget.js), or null. */
export function medianBudget(budgets) {
  return fieldMedians(budgets, Object.keys(budgets[0] ?? {}));
}

/** Format a ratio as "1.23x", or "–" when unknown. */
export function fmtRatio(r) {
  return r == null ? '–' : `${r.toFixed(2)}x`;
}

/** Format a number with thousands separators and `digits` decimals. */
export function fmtNum(n, digits = 0) {
  if (n == null || !Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
