// spawnpool/register under --import (docs/register.md): the hook of the
// instance dist/index.js gives, installed by dist/register.cjs.
import { createRequire } from 'node:module';
import './index.js';

createRequire(import.meta.url)('./register.cjs');
