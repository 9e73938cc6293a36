/* The event loop backend: a thin epoll wrapper (close-on-exec epoll fd). */
#ifndef SPAWND_LOOP_H
#define SPAWND_LOOP_H

#include <stdint.h>
#include <sys/epoll.h>

/* Creates the epoll instance; 0 or -errno. */
int loop_init(void);

/* Registers/changes/removes fd; ptr comes back with its events. 0 or -errno. */
int loop_add(int fd, uint32_t events, void *ptr);
int loop_mod(int fd, uint32_t events, void *ptr);
int loop_del(int fd);

/* Waits for events (timeout_ms -1 = forever); count, 0 on EINTR, or -errno. */
int loop_wait(struct epoll_event *ev, int max, int timeout_ms);

#endif
