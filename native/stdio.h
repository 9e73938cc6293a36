/* A child's stdio as the server sees it (stdio.c): stdout/stderr
 * forwarded under credit, stdin queued and acknowledged. The structs
 * (struct stream, struct child) live in child.h.
 *
 * Named after its .c file; it shadows <stdio.h> only for "quoted"
 * includes from this directory, so native/ must never be put on the -I
 * path (every <stdio.h> would then find this file). */
#ifndef SPAWND_STDIO_H
#define SPAWND_STDIO_H

#include <stddef.h>
#include <stdint.h>

struct child;
struct stream;

/* The socket busy streams are handed over through (fd 5, from the
 * client), if it is one: a SOCK_SEQPACKET socket. */
void stdio_handover_init(int fd);

/* stdout/stderr forwarding with credits; `handover`: the client takes a
 * busy one over (HANDED). */
void stream_start(struct stream *s, struct child *c, int which, int fd,
		  uint32_t window, int handover);
void stream_on_event(struct stream *s, uint32_t events);
void stream_credit(struct stream *s, uint32_t bytes);
/* Closes our end without END (the client sent CLOSE). */
void stream_close(struct stream *s);
/* The client's CLOSE: closes once the writer is quiet (see stdio.c). */
void stream_drop(struct stream *s);
/* Closes dropped streams now due; ms until the next one, or -1. */
int streams_drop_due(void);
/* Reads ready pipes, one chunk each per round, while output room lasts. */
void streams_pump(void);
/* 1 if ready pipes can be read now: the loop must poll, not block. */
int streams_busy(void);

/* The stdin queue with WROTE acknowledgements. */
void stdin_write(struct child *c, const uint8_t *p, size_t n);
void stdin_end(struct child *c);
/* Closes stdin at reap: END fd 0 EPIPE first if bytes were still queued. */
void stdin_reaped(struct child *c);
/* Answers a STDIN frame that cannot be delivered: END fd 0 EPIPE. */
void stdin_refuse(uint32_t id);
void stdin_close(struct child *c);
void stdin_watch(struct child *c);
void stdin_check_hangup(struct child *c);
void stdin_on_event(struct child *c, uint32_t events);

#endif
