/* Starting one program: stdio plumbing, PATH search, and the child's side
 * of the exec (plan_exec), run by a vfork-style clone (spawn_start) or by
 * a parked child (park.c). */
#ifndef SPAWND_SPAWN_H
#define SPAWND_SPAWN_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_msg;
struct envset;

/* Everything the child needs, prepared by the server. */
struct plan {
	const char *path;       /* what to execve */
	char **argv;            /* argv[-1] is spare, for the /bin/sh fallback */
	char **envp;            /* env's: held until plan_release */
	struct envset *env;
	const char *cwd;        /* NULL: the server's */
	int src[3];             /* fds to put on 0, 1, 2; all >= 3 */
	uint32_t flags, uid, gid;
	pid_t pgid;             /* non-zero: join this process group (a parked child) */
	volatile int err;       /* vfork path: errno, set by the child when it fails */
};

/* Where a plan's strings live until the exec has copied them. */
struct plan_mem {
	char *arena;            /* strings and pointer arrays */
	size_t cap;
	char path[PATH_MAX], scratch[PATH_MAX];
};

/* A started child. fds are the server's ends of the PIPE entries (socket
 * pairs): [0] stdin, [1]/[2] stdout/stderr; -1 for others.
 * All are close-on-exec; [0..2] are non-blocking. */
struct spawn_out {
	pid_t pid;
	int pidfd;
	int fds[3];
	void *park;             /* a claimed parked child's slot (park_go) */
};

/* Start-up: /dev/null, copies of the server's fds 0-2, the child stack, the
 * signals children must reset. Call after the server's signal setup.
 * 0, or -errno with *what naming the call that failed. */
int spawn_init(const char **what);

/* Takes note of the environment a validated SPAWN carries: it becomes the
 * one later SPAWNs with SAME_ENV run with (docs/protocol.md). Call it for
 * every SPAWN, first: the client counts on it whatever becomes of the
 * request. 0; -ENOENT for SAME_ENV before any environment came; -ENOMEM. */
int spawn_note_env(const struct sp_msg *m);

/* Lets go of a plan's environment (once its child has exec'd, or will
 * never run); no-op for a plan without one. */
void plan_release(struct plan *p);

/* Builds the plan of a validated SPAWN in mem, searches the PATH and opens
 * the stdio: child_end[] are the fds the child takes (the server closes them
 * once the child has its own copies), server_end[] ours. The plan holds the
 * noted environment (plan_release). 0, or -errno with *syscall "spawn" (the
 * program lookup) or the call that failed. On failure nothing stays open
 * or held. */
int spawn_prepare(const struct sp_msg *m, struct plan *p, struct plan_mem *mem,
		  int child_end[3], int server_end[3], const char **syscall);

/* The child's side: signals at their defaults, setsid, stdio, cwd, ids, no
 * parent-death signal, empty mask, execve. Raw system calls only (it runs
 * on the server's memory, see rawsys.h). Returns -errno when it failed. */
long plan_exec(struct plan *p);

/* Sets every signal the server does not leave at SIG_DFL back to it (raw
 * system calls, for the child side). */
void plan_reset_signals(void);

/* Gives back an arena grown for a huge request. */
void plan_mem_trim(struct plan_mem *mem);

/* Closes the fds of a three-entry array that are open, and marks them -1. */
void close_fds3(int fds[3]);

/* Starts the program of a validated SPAWN now, with a vfork-style clone
 * (the server waits until the exec). 0, or -errno with *syscall set:
 * "spawn" when the program could not be started (not found, not
 * executable, bad cwd, setuid refused, fork limit...), else the server-side
 * call that failed ("socketpair", "fcntl", "malloc"). */
int spawn_start(const struct sp_msg *m, struct spawn_out *o,
		const char **syscall);

#endif
