// node:child_process used directly (and the issue 8 patterns), plain vs under
// spawnpool/register. See run.js and scenarios/patterns.js.
import { scenarioTests } from './run.js';

await scenarioTests('patterns', {
  spawnless: ['one module object for every import style'],
});
