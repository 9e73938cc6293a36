// Contender "node": node:child_process spawn per request, stdout piped into
// the response. Bun and Deno run this same file.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { listen, spawnHandler } from './common.js';

listen(http.createServer(spawnHandler(spawn)));
