// Finding and building what the benchmark runs besides Node: the Go and Rust
// contenders, bombardier (pinned v1.2.6 via bench/tools/go.mod), the C spawn
// ceiling. Builds land in bench/build/ and are reused while their sources and
// toolchain are unchanged (a stamp file holds the hash).
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCapture } from './loadgen.js';

const modules = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/** Absolute path of an executable `name` on PATH, or null. */
export function which(name, pathEnv = process.env.PATH ?? '') {
  for (const dir of pathEnv.split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

/** `path` if it is an executable file, else null. */
function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return null;
  }
}

async function version(path, args = ['--version']) {
  const r = await runCapture(path, args, { timeoutMs: 15_000 });
  return (r.stdout || r.stderr).trim().split('\n')[0] || null;
}

/** Toolchains and runtimes on this machine: { go, cargo, cc, wrk, bombardier, bun, deno } → {path, version} | null. */
export async function detectTools(env = process.env) {
  const found = {
    go: which('go', env.PATH),
    cargo: which('cargo', env.PATH),
    cc: which('cc', env.PATH) ?? which('gcc', env.PATH) ?? which('clang', env.PATH),
    wrk: which('wrk', env.PATH),
    bombardier: which('bombardier', env.PATH),
    // Then the devDependencies' binaries (@oven/bun-linux-x64, @deno/linux-x64-glibc).
    bun: (env.BUN && executable(env.BUN)) || which('bun', env.PATH) || executable(join(modules, '@oven/bun-linux-x64/bin/bun')),
    deno: (env.DENO && executable(env.DENO)) || which('deno', env.PATH) || executable(join(modules, '@deno/linux-x64-glibc/deno')),
  };
  const versionArgs = { go: ['version'], wrk: ['--version'], bombardier: ['--version'] };
  const out = {};
  await Promise.all(Object.entries(found).map(async ([k, p]) => {
    out[k] = p ? { path: p, version: await version(p, versionArgs[k]) } : null;
  }));
  return out;
}

function hashOf(files, extra) {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(existsSync(f) ? readFileSync(f) : '(missing)').update('\0');
  h.update(extra ?? '');
  return h.digest('hex');
}

/**
 * Build `output` with `cmd` unless the stamp says it is current.
 * Resolves to { ok, cached, path, seconds, error }.
 */
async function cachedBuild({ name, buildDir, output, sources, toolVersion, cmd, args, cwd, env, timeoutMs }) {
  mkdirSync(buildDir, { recursive: true });
  const stampFile = join(buildDir, `${name}.stamp`);
  const stamp = hashOf(sources, `${toolVersion}\n${cmd} ${args.join(' ')}`);
  if (existsSync(output) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
    return { ok: true, cached: true, path: output, seconds: 0 };
  }
  const t0 = performance.now();
  const r = await runCapture(cmd, args, { cwd, env, timeoutMs });
  const seconds = (performance.now() - t0) / 1000;
  if (r.code !== 0 || !existsSync(output)) {
    const why = r.timedOut ? `timed out after ${timeoutMs / 1000} s` : (r.stderr || r.stdout).trim().split('\n').slice(-6).join('\n');
    return { ok: false, cached: false, path: null, seconds, error: why };
  }
  writeFileSync(stampFile, stamp);
  return { ok: true, cached: false, path: output, seconds };
}

const NEEDS = { 'go-server': 'go', bombardier: 'go', 'rust-server': 'cargo', 'spawn-ceiling': 'cc' };

/** The build recipes, keyed by what they produce. Each needs one tool. */
export function recipes(benchDir, buildDir, tools) {
  const goEnv = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false -mod=readonly' };
  return {
    'go-server': tools.go && {
      name: 'go-server', buildDir, output: join(buildDir, 'go-server'),
      sources: ['go.mod', 'main.go'].map((f) => join(benchDir, 'go', f)),
      toolVersion: tools.go.version, cmd: tools.go.path, args: ['build', '-trimpath', '-o', join(buildDir, 'go-server'), '.'],
      cwd: join(benchDir, 'go'), env: goEnv, timeoutMs: 300_000,
    },
    bombardier: tools.go && {
      name: 'bombardier', buildDir, output: join(buildDir, 'bombardier'),
      sources: ['go.mod', 'go.sum', 'tools.go'].map((f) => join(benchDir, 'tools', f)),
      toolVersion: tools.go.version, cmd: tools.go.path,
      args: ['build', '-trimpath', '-o', join(buildDir, 'bombardier'), 'github.com/codesenberg/bombardier'],
      cwd: join(benchDir, 'tools'), env: goEnv, timeoutMs: 300_000,
    },
    'rust-server': tools.cargo && {
      name: 'rust-server', buildDir, output: join(buildDir, 'rust-target', 'release', 'spawnpool-bench-rust'),
      sources: ['Cargo.toml', 'Cargo.lock', 'src/main.rs'].map((f) => join(benchDir, 'rust', f)),
      toolVersion: tools.cargo.version, cmd: tools.cargo.path, args: ['build', '--release', '--locked', '--quiet'],
      cwd: join(benchDir, 'rust'), env: { ...process.env, CARGO_TARGET_DIR: join(buildDir, 'rust-target') }, timeoutMs: 480_000,
    },
    'spawn-ceiling': tools.cc && {
      name: 'spawn-ceiling', buildDir, output: join(buildDir, 'spawn-ceiling'),
      sources: [join(benchDir, 'c', 'spawn-ceiling.c')],
      toolVersion: tools.cc.version, cmd: tools.cc.path,
      args: ['-O2', '-pthread', '-o', join(buildDir, 'spawn-ceiling'), join(benchDir, 'c', 'spawn-ceiling.c')],
      cwd: benchDir, env: process.env, timeoutMs: 120_000,
    },
  };
}

/** Build [key, recipe] pairs one after another (a null recipe: its toolchain is missing); `onStart(key)` before each. */
export async function buildAll(list, onStart = () => {}) {
  const out = {};
  for (const [key, recipe] of list) {
    if (!recipe) {
      out[key] = { ok: false, cached: false, path: null, seconds: 0, error: `${NEEDS[key]} not found on PATH` };
      continue;
    }
    onStart(key);
    out[key] = await cachedBuild(recipe);
  }
  return out;
}
