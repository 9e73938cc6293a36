/* epoll backend of the event loop (loop.h). */
#include "loop.h"

#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>

#include "platform.h"

static int epfd = -1;
static struct epoll_event kev[SPAWND_EVENTS];

int loop_init(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	return epfd < 0 ? -errno : 0;
}

/* EPOLLHUP and EPOLLERR are always reported; EPOLLRDHUP only if asked. */
static uint32_t to_epoll(uint32_t m)
{
	return (m & LOOP_READABLE ? EPOLLIN : 0) |
	       (m & LOOP_WRITABLE ? EPOLLOUT : 0) |
	       (m & LOOP_HANGUP ? EPOLLRDHUP : 0) |
	       (m & LOOP_EDGE ? EPOLLET : 0) |
	       (m & LOOP_ONCE ? EPOLLONESHOT : 0);
}

static uint32_t from_epoll(uint32_t e)
{
	return (e & EPOLLIN ? LOOP_READABLE : 0) |
	       (e & EPOLLOUT ? LOOP_WRITABLE : 0) |
	       (e & (EPOLLHUP | EPOLLRDHUP | EPOLLERR) ? LOOP_HANGUP : 0) |
	       ((e & (EPOLLHUP | EPOLLERR)) == EPOLLHUP ? LOOP_CLOSED : 0);
}

static int ctl(int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.ptr = ptr };

	return epoll_ctl(epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int loop_add(int fd, uint32_t events, void *ptr)
{
	return ctl(EPOLL_CTL_ADD, fd, events, ptr);
}

int loop_mod(int fd, uint32_t events, void *ptr)
{
	return ctl(EPOLL_CTL_MOD, fd, events, ptr);
}

int loop_del(int fd)
{
	return ctl(EPOLL_CTL_DEL, fd, 0, NULL);
}

int loop_wait(struct loop_event *ev, int max, int timeout_ms)
{
	int n = epoll_wait(epfd, kev, max < SPAWND_EVENTS ? max : SPAWND_EVENTS,
			   timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		ev[i].ptr = kev[i].data.ptr;
		ev[i].events = from_epoll(kev[i].events);
	}
	return n;
}
