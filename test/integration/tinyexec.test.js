// tinyexec, plain vs under spawnpool/register. See run.js and scenarios/tinyexec.js.
import { scenarioTests } from './run.js';

await scenarioTests('tinyexec');
