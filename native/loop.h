/* The event loop backend, behind backend-neutral masks: loop.c is epoll;
 * a poll or kqueue backend is one more file implementing these five calls.
 * Nothing else in the server names EPOLL* or includes <sys/epoll.h>. */
#ifndef SPAWND_LOOP_H
#define SPAWND_LOOP_H

#include <stdint.h>

/* Interest (loop_add/loop_mod) and readiness (loop_wait) masks. */
enum {
	LOOP_READABLE = 1,      /* bytes, EOF, or a pidfd whose process exited */
	LOOP_WRITABLE = 2,
	/* Readiness: the peer closed or shut down its side, or an error is
	 * pending (read to learn which). Interest: also report a peer's
	 * shutdown(SHUT_WR); a full close is reported without asking. */
	LOOP_HANGUP = 4,
	/* Interest only: report changes, not states (epoll's EPOLLET). The
	 * owner must then read/write until EAGAIN before expecting more. */
	LOOP_EDGE = 8,
	/* Interest only: report once, then nothing until loop_mod re-arms it
	 * (epoll's EPOLLONESHOT); the registration stays until the close. */
	LOOP_ONCE = 16,
	/* Readiness only, with LOOP_HANGUP: the peer is gone (closed, not just
	 * shut down for writing) and no error is pending, so nothing can come
	 * after what is queued now (epoll's EPOLLHUP without EPOLLERR; libuv's
	 * POLLHUP, on which it takes a short read for the end). */
	LOOP_CLOSED = 32,
};

/* One readiness report: the pointer given at registration, and its mask. */
struct loop_event {
	void *ptr;
	uint32_t events;
};

/* Creates the backend (close-on-exec); 0 or -errno. */
int loop_init(void);

/* Registers/changes/removes fd; ptr comes back with its events. 0 or -errno.
 * Closing an fd also removes it. */
int loop_add(int fd, uint32_t events, void *ptr);
int loop_mod(int fd, uint32_t events, void *ptr);
int loop_del(int fd);

/* Waits for events (timeout_ms -1 = forever); count, 0 on EINTR, or -errno. */
int loop_wait(struct loop_event *ev, int max, int timeout_ms);

#endif
