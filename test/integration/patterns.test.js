// node:child_process used directly (and the issue 8 patterns), plain vs under
// spawnpool/register. See run.js and scenarios/patterns.js.
import { scenarioTests } from './run.js';

const requestOnNextTick = 'issue 10: the request leaves on the next tick, so a loop blocked right after spawn() holds it back';
await scenarioTests('patterns', {
  spawnless: ['one module object for every import style'],
  knownDifferences: {
    'trace: stdout, stderr, exit 3': requestOnNextTick,
    'trace: killed by a signal': requestOnNextTick,
  },
});
