/* Parked children (park.c): started before they are needed, their pids
 * announced to the client on the feed socket (fd 4), so that the client's
 * spawn() can hand out a pid at once and a SPAWN only has to give the
 * waiting child its plan. */
#ifndef SPAWND_PARK_H
#define SPAWND_PARK_H

#include <stdint.h>

struct sp_msg;
struct spawn_out;

/* Start-up: the feed (fd 4 if it is a socket, else parking stays off) and
 * the wake-up eventfd. 0, or -errno with *what naming the call. */
int park_init(int feed_fd, const char **what);

/* The client's HELLO asked for `want` parked children: the number the
 * server will keep (0 when it cannot park: no feed, or no raw system
 * calls for this architecture). */
uint32_t park_start(uint32_t want);

/* Hands the parked child m->pid the plan of SPAWN m and wakes it. *err_out
 * receives the errno of a step the child fails (0 if it execs); it must
 * stay valid until the child is reaped. On success o holds the pid, its
 * pidfd (already registered in the loop: loop_mod it) and our stdio ends.
 * -ESRCH with *syscall NULL: no such parked child (it died, or never was).
 * Other -errno: set-up failed (*syscall says where); the parked child has
 * been killed, as its pid belongs to this request. */
int park_claim(const struct sp_msg *m, volatile int *err_out,
	       struct spawn_out *o, const char **syscall);

/* A loop event for a parked child's pidfd or for the wake-up eventfd. */
void park_on_event(void *ptr);

/* Once per loop iteration: closes what woken children no longer need,
 * recycles their memory, parks new children up to the target and
 * announces them. Returns ms until it wants to run again (after a failed
 * clone), or -1. */
int park_refill(void);

#endif
