/* Build-time platform choices for spawnd, in one place.
 *
 * spawnd is Linux-only (5.4 or later): epoll for the loop,
 * clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD) to spawn (5.2), waitid(P_PIDFD)
 * to reap (5.4), pidfd_send_signal to kill without racing pid reuse (5.1).
 * Elsewhere the library uses its JS server. */
#ifndef SPAWND_PLATFORM_H
#define SPAWND_PLATFORM_H

#ifndef __linux__
#error "spawnd needs Linux (epoll, clone, pidfd); use the JS server elsewhere"
#endif

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Sizes. RSS matters (target < 2 MB), so buffers are modest and grow only
 * for the rare oversized frame. */
enum {
	SPAWND_IN_CHUNK = 128 * 1024,   /* client socket read buffer */
	SPAWND_PIPE_CHUNK = 64 * 1024,  /* one read(2) of a child pipe, at most */
	SPAWND_READS_IN_A_ROW = 32,     /* of one ready pipe, as libuv's uv__read */
	SPAWND_OUT_SOFT = 192 * 1024,   /* no pipe reads while this much is unsent */
	SPAWND_OUT_HIGH = 1024 * 1024,  /* no socket reads while this much is unsent */
	SPAWND_STDIN_MAX = 1024 * 1024, /* queued stdin per child: more is a protocol error */
	SPAWND_STACK = 64 * 1024,       /* stack of a vfork-style or parked child */
	SPAWND_PARK_MAX = 256,          /* parked children a client may ask for */
	SPAWND_EVENTS = 64,             /* loop events per wait */
};

/* Exit statuses (docs/protocol.md, "Lifetime"). */
enum {
	SPAWND_EXIT_OK = 0,
	SPAWND_EXIT_VERSION = 2,
	SPAWND_EXIT_PROTOCOL = 3,
	SPAWND_EXIT_USAGE = 100,
	SPAWND_EXIT_SYSCALL = 111,
};

static inline int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* Debug output, only with SPAWND_DEBUG=1 in the server's environment. */
extern int spawnd_debug;
#define DBG(...) \
	do { \
		if (spawnd_debug) { \
			fprintf(stderr, "spawnd[%d]: ", (int)getpid()); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

#endif
