/* epoll backend of the event loop. */
#include "loop.h"

#include <errno.h>
#include <stddef.h>

static int epfd = -1;

int loop_init(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	return epfd < 0 ? -errno : 0;
}

static int ctl(int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

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

int loop_wait(struct epoll_event *ev, int max, int timeout_ms)
{
	int n = epoll_wait(epfd, ev, max, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n;
}
