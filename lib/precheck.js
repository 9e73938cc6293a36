// Predicts, synchronously and in JS, how Node's spawn() would fail, so that
// spawn() can throw or emit exactly what node:child_process does although
// the exec happens later in a spawn server.
//
// libuv (1.46 in Node 20, 1.51 in Node 22/24; Linux, fork) runs in the child,
// in this order, and uv_spawn returns the first failure:
//   chdir(cwd)                       with the parent's credentials
//   setgroups(0, NULL)               when uid or gid is set; error ignored
//   setgid(gid), setuid(uid)         EINVAL for an unmapped id (-1), else EPERM
//   execvp(file)                     glibc's, PATH from the child's environment
// glibc 2.36 execvp: a file with a '/' is exec'd as given (relative to the new
// cwd); otherwise a name over NAME_MAX bytes is ENAMETOOLONG, and each entry
// of PATH (default "/bin:/usr/bin", an empty entry is the cwd) is tried in
// turn. EACCES, ENOENT, ENOTDIR (and ESTALE, ENODEV, ETIMEDOUT) go on to the
// next entry; any other error ends the search. When none worked the result is
// EACCES if one entry said so, else the LAST entry's error (PATH=/etc/passwd
// gives ENOTDIR, thrown, not ENOENT). ENOEXEC never surfaces: glibc runs such
// a file with /bin/sh.
// The kernel (6.x) opens the file before it counts argv and envp, so E2BIG
// comes only for a file that exists and may be executed; a 200 KB argument to
// a missing program is ENOENT. Verified with node:child_process on Node 20,
// 22 and 24 (test/differential/precheck.test.js).
//
// Not seen here (the server still reports them, as an 'error' after spawn):
// ACLs, noexec mounts, ETXTBSY, a script whose interpreter is missing
// (ENOENT), a file that became unexecutable between this check and the exec,
// an E2BIG caused only by a script's interpreter line (binfmt_script adds
// strings: measure the boundary with an ELF program), a search stopped early
// by an ELOOP entry created ahead of a cached hit, glibc's handling of a PATH
// over 4095 bytes, and capabilities a non-root process keeps across setuid.
//
// Cost per call, median of 15 x 20,000 calls on the dev box (x86-64, Linux
// 6.18), measured by a throwaway script, not a test: a cached hit with a
// 6-entry PATH and a 41-variable environment takes 3.3 µs on Node 20, 2.8 on
// 22, 2.7 on 24, of which ~2.4 µs are its two stat() calls (the cwd and the
// remembered program; statSync allocates one Stats each). A program found
// nowhere costs ~13 µs (a stat per entry, plus a throwing one to tell ENOENT
// from ENOTDIR); a switch to a non-root uid ~5-6 µs (every directory on the
// way is stat'ed for the child's search permission).
import { statSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { errnoError } from './errors.js';
import { lastFrozen } from './frozen-memo.js';
import { statPath } from './launch.js';

const {
  EACCES, EAGAIN, EMFILE, ENFILE, ENOENT, ENOTDIR, ESTALE, ENODEV, ETIMEDOUT, ENAMETOOLONG, E2BIG, EINVAL, EPERM,
} = constants.errno;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const NAME_MAX = 255;
const MAX_ARG_STRLEN = 32 * 4096; // one string, NUL included
const ARG_MAX = 128 * 1024; // the floor of the argv + envp budget
const STACK_SHARE_CAP = 6 * 1024 * 1024; // _STK_LIM / 4 * 3
const DEFAULT_PATH = '/bin:/usr/bin'; // glibc's CS_PATH, used when PATH is unset
const CACHE_MAX = 1024;

const CAP_DAC_OVERRIDE = 1;
const CAP_DAC_READ_SEARCH = 2;
const CAP_SETGID = 6;
const CAP_SETUID = 7;

// ------------------------------------------------- this process, read once
let self = null;

// Without /proc/self/status (Deno without read access to it, say): the
// ids the process API gives, and root's capabilities for euid 0 only.
function statusFromProcess() {
  const id = (fn, fallback) => { try { return fn?.() ?? fallback; } catch { return fallback; } };
  const uid = id(process.getuid, 0);
  const euid = id(process.geteuid, uid);
  const gid = id(process.getgid, 0);
  const egid = id(process.getegid, gid);
  const groups = id(process.getgroups, []);
  return `Uid:\t${uid}\t${euid}\t${euid}\nGid:\t${gid}\t${egid}\t${egid}\nGroups:\t${groups.join(' ')}\n`
    + `CapEff:\t${euid === 0 ? 'ffffffff' : '0'}\n`;
}

/**
 * What the precheck needs of a /proc/<pid>/status text: the ids, the
 * supplementary groups and the effective capabilities. Each field is found
 * by its line's name: a field with an empty value (`Groups:` of a process
 * with no supplementary groups) is empty, never the next line's. (No Map
 * of all ~57 lines, no regular expressions: this runs inside a process's
 * first spawn, where each first run costs.)
 */
export function parseStatus(status) {
  const [ruid, euid, suid] = numbers(statusField(status, 'Uid'));
  const [rgid, egid, sgid] = numbers(statusField(status, 'Gid'));
  const caps = parseInt(statusField(status, 'CapEff').trim().slice(-8) || '0', 16);
  const has = (bit) => (caps & (1 << bit)) !== 0;
  return {
    ruid, euid, suid, rgid, egid, sgid,
    groups: numbers(statusField(status, 'Groups')),
    dacOverride: has(CAP_DAC_OVERRIDE),
    dirOverride: has(CAP_DAC_OVERRIDE) || has(CAP_DAC_READ_SEARCH),
    setuid: has(CAP_SETUID),
    setgid: has(CAP_SETGID),
  };
}

// The value of the status line "name:\t...", or '' without one.
function statusField(status, name) {
  const tag = `${name}:`;
  let at = 0;
  if (!status.startsWith(tag)) {
    at = status.indexOf(`\n${tag}`) + 1;
    if (at === 0) return '';
  }
  const from = at + tag.length;
  const end = status.indexOf('\n', from);
  return status.slice(from, end === -1 ? status.length : end);
}

// The decimal numbers in a status value, in order.
function numbers(text) {
  const out = [];
  let n = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      n = (n === -1 ? 0 : n * 10) + (c - 48);
    } else if (n !== -1) {
      out.push(n);
      n = -1;
    }
  }
  if (n !== -1) out.push(n);
  return out;
}

function readSelf() {
  let status;
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    status = statusFromProcess();
  }
  self = {
    ...parseStatus(status),
    // Read when first needed (a spawn with uid/gid, one with large
    // arguments): most processes never need them.
    uidMap: undefined,
    gidMap: undefined,
    argLimit: undefined,
  };
}

// [inside, count] pairs; null when unreadable (then only -1 is invalid).
function readIdMap(path) {
  try {
    const out = [];
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const f = line.trim().split(/\s+/);
      if (f.length === 3) out.push(Number(f[0]), Number(f[2]));
    }
    return out;
  } catch {
    return null;
  }
}

// The kernel's budget for argv + envp strings and pointers (fs/exec.c
// bprm_stack_limits): a quarter of the stack rlimit, at most 6 MiB, at least
// 128 KiB. The child inherits the rlimit of this process.
function argLimit() {
  let soft = Infinity;
  try {
    const m = /^Max stack size\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m && m[1] !== 'unlimited') soft = Number(m[1]);
  } catch { /* no /proc: assume unlimited */ }
  return Math.max(Math.min(STACK_SHARE_CAP, Math.floor(soft / 4)), ARG_MAX);
}

// An id the kernel can map (make_kuid): (uid_t)-1 never is.
function validId(id, map) {
  if (id === 0xffffffff) return false;
  if (map === null) return true;
  for (let i = 0; i < map.length; i += 2) {
    if (id >= map[i] && id - map[i] < map[i + 1]) return true;
  }
  return false;
}

// ------------------------------------------- the child's credentials, per call
// Module state rather than an object per call: checkSpawn is synchronous.
let childUid = 0;
let childGid = 0;
let childGroups = [];
const NO_GROUPS = [];
let childPrivileged = false; // keeps CAP_DAC_OVERRIDE: any x bit will do
let walkDirs = false; // the child may lack search permission where we have it

function setChild(uid, gid) {
  const switching = uid !== undefined || gid !== undefined;
  childUid = uid === undefined ? self.euid : uid;
  childGid = gid === undefined ? self.egid : gid;
  // setgroups(0, NULL) needs CAP_SETGID; without it the groups stay.
  childGroups = switching && self.setgid ? NO_GROUPS : self.groups;
  // setuid() to a non-zero uid clears the effective capabilities.
  childPrivileged = self.dacOverride && (uid === undefined || uid === 0);
  walkDirs = switching && !childPrivileged &&
    (self.dirOverride || childUid !== self.euid || childGid !== self.egid || childGroups !== self.groups);
}

// generic_permission() for MAY_EXEC on a regular file.
function executable(st) {
  const mode = st.mode;
  if ((mode & S_IFMT) !== S_IFREG) return false;
  if (childPrivileged) return (mode & 0o111) !== 0;
  if (st.uid === childUid) return (mode & 0o100) !== 0;
  if (st.gid === childGid || childGroups.includes(st.gid)) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

function searchable(st, uid, gid, groups, privileged) {
  if (privileged) return true;
  const mode = st.mode;
  if (st.uid === uid) return (mode & 0o100) !== 0;
  if (st.gid === gid || groups.includes(st.gid)) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

// stat() as a positive errno (0: mode, uid and gid are in lastStat). With
// the launch addon, one stat(2) that says its errno and builds no Stats
// object. Else statSync: a missing entry does not throw, which keeps a
// PATH search cheap; but Node >= 22 answers undefined for ENOTDIR as well,
// so where the code matters (`exact`) the path is stat'ed again, throwing.
let lastStat = null;
const statOut = new Int32Array(3);
const statFields = { mode: 0, uid: 0, gid: 0 };
function statErrno(path, exact) {
  if (statPath !== null) {
    const r = statPath(path, statOut);
    if (r !== 0) return -r;
    statFields.mode = statOut[0];
    statFields.uid = statOut[1] >>> 0;
    statFields.gid = statOut[2] >>> 0;
    lastStat = statFields;
    return 0;
  }
  try {
    lastStat = statSync(path, { throwIfNoEntry: false });
    if (lastStat !== undefined) return 0;
    if (!exact) return ENOENT;
    statSync(path);
    return ENOENT; // created meanwhile: call it missing, as it was
  } catch (err) {
    return -err.errno;
  }
}

// Every directory the child walks through to reach `abs`, as the child.
function walkErrno(abs, exact) {
  for (let i = abs.indexOf('/', 1); i !== -1; i = abs.indexOf('/', i + 1)) {
    const e = statErrno(abs.slice(0, i), exact);
    if (e !== 0) return e;
    if ((lastStat.mode & S_IFMT) === S_IFDIR && !searchable(lastStat, childUid, childGid, childGroups, false)) return EACCES;
  }
  return 0;
}

// What execve(2) of `abs` would say about the file alone (before E2BIG).
function execErrno(abs, exact) {
  if (walkDirs) {
    const e = walkErrno(abs, exact);
    if (e !== 0) return e;
  }
  const e = statErrno(abs, exact);
  if (e !== 0) return e;
  return executable(lastStat) ? 0 : EACCES;
}

let cwdDir = '/';
const inCwd = (rel) => (cwdDir === '/' ? `/${rel}` : `${cwdDir}/${rel}`);
const absolute = (p) => (p.charCodeAt(0) === 47 ? p : inCwd(p));

// ------------------------------------------------------------ PATH search
// PATH string → { relative, files: Map(file → path | Map(cwd → path)) }: the
// candidate that last resolved. Only successes are remembered, and a hit is
// re-verified by one stat: any executable candidate is enough for execvp.
const pathCache = new Map();
let found = ''; // the execve filename of the last successful search

function pathRecord(path) {
  let rec = pathCache.get(path);
  if (rec === undefined) {
    if (pathCache.size >= CACHE_MAX) pathCache.clear();
    let relative = false;
    for (const entry of path.split(':')) if (entry.charCodeAt(0) !== 47) relative = true;
    rec = { relative, files: new Map() };
    pathCache.set(path, rec);
  }
  return rec;
}

function searchPath(path, file) {
  const rec = pathRecord(path);
  const cached = rec.files.get(file);
  const hit = rec.relative ? cached?.get(cwdDir) : cached;
  if (hit !== undefined && execErrno(absolute(hit), false) === 0) {
    found = hit;
    return 0;
  }
  let gotEacces = false;
  let last = ENOENT;
  let start = 0;
  for (;;) {
    let end = path.indexOf(':', start);
    if (end === -1) end = path.length;
    const candidate = end === start ? file : `${path.slice(start, end)}/${file}`;
    // Only the last entry's error can be the result: only it needs `exact`.
    const e = execErrno(absolute(candidate), end === path.length);
    if (e === 0) {
      remember(rec, file, candidate);
      found = candidate;
      return 0;
    }
    if (e === EACCES) gotEacces = true;
    else if (e !== ENOENT && e !== ENOTDIR && e !== ESTALE && e !== ENODEV && e !== ETIMEDOUT) return e;
    last = e;
    if (end === path.length) break;
    start = end + 1;
  }
  return gotEacces ? EACCES : last;
}

function remember(rec, file, candidate) {
  if (rec.files.size >= CACHE_MAX) rec.files.clear();
  if (!rec.relative) {
    rec.files.set(file, candidate);
    return;
  }
  let byCwd = rec.files.get(file);
  if (byCwd === undefined) rec.files.set(file, byCwd = new Map());
  if (byCwd.size >= CACHE_MAX) byCwd.clear();
  byCwd.set(cwdDir, candidate);
}

// -------------------------------------------------------------- the checks
function cwdErrno(cwd) {
  const e = statErrno(cwd, true);
  if (e !== 0) return e;
  if ((lastStat.mode & S_IFMT) !== S_IFDIR) return ENOTDIR;
  // chdir() runs before setuid(): the parent's credentials count.
  return searchable(lastStat, self.euid, self.egid, self.groups, self.dirOverride) ? 0 : EACCES;
}

function idErrno(id, map, privileged, real, saved) {
  const raw = id >>> 0;
  if (!validId(raw, map)) return EINVAL;
  return privileged || raw === real || raw === saved ? 0 : EPERM;
}

const utf8Length = (s) => Buffer.byteLength(s, 'utf8');

// E2BIG for execve(filename, argv, env) (fs/exec.c copy_strings): one string
// over MAX_ARG_STRLEN, or all strings plus a pointer each over the budget.
function tooBig(filename, argv, env) {
  const facts = envFacts(env);
  const count = Math.max(argv.length, 1) + env.length;
  let units = filename.length + 1 + facts.units;
  let longest = facts.longest;
  for (let i = 0; i < argv.length; i++) {
    const n = argv[i].length;
    units += n + 1;
    if (n > longest) longest = n;
  }
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most calls stop here,
  // within the budget's floor (the stack limit is not even read).
  const shortStrings = longest * 3 + 1 <= MAX_ARG_STRLEN;
  if (shortStrings && units * 3 <= ARG_MAX - 8 * count) return false;
  self.argLimit ??= argLimit();
  const budget = self.argLimit - 8 * count;
  if (shortStrings && units * 3 <= budget) return false;
  if (units > budget) return true;
  let bytes = utf8Length(filename) + 1;
  for (let i = 0; i < argv.length; i++) {
    const n = utf8Length(argv[i]) + 1;
    if (n > MAX_ARG_STRLEN) return true;
    bytes += n;
  }
  for (let i = 0; i < env.length; i++) {
    const n = utf8Length(env[i]) + 1;
    if (n > MAX_ARG_STRLEN) return true;
    bytes += n;
  }
  return bytes > budget;
}

// What the checks need of an environment: its PATH, its total length in
// UTF-16 units (one more per string) and its longest string; looked at once
// per frozen env array (lib/frozen-memo.js).
const envFacts = lastFrozen((env) => {
  let path = DEFAULT_PATH;
  let pathSeen = false;
  let units = 0;
  let longest = 0;
  for (let i = 0; i < env.length; i++) {
    const s = env[i];
    // getenv() returns the first match.
    if (!pathSeen && s.charCodeAt(0) === 80 && s.startsWith('PATH=')) {
      path = s.slice(5);
      pathSeen = true;
    }
    units += s.length + 1;
    if (s.length > longest) longest = s.length;
  }
  return { path, units, longest };
});

function programErrno(file, path) {
  if (file.includes('/')) {
    found = file;
    return execErrno(absolute(file), true);
  }
  if (file.length > NAME_MAX / 3 && utf8Length(file) > NAME_MAX) return ENAMETOOLONG;
  return searchPath(path, file);
}

/**
 * Predicts uv_spawn's result for a spawn with these arguments: 0 when it
 * would succeed as far as can be told from here, else the positive errno
 * (constants.errno.*) it would return. `argv` includes argv[0]; `env` is the
 * child's whole environment as "NAME=value" strings; `cwd` is absolute.
 * @param {{ file: string, argv: string[], env: string[], cwd: string, uid?: number, gid?: number }} spawnArgs
 * @returns {number}
 */
export function checkSpawn({ file, argv, env, cwd, uid, gid }) {
  if (self === null) readSelf();
  let e = cwdErrno(cwd);
  if (e !== 0) return e;
  if (gid !== undefined) {
    if (self.gidMap === undefined) self.gidMap = readIdMap('/proc/self/gid_map');
    e = idErrno(gid, self.gidMap, self.setgid, self.rgid, self.sgid);
    if (e !== 0) return e;
  }
  if (uid !== undefined) {
    if (self.uidMap === undefined) self.uidMap = readIdMap('/proc/self/uid_map');
    e = idErrno(uid, self.uidMap, self.setuid, self.ruid, self.suid);
    if (e !== 0) return e;
  }
  cwdDir = cwd;
  setChild(uid === undefined ? undefined : uid >>> 0, gid === undefined ? undefined : gid >>> 0);
  e = programErrno(file, envFacts(env).path);
  lastStat = null;
  if (e !== 0) return e;
  return tooBig(found, argv, env) ? E2BIG : 0;
}

/**
 * Whether Node's spawn() throws this uv_spawn errno synchronously (true) or
 * emits it as an 'error' event on the next tick (false); Node 20-24,
 * lib/internal/child_process.js ChildProcess.prototype.spawn.
 * @param {number} errno positive errno
 * @returns {boolean}
 */
export function throwsSynchronously(errno) {
  return errno !== 0 && errno !== EACCES && errno !== EAGAIN && errno !== EMFILE &&
    errno !== ENFILE && errno !== ENOENT;
}

/**
 * The error Node's spawn() throws for this errno: message "spawn ENOTDIR",
 * negative errno, code, syscall 'spawn'.
 * @param {number} errno positive errno
 * @returns {Error}
 */
export function spawnError(errno) {
  return errnoError(errno, 'spawn');
}
