// execa 9, plain vs under spawnpool/register. See run.js and scenarios/execa.js.
import { scenarioTests } from './run.js';

await scenarioTests('execa');
