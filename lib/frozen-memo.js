// options.js hands out the same frozen array of "K=V" strings while the
// environment stays the same; what is worked out from it (its encoding in
// a SPAWN, what the precheck needs of it) is worked out once per array.

/**
 * `compute(array)`, remembered for the last frozen array it was given (an
 * array that is not frozen may change: it is computed each time).
 * @template T
 * @param {(array: readonly string[]) => T} compute
 * @returns {(array: readonly string[]) => T}
 */
export function lastFrozen(compute) {
  let key = null;
  let value;
  const memo = (array) => {
    if (array === key) return value;
    const result = compute(array);
    if (Object.isFrozen(array)) {
      key = array;
      value = result;
    }
    return result;
  };
  /** What compute(array) would give, known already: remembered as its result. */
  memo.preset = (array, result) => {
    if (!Object.isFrozen(array)) return;
    key = array;
    value = result;
  };
  return memo;
}
