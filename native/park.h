/* Parked children (park.c): started before they are needed, their pids
 * announced to the client on the feed socket (fd 4), so that the client's
 * spawn() can hand out a pid at once and a SPAWN only has to give the
 * waiting child its plan. */
#ifndef SPAWND_PARK_H
#define SPAWND_PARK_H

#include <stdint.h>
#include <sys/types.h>

struct sp_msg;
struct spawn_out;

/* Start-up: the feed (fd 4 if it is a socket, else parking stays off), the
 * wake-up eventfd, and the client's pid (signals it sends a parked child
 * are kept, others dropped at wake-up). 0, or -errno with *what naming the
 * call. */
int park_init(int feed_fd, pid_t client_pid, const char **what);

/* The client's HELLO asked for `want` parked children: the number the
 * server will keep (0 when it cannot park: no feed, or no raw system
 * calls for this architecture). */
uint32_t park_start(uint32_t want);

/* Prepares the parked child m->pid for SPAWN m: its plan, its stdio.
 * *err_out receives the errno of a step the child fails (0 if it execs);
 * it must stay valid until the child is reaped. On success o holds the pid,
 * its pidfd (already registered in the loop: loop_mod it), our stdio ends,
 * and o->park, to pass to park_go() once the pipes are watched (or to
 * park_cancel() after killing and reaping the child).
 * -ESRCH with *syscall NULL: no such parked child (never announced).
 * -ECHILD: it died while parked; o->pid and o->pidfd are its zombie's.
 * Other -errno: set-up failed (*syscall says where); the parked child has
 * been killed, as its pid belongs to this request. */
int park_claim(const struct sp_msg *m, volatile int *err_out,
	       struct spawn_out *o, const char **syscall);

/* Wakes a claimed child: it execs its plan. */
void park_go(void *claimed);

/* Frees a claimed child's slot after the caller killed and reaped it. */
void park_cancel(void *claimed);

/* A loop event for a parked child's pidfd or for the wake-up eventfd. */
void park_on_event(void *ptr);

/* Once per loop iteration: closes what woken children no longer need,
 * recycles their memory, parks new children up to the target and
 * announces them. Returns ms until it wants to run again (after a failed
 * clone), or -1. */
int park_refill(void);

#endif
