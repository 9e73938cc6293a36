// `spawnpool/register` is imported for its effect only: node:child_process's
// spawn, exec and execFile become spawnpool's (see docs/register.md).
export {};
