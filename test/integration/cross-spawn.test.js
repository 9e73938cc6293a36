// cross-spawn, plain vs under spawnpool/register. See run.js and scenarios/cross-spawn.js.
import { scenarioTests } from './run.js';

// cross-spawn.sync calls child_process.spawnSync, which stays Node's.
await scenarioTests('cross-spawn', { spawnless: ['sync'] });
