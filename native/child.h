/* Children of the server: the table by request id, their stdio, reaping. */
#ifndef SPAWND_CHILD_H
#define SPAWND_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_msg;

/* What a loop registration points at (first member of its owner). */
enum watch_kind { W_PIDFD = 1, W_STDIN, W_OUT, W_PARK, W_PARK_WAKE };
struct watch {
	uint8_t kind;
};

/* The server's end of a child's stdout (which 1) or stderr (which 2). */
struct stream {
	struct watch w;
	uint8_t which;
	uint8_t readable;       /* edge-triggered: bytes or EOF may be waiting */
	uint8_t hup;            /* the edge said the writer closed */
	uint8_t gone;           /* ... and the peer is closed (or shut down its
				 * writing: a peek saw EOF), no error pending */
	uint8_t queued;         /* on the ready list */
	uint8_t dropping;       /* CLOSEd: closed once the writer is quiet */
	uint8_t busy;           /* the last read filled a whole chunk: splice */
	uint8_t handover;       /* the client takes it over when busy (HANDED) */
	uint64_t relayed;       /* bytes read so far */
	int fd;                 /* -1: not a pipe, or closed after its END */
	uint64_t credit;        /* bytes the client still accepts */
	struct child *c;
	struct stream *prev, *next;     /* ready list */
	struct stream *drop_next;       /* dropping list */
	long long drop_at;              /* close when quiet until then (ms) */
	uint8_t drop_waits;             /* quiet periods passed with nothing unread */
};

/* One live child, from SPAWNED until EXIT and the END of every pipe.
 * Structs are recycled, never freed: a stale loop pointer (see
 * child_on_event) always points at valid memory. */
struct child {
	struct watch pw;        /* W_PIDFD */
	struct watch iw;        /* W_STDIN */
	uint32_t id;
	pid_t pid;
	int pidfd;              /* -1 once reaped */
	uint8_t exited;         /* EXIT sent; a zombie until the client's REAP */
	int in_fd;              /* server's end of stdin; -1: none or closed */
	volatile int exec_err;  /* a parked child's failed step (errno), else 0 */
	uint8_t in_watched;     /* in_fd is registered (its hang-up, at least) */
	uint8_t in_wants_out;   /* and for LOOP_WRITABLE: bytes are queued */
	uint8_t in_end;         /* STDIN_END seen: shut down once the queue drains */
	uint8_t in_shut;        /* shut down for writing; in_fd kept until reap */
	uint8_t *q;             /* stdin bytes the pipe did not take yet */
	size_t qhead, qlen, qcap;
	struct stream out[2];   /* fd 1 and fd 2 */
	struct child *next;     /* free or dead list */
};

/* Allocates the id table. 0 or -errno. */
int child_init(void);

/* Handles SPAWN, STDIN, STDIN_END, KILL, CREDIT, CLOSE and REAP. */
void child_dispatch(const struct sp_msg *m);

/* Handles a loop event whose pointer child.c or stdio.c registered. */
void child_on_event(void *ptr, uint32_t events);

/* Our copies of child `id`'s stdio ends are closed (park.c: it has its
 * own now): a stdin it closed already hangs up only from now on. */
void child_stdin_settled(uint32_t id);

/* Forgets c once it is reaped and its stdout/stderr have ended. */
void child_maybe_forget(struct child *c);

/* Recycles the children forgotten during this loop iteration. */
void child_collect(void);

#endif
