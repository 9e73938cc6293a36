/* Starting one program: stdio plumbing, PATH search, vfork-style clone. */
#ifndef SPAWND_SPAWN_H
#define SPAWND_SPAWN_H

#include <sys/types.h>

struct sp_msg;

/* A started child. fds are the server's ends of the PIPE entries (socket
 * pairs): [0] stdin, [1]/[2] stdout/stderr; -1 for others.
 * All are close-on-exec; [0..2] are non-blocking. */
struct spawn_out {
	pid_t pid;
	int pidfd;
	int fds[3];
};

/* Start-up: /dev/null, copies of the server's fds 0-2, the child stack, the
 * signals children must reset. Call after the server's signal setup.
 * 0, or -errno with *what naming the call that failed. */
int spawn_init(const char **what);

/* Starts the program of a validated SPAWN. 0, or -errno with *syscall set:
 * "spawn" when the program could not be started (not found, not
 * executable, bad cwd, setuid refused, fork limit...), else the server-side
 * call that failed ("socketpair", "fcntl", "malloc"). */
int spawn_start(const struct sp_msg *m, struct spawn_out *o,
		const char **syscall);

#endif
