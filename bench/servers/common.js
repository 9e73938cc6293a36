// Shared by the Node-API contenders (also run under Bun and Deno): the two
// routes, the stdio every contender gives its child, and the readiness line
// the harness waits for. Keep it to node: built-ins so every runtime loads it.
import process from 'node:process';

/** stdio for the child in every contender (Go and Rust do the same): stdout piped, the rest /dev/null. */
export const CHILD_STDIO = ['ignore', 'pipe', 'ignore'];

/** [file, args] for a request path, or null for a 404. */
export function route(url) {
  if (url === '/echo') return ['echo', ['hi']];
  if (url === '/cat') return ['cat', [process.env.BENCH_CAT_FILE]];
  return null;
}

/** The port from argv[2] or $PORT. */
export function port() {
  return Number(process.argv[2] ?? process.env.PORT ?? 8001);
}

/** Listen on 127.0.0.1 and print the line the harness waits for. */
export function listen(server, onReady = () => {}) {
  server.keepAliveTimeout = 30_000;
  server.listen(port(), '127.0.0.1', () => {
    onReady();
    process.stdout.write(`listening ${server.address().port}\n`);
  });
}

/** A request handler that spawns per request and pipes stdout into the response. */
export function spawnHandler(spawn) {
  return (req, res) => {
    const cmd = route(req.url);
    if (!cmd) {
      res.writeHead(404).end('not found\n');
      return;
    }
    const child = spawn(cmd[0], cmd[1], { stdio: CHILD_STDIO });
    child.on('error', (err) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(`spawn failed: ${err.code}\n`);
    });
    child.stdout.pipe(res);
  };
}
