#!/usr/bin/env node
// Builds the native spawn server with the system C compiler: the npm
// `install` step (no node-gyp, no network), and the prebuilt static servers
// the packed tarball carries (the `prepack` step).
//
//   node scripts/build-native.js              the install step; never fails:
//       1. a C compiler            → builds native/build/spawnd, and the
//                                    launch addon native/build/launch.node
//                                    (optional: a failure is one line)
//       2. else (or the build fails) the prebuilt static server for this
//          platform-arch, if the tarball has one and it answers --version
//                                  → copied to native/build/spawnd
//       3. else                    → builds nothing; one notice that every
//                                    call will go to node:child_process
//   node scripts/build-native.js --prebuilt   native/build/prebuilt/linux-<arch>/spawnd,
//                                             static -O2: linux-x64 and
//                                             linux-arm64 (the latter only with a
//                                             cross compiler, else skipped)
//   node scripts/build-native.js --sanitize   also native/build/spawnd-asan
//   node scripts/build-native.js --test       also spawnd-asan, and builds and
//                                             runs the C unit test, plain and
//                                             sanitized
//   --force                                   rebuild even if up to date
//
// $CC picks the compiler (default: cc, then gcc, then clang); $CFLAGS is
// appended (not to the prebuilt servers: they must run on any CPU of their
// architecture). --prebuilt, --sanitize and --test exit non-zero when a step
// fails; the install step exits 0 whatever happens.
//
// For tests only: $SPAWNPOOL_PLATFORM and $SPAWNPOOL_ARCH stand in for
// process.platform and process.arch in the install step.
import { spawnSync } from 'node:child_process';
import {
  chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmSync,
  statSync, utimesSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const native = join(root, 'native');
const build = join(native, 'build');
// Under native/build/ so that git ignores it; package.json "files" packs it.
const prebuiltDir = join(build, 'prebuilt');
const args = new Set(process.argv.slice(2));
const force = args.has('--force');

const CFLAGS = ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-D_GNU_SOURCE'];
const SANITIZE = ['-fsanitize=address,undefined', '-fno-omit-frame-pointer', '-g'];
// The architectures a prebuilt server is made for: Debian's cross compiler
// name, and the ELF e_machine the binary must carry.
const PREBUILT = {
  x64: { triple: 'x86_64-linux-gnu', machine: 62 },
  arm64: { triple: 'aarch64-linux-gnu', machine: 183 },
};

const rel = (p) => relative(process.cwd(), p) || '.';
const say = (line) => console.log(`spawnpool: ${line}`);

class BuildError extends Error {}

function fail(message, status = 1) {
  console.error(`spawnpool: ${message}`);
  process.exit(status);
}

/** The first of `candidates` that answers --version, as argv, or null. */
function findCompiler(candidates = process.env.CC ? [process.env.CC] : ['cc', 'gcc', 'clang']) {
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

function serverSources() {
  const files = readdirSync(native);
  const sources = files.filter((f) => f.endsWith('.c')).map((f) => join(native, f));
  const headers = files.filter((f) => f.endsWith('.h')).map((f) => join(native, f));
  return { sources, inputs: [...sources, ...headers] };
}

/**
 * Compiles `sources` into `output` unless it is newer than every input.
 * Throws a BuildError (the compiler's output in `detail`) if it fails.
 */
function compile(cc, { output, sources, inputs, flags, fallbackFlags, userFlags = true }) {
  const newest = Math.max(...inputs.map(mtime), mtime(fileURLToPath(import.meta.url)));
  if (!force && mtime(output) > newest) {
    say(`${rel(output)} is up to date`);
    return;
  }
  mkdirSync(dirname(output), { recursive: true });
  const extra = userFlags && process.env.CFLAGS ? process.env.CFLAGS.trim().split(/\s+/) : [];
  const tmp = `${output}.tmp-${process.pid}`;
  const run = (f) => spawnSync(cc[0], [...cc.slice(1), ...CFLAGS, ...f, ...extra, '-o', tmp, ...sources],
    { encoding: 'utf8' });
  let used = flags;
  let result = run(flags);
  if (result.status !== 0 && fallbackFlags) result = run(used = fallbackFlags);
  if (result.status !== 0) {
    rmSync(tmp, { force: true });
    const error = new BuildError(`compiling ${rel(output)} failed (${cc.join(' ')})`);
    error.detail = result.stderr || String(result.error ?? '');
    throw error;
  }
  renameSync(tmp, output); // atomic: running servers keep the old inode
  say(`built ${rel(output)}${used.includes('-static') ? ' (static)' : ''}`);
}

/** compile(), or exit non-zero with the compiler's output. */
function compileOrExit(cc, job) {
  try {
    compile(cc, job);
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    process.stderr.write(error.detail);
    fail(error.message);
  }
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

/** The protocol version the library speaks, or null if it cannot be read. */
async function protocolVersion() {
  try {
    const { VERSION } = await import('../lib/protocol.js');
    return Number.isInteger(VERSION) ? VERSION : null;
  } catch {
    return null;
  }
}

/** Why `binary --version` is not a spawnd for this library, or null if it is. */
async function checkServer(binary) {
  const version = await protocolVersion();
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
  if (r.error) return r.error.message;
  const expected = version === null ? /^spawnd protocol \d+\n$/ : new RegExp(`^spawnd protocol ${version}\\n$`);
  if (!expected.test(r.stdout)) return `--version printed ${JSON.stringify(r.stdout)}, exit ${r.status ?? r.signal}`;
  return null;
}

/**
 * Why `path` is not a static 64-bit little-endian ELF executable for
 * `machine`, or null if it is. A program header PT_INTERP (3) names the
 * dynamic loader: a static binary has none, which is what lets one binary
 * run on glibc and musl (Alpine) systems alike.
 */
function checkStaticElf(path, machine) {
  const fd = openSync(path, 'r');
  try {
    const header = Buffer.alloc(64);
    readSync(fd, header, 0, 64, 0);
    if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1) return 'not a 64-bit LSB ELF file';
    const found = header.readUInt16LE(18);
    if (found !== machine) return `ELF machine ${found}, expected ${machine}`;
    const phoff = Number(header.readBigUInt64LE(32));
    const phentsize = header.readUInt16LE(54);
    const phnum = header.readUInt16LE(56);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    for (let i = 0; i < phnum; i++) {
      if (table.readUInt32LE(i * phentsize) === 3) return 'dynamically linked (has an ELF interpreter)';
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/** The `prepack` step: a static server per architecture, for the tarball. */
async function buildPrebuilt() {
  if (process.platform !== 'linux') fail(`the prebuilt servers are built on Linux (this is ${process.platform})`);
  const server = serverSources();
  for (const [arch, { triple, machine }] of Object.entries(PREBUILT)) {
    const host = arch === process.arch;
    const output = join(prebuiltDir, `linux-${arch}`, 'spawnd');
    const cc = findCompiler(host ? undefined : [`${triple}-gcc`]);
    if (cc === null) {
      if (host) fail('no C compiler found: the prebuilt server for this machine cannot be built');
      rmSync(dirname(output), { recursive: true, force: true }); // one left from an earlier pack may be stale
      say(`linux-${arch} prebuilt server skipped: no cross compiler ${triple}-gcc on PATH `
        + `(Debian/Ubuntu: apt-get install gcc-${triple.replaceAll('_', '-')}); the tarball will not carry one`);
      continue;
    }
    compileOrExit(cc, { ...server, output, flags: ['-static'], userFlags: false });
    const wrong = checkStaticElf(output, machine) ?? (host ? await checkServer(output) : null);
    if (wrong !== null) {
      rmSync(output, { force: true });
      fail(`${rel(output)} is unusable: ${wrong}`);
    }
  }
}

/**
 * Copies the tarball's prebuilt server for `target` to native/build/spawnd
 * once it has answered --version there. Returns why it could not, or null.
 */
async function installPrebuilt(target) {
  const source = join(prebuiltDir, target, 'spawnd');
  if (!existsSync(source)) return `the package has no prebuilt server for ${target}`;
  mkdirSync(build, { recursive: true });
  const output = join(build, 'spawnd');
  const tmp = `${output}.tmp-${process.pid}`;
  copyFileSync(source, tmp);
  chmodSync(tmp, 0o755);
  const wrong = await checkServer(tmp);
  if (wrong !== null) {
    rmSync(tmp, { force: true });
    return `the prebuilt server for ${target} does not run here (${wrong})`;
  }
  // Dated 1970: never "up to date", so the next run with a compiler (npm
  // rebuild, or the --test build) compiles the sources instead of keeping it.
  utimesSync(tmp, 0, 0);
  renameSync(tmp, output);
  say(`installed the prebuilt static server for ${target} as ${rel(output)}`);
  return null;
}

function notice(why, help = '') {
  console.error(`spawnpool: NOTICE: ${why}, so every spawn/exec/execFile call will go to `
    + `node:child_process (same behaviour, without the speed-up).${help}`);
}

/** The `install` step: build, else the prebuilt server, else a notice. Never fails. */
async function install() {
  const platform = process.env.SPAWNPOOL_PLATFORM || process.platform;
  const arch = process.env.SPAWNPOOL_ARCH || process.arch;
  const target = `${platform}-${arch}`;
  if (platform !== 'linux') {
    notice(`the native spawn server runs on Linux only (this is ${target})`);
    return;
  }
  const cc = findCompiler();
  if (cc !== null) buildAddon(cc);
  if (cc !== null) {
    try {
      // Static when libc.a is there: about half the RSS and a faster start.
      compile(cc, { ...serverSources(), output: join(build, 'spawnd'), flags: ['-static'], fallbackFlags: [] });
      return;
    } catch (error) {
      if (!(error instanceof BuildError)) throw error;
      process.stderr.write(error.detail.split('\n').slice(0, 20).join('\n') + '\n');
      console.error(`spawnpool: ${error.message}; trying the prebuilt server`);
    }
  }
  const why = await installPrebuilt(target);
  if (why === null) return;
  const tried = process.env.CC ? `$CC=${process.env.CC}` : 'cc, gcc, clang';
  notice(`${cc === null ? `no C compiler found (tried ${tried})` : 'the native server did not compile'} and ${why}`,
    '\n  To build the server, install a C compiler, then run `npm rebuild spawnpool`:\n'
    + '    Debian/Ubuntu: apt-get install gcc   (or build-essential)\n'
    + '    Fedora/RHEL:   dnf install gcc glibc-static\n'
    + '    Alpine:        apk add build-base linux-headers');
}

const addonJob = () => {
  const source = join(native, 'addon', 'launch.c');
  return { sources: [source], inputs: [source], output: join(build, 'launch.node'), flags: ['-shared', '-fPIC'] };
};

/**
 * The launch addon (lib/launch.js): optional. Without it servers start
 * through node:child_process, which forks Node; one line says so.
 */
function buildAddon(cc) {
  try {
    compile(cc, addonJob());
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    process.stderr.write(error.detail.split('\n').slice(0, 10).join('\n') + '\n');
    console.error(`spawnpool: ${error.message}; servers will be started by node:child_process (a fork of Node)`);
  }
}

/** `--sanitize` / `--test`: development builds; every failure is fatal. */
function buildForDevelopment() {
  if (process.platform !== 'linux') fail(`the native spawn server needs Linux (this is ${process.platform})`);
  const cc = findCompiler();
  if (cc === null) fail('no C compiler found (tried ' + (process.env.CC ? `$CC=${process.env.CC}` : 'cc, gcc, clang') + ')');
  const server = serverSources();
  compileOrExit(cc, { ...server, output: join(build, 'spawnd'), flags: ['-static'], fallbackFlags: [] });
  compileOrExit(cc, { ...server, output: join(build, 'spawnd-asan'), flags: SANITIZE });
  compileOrExit(cc, addonJob());
  if (args.has('--test')) {
    const codec = [join(native, 'test', 'test_protocol.c'), join(native, 'protocol.c')];
    const unit = { sources: codec, inputs: [...codec, join(native, 'protocol.h')] };
    compileOrExit(cc, { ...unit, output: join(build, 'test_protocol'), flags: [] });
    compileOrExit(cc, { ...unit, output: join(build, 'test_protocol-asan'), flags: SANITIZE });
    runTest(join(build, 'test_protocol'));
    runTest(join(build, 'test_protocol-asan'));
  }
}

if (args.has('--prebuilt')) await buildPrebuilt();
else if (args.has('--sanitize') || args.has('--test')) buildForDevelopment();
else {
  // Whatever goes wrong here (a read-only directory, say), `npm install`
  // must not fail because of spawnpool: the library falls back at run time.
  await install().catch((error) => notice(`the install step failed (${error.message})`));
}
