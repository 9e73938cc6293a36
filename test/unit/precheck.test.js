// lib/precheck.js's reading of /proc/<pid>/status (the differential suite,
// test/differential/precheck.test.js, checks its answers against Node's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { parseStatus } from '../../lib/precheck.js';

test('the ids, groups and capabilities of this process, as the process API gives them', () => {
  const self = parseStatus(readFileSync('/proc/self/status', 'utf8'));
  assert.deepEqual([self.ruid, self.euid, self.rgid, self.egid], [process.getuid(), process.geteuid(), process.getgid(), process.getegid()]);
  // process.getgroups() adds the effective gid when the list lacks it.
  const withoutEgid = (list) => list.filter((g) => g !== process.getegid()).sort((a, b) => a - b);
  assert.deepEqual(withoutEgid(self.groups), withoutEgid(process.getgroups()));
});

test('no supplementary groups: none, not the next line\'s numbers', () => {
  // A process that dropped its groups, as Node's spawn with uid/gid does.
  const status = 'Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\nGroups:\t\nNStgid:\t4242\nNSpid:\t4242\nCapEff:\t0000000000000000\n';
  const parsed = parseStatus(status);
  assert.deepEqual(parsed.groups, []);
  assert.deepEqual([parsed.ruid, parsed.euid, parsed.suid, parsed.rgid, parsed.egid, parsed.sgid], [1000, 1000, 1000, 1000, 1000, 1000]);
  assert.equal(parsed.dacOverride, false);
  if (process.geteuid() === 0) {
    // The real thing: a child run as nobody, whose groups Node's spawn dropped.
    const script = 'process.stdout.write(require("fs").readFileSync("/proc/self/status", "utf8"))';
    const child = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(parseStatus(child.stdout).groups, []);
  }
});

test('capabilities: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID from CapEff', () => {
  const caps = (hex) => parseStatus(`Uid:\t0\t0\t0\t0\nCapEff:\t${hex}\n`);
  assert.deepEqual(caps('0000000000000002'), { ...caps('0000000000000002'), dacOverride: true, dirOverride: true, setuid: false, setgid: false });
  assert.equal(caps('0000000000000004').dirOverride, true);
  assert.equal(caps('0000000000000004').dacOverride, false);
  assert.equal(caps('00000000000000c0').setuid, true);
  assert.equal(caps('00000000000000c0').setgid, true);
});

test('fields found by name wherever they are: first line, last line, no trailing newline, empty at the end', () => {
  const first = parseStatus('Uid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nGroups:\t9 10');
  assert.deepEqual([first.ruid, first.euid, first.suid, first.rgid, first.egid, first.sgid], [1, 2, 3, 5, 6, 7]);
  assert.deepEqual(first.groups, [9, 10]);
  assert.deepEqual(parseStatus('Uid:\t1\t1\t1\t1\nGroups:\t').groups, []);
  assert.deepEqual(parseStatus('Uid:\t1\t1\t1\t1\nGroups:\t\n').groups, []);
  // A field name inside another's (Tgid, NStgid) is not Gid.
  const inside = parseStatus('Name:\tx\nTgid:\t77\nNStgid:\t78\nGid:\t5\t6\t7\t8\n');
  assert.deepEqual([inside.rgid, inside.egid], [5, 6]);
  // No CapEff (a text that lacks it): no capability.
  assert.equal(parseStatus('Uid:\t0\t0\t0\t0\n').dacOverride, false);
});
