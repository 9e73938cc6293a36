// zx, plain vs under spawnpool/register. See run.js and scenarios/zx.js.
import { scenarioTests } from './run.js';

await scenarioTests('zx');
