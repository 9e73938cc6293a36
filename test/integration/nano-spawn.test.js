// nano-spawn, plain vs under spawnpool/register. See run.js and scenarios/nano-spawn.js.
import { scenarioTests } from './run.js';

await scenarioTests('nano-spawn');
