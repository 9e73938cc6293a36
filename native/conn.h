/* The client connection: fd 3, framed input, one batched output buffer. */
#ifndef SPAWND_CONN_H
#define SPAWND_CONN_H

#include <stddef.h>
#include <stdint.h>

struct sp_msg;

/* Handles one request frame (any type but HELLO, which conn.c answers). */
typedef void conn_frame_fn(const struct sp_msg *m);

/* The client's HELLO asked for `parked` parked children per server: returns
 * the number the server keeps (its S_HELLO says so). */
typedef uint32_t conn_hello_fn(uint32_t parked);

/* Called before each read of the socket (the frames of a read are handled
 * right after it, and only then). */
typedef void conn_read_fn(void);

/* Takes over the socket (non-blocking, registered in the loop with a NULL
 * pointer); on_hello answers the handshake's request, on_frame gets every
 * request after it, before_read (if not NULL) precedes every read.
 * 0 or -errno. */
int conn_init(int fd, conn_frame_fn *on_frame, conn_hello_fn *on_hello,
	      conn_read_fn *before_read);

/* Room for n more output bytes; the caller fills some and conn_commit()s
 * what it used. Exits (111) if memory runs out. */
uint8_t *conn_reserve(size_t n);
void conn_commit(size_t n);

/* Queues one encoded message. */
void conn_send(const struct sp_msg *m);

/* 1 when no output waits: a frame written now goes straight to the socket. */
int conn_idle(void);

/* Sends a frame whose `n`-byte payload waits in the pipe `pipe_rd` (and
 * nothing else does; conn_idle() must be true): the header `hdr` is
 * written to the socket and the payload spliced after it (no copy through
 * our memory). Whatever the socket does not take now is read from the
 * pipe into the output buffer, behind what went. Returns -EINVAL or
 * -ENOSYS when the socket takes no splice (the rest went by copy), else
 * 0. Exits (111) if the pipe cannot be read. */
int conn_send_spliced(const uint8_t *hdr, size_t hlen, int pipe_rd, size_t n);

/* 1 while child pipes may be read (little output is waiting to be sent). */
int conn_pipe_room(void);

/* Handles readiness of the socket: reads and dispatches frames, or writes. */
void conn_on_event(uint32_t events);

/* Writes what the socket takes; called once per loop iteration. */
void conn_flush(void);

/* The parent exited: handles every frame the socket still holds (all it
 * sent before dying stays readable), flushes briefly, exits 0. */
_Noreturn void conn_finish(void);

/* Sends FATAL, flushes briefly, exits with status 3. */
_Noreturn void conn_fatal(const char *why);

#endif
