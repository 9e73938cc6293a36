#!/usr/bin/env node
// Builds the native spawn server with the system C compiler: the npm
// `install` step. No node-gyp, no network.
//
//   node scripts/build-native.js              native/build/spawnd
//   node scripts/build-native.js --sanitize   also native/build/spawnd-asan
//   node scripts/build-native.js --test       also spawnd-asan, and builds and
//                                             runs the C unit test, plain and
//                                             sanitized
//   --force                                   rebuild even if up to date
//
// $CC picks the compiler (default: cc, then gcc, then clang); $CFLAGS is
// appended. Exits non-zero if no compiler is found or a step fails.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const native = join(root, 'native');
const build = join(native, 'build');
const args = new Set(process.argv.slice(2));
const force = args.has('--force');

const CFLAGS = ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-D_GNU_SOURCE'];
const SANITIZE = ['-fsanitize=address,undefined', '-fno-omit-frame-pointer', '-g'];

const rel = (p) => relative(process.cwd(), p) || '.';
const say = (line) => console.log(`spawnpool: ${line}`);

function fail(message, status = 1) {
  console.error(`spawnpool: ${message}`);
  process.exit(status);
}

/** The compiler command as argv, or null. */
function findCompiler() {
  const candidates = process.env.CC ? [process.env.CC] : ['cc', 'gcc', 'clang'];
  for (const cc of candidates) {
    const argv = cc.trim().split(/\s+/);
    const probe = spawnSync(argv[0], [...argv.slice(1), '--version'], { stdio: 'ignore' });
    if (probe.status === 0) return argv;
  }
  return null;
}

const mtime = (path) => {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
};

/** Compiles `sources` into `output` unless it is newer than every input. */
function compile(cc, { output, sources, inputs, flags, fallbackFlags }) {
  const newest = Math.max(...inputs.map(mtime), mtime(fileURLToPath(import.meta.url)));
  if (!force && mtime(output) > newest) {
    say(`${rel(output)} is up to date`);
    return;
  }
  const extra = process.env.CFLAGS ? process.env.CFLAGS.trim().split(/\s+/) : [];
  const tmp = `${output}.tmp-${process.pid}`;
  const run = (f) => spawnSync(cc[0], [...cc.slice(1), ...CFLAGS, ...f, ...extra, '-o', tmp, ...sources],
    { encoding: 'utf8' });
  let used = flags;
  let result = run(flags);
  if (result.status !== 0 && fallbackFlags) result = run(used = fallbackFlags);
  if (result.status !== 0) {
    rmSync(tmp, { force: true });
    process.stderr.write(result.stderr || String(result.error ?? ''));
    fail(`compiling ${rel(output)} failed (${cc.join(' ')})`);
  }
  renameSync(tmp, output); // atomic: running servers keep the old inode
  say(`built ${rel(output)}${used.includes('-static') ? ' (static)' : ''}`);
}

function runTest(binary) {
  const result = spawnSync(binary, [join(root, 'test', 'fixtures', 'frames')], {
    encoding: 'utf8',
    env: { ...process.env, UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1' },
  });
  process.stderr.write(result.stderr ?? '');
  if (result.status !== 0) fail(`${rel(binary)} failed (status ${result.status ?? result.signal})`);
  say(`${rel(binary)}: ${(result.stdout ?? '').trim().replace(/^test_protocol: /, '')}`);
}

function main() {
  if (process.platform !== 'linux') {
    fail(`the native spawn server needs Linux (this is ${process.platform}); `
      + 'spawnpool will use its JavaScript server instead');
  }
  const cc = findCompiler();
  if (cc === null) {
    fail('no C compiler found (tried ' + (process.env.CC ? `$CC=${process.env.CC}` : 'cc, gcc, clang') + ').\n'
      + '  Install one, then run `node scripts/build-native.js` again:\n'
      + '    Debian/Ubuntu: apt-get install gcc   (or build-essential)\n'
      + '    Fedora/RHEL:   dnf install gcc glibc-static\n'
      + '    Alpine:        apk add build-base linux-headers');
  }
  mkdirSync(build, { recursive: true });
  const files = readdirSync(native);
  const sources = files.filter((f) => f.endsWith('.c')).map((f) => join(native, f));
  const headers = files.filter((f) => f.endsWith('.h')).map((f) => join(native, f));
  const server = { sources, inputs: [...sources, ...headers] };

  // Static when libc.a is there: about half the RSS and a faster start.
  compile(cc, { ...server, output: join(build, 'spawnd'), flags: ['-static'], fallbackFlags: [] });
  if (args.has('--sanitize') || args.has('--test')) {
    compile(cc, { ...server, output: join(build, 'spawnd-asan'), flags: SANITIZE });
  }
  if (args.has('--test')) {
    const codec = [join(native, 'test', 'test_protocol.c'), join(native, 'protocol.c')];
    const unit = { sources: codec, inputs: [...codec, join(native, 'protocol.h')] };
    compile(cc, { ...unit, output: join(build, 'test_protocol'), flags: [] });
    compile(cc, { ...unit, output: join(build, 'test_protocol-asan'), flags: SANITIZE });
    runTest(join(build, 'test_protocol'));
    runTest(join(build, 'test_protocol-asan'));
  }
}

main();
