/* The client connection: reads frames in large chunks, answers HELLO,
 * hands every other frame to the callback main.c registers, and batches
 * all output into one buffer written once per loop iteration (many frames
 * per write(2)). */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "platform.h"
#include "protocol.h"

struct buf {
	uint8_t *p;
	size_t head, len, cap;  /* bytes [head, len) are live */
};

static int sock = -1;
static conn_frame_fn *frame_cb;
static conn_hello_fn *hello_cb;
static conn_read_fn *read_cb;
static struct buf in, out;
static int hello_done;
static int want_out;            /* the last write hit EAGAIN: wait for writability */
static uint32_t registered;     /* interest currently registered */

static _Noreturn void die_nomem(void)
{
	DBG("out of memory");
	exit(SPAWND_EXIT_SYSCALL);
}

static void buf_fit(struct buf *b, size_t cap)
{
	uint8_t *p = realloc(b->p, cap);

	if (!p)
		die_nomem();
	b->p = p;
	b->cap = cap;
}

static void buf_compact(struct buf *b)
{
	if (b->head) {
		memmove(b->p, b->p + b->head, b->len - b->head);
		b->len -= b->head;
		b->head = 0;
	}
}

/* Makes room for n bytes after b->len, compacting before growing. */
static void buf_room(struct buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return;
	buf_compact(b);
	if (b->cap - b->len >= n)
		return;
	buf_fit(b, b->len + n > 2 * b->cap ? b->len + n : 2 * b->cap);
}

int conn_init(int fd, conn_frame_fn *on_frame, conn_hello_fn *on_hello,
	      conn_read_fn *before_read)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	in.p = malloc(SPAWND_IN_CHUNK);
	out.p = malloc(SPAWND_OUT_SOFT);
	if (!in.p || !out.p)
		return -ENOMEM;
	in.cap = SPAWND_IN_CHUNK;
	out.cap = SPAWND_OUT_SOFT;
	sock = fd;
	frame_cb = on_frame;
	hello_cb = on_hello;
	read_cb = before_read;
	registered = LOOP_READABLE;
	return loop_add(fd, LOOP_READABLE, NULL);
}

uint8_t *conn_reserve(size_t n)
{
	buf_room(&out, n);
	return out.p + out.len;
}

void conn_commit(size_t n)
{
	out.len += n;
}

void conn_send(const struct sp_msg *m)
{
	size_t n = sp_encoded_size(m);

	conn_commit(sp_encode(conn_reserve(n), m));
}

int conn_idle(void)
{
	return out.head == out.len && !want_out;
}

/* One write(2) or splice(2) straight to the socket: bytes taken, 0 when it
 * is full, or -errno. */
static ssize_t direct(const uint8_t *p, int pipe_rd, size_t n)
{
	ssize_t r;

	do
		r = p ? write(sock, p, n)
		      : splice(pipe_rd, NULL, sock, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN ? 0 : -errno;
	return r;
}

/* Reads `n` bytes of the pipe into `out`: the copy path. */
static void pipe_to_out(int pipe_rd, size_t n)
{
	ssize_t r;

	while (n > 0) {
		do
			r = read(pipe_rd, conn_reserve(n), n);
		while (r < 0 && errno == EINTR);
		if (r <= 0) {
			DBG("read(relay pipe): %s", r < 0 ? strerror(errno) : "EOF");
			exit(SPAWND_EXIT_SYSCALL);
		}
		conn_commit((size_t)r);
		n -= (size_t)r;
	}
}

int conn_send_spliced(const uint8_t *hdr, size_t hlen, int pipe_rd, size_t n)
{
	ssize_t done = conn_idle() ? direct(hdr, -1, hlen) : 0;

	if (done != (ssize_t)hlen) {
		/* The socket is full (or failing: conn_flush will say so): the
		 * rest of the frame waits in `out`. */
		done = done > 0 ? done : 0;
		memcpy(conn_reserve(hlen - (size_t)done), hdr + done, hlen - (size_t)done);
		conn_commit(hlen - (size_t)done);
		pipe_to_out(pipe_rd, n);
		return 0;
	}
	while (n > 0) {
		ssize_t moved = direct(NULL, pipe_rd, n);

		if (moved <= 0) {
			/* The socket is full: the rest through `out`, behind what
			 * went (a failure shows at conn_flush's write). */
			pipe_to_out(pipe_rd, n);
			if (moved == -EINVAL || moved == -ENOSYS)
				return (int)moved;      /* it takes no splice */
			return 0;
		}
		n -= (size_t)moved;
	}
	return 0;
}

int conn_pipe_room(void)
{
	return out.len - out.head < SPAWND_OUT_SOFT;
}

/* Reading stops while too much output waits (a client that does not read
 * must not make us buffer without bound); writing waits for writability. */
static void update_events(void)
{
	uint32_t ev = (out.len - out.head < SPAWND_OUT_HIGH ? LOOP_READABLE : 0) |
		      (want_out ? LOOP_WRITABLE : 0);
	int r;

	if (ev == registered)
		return;
	r = loop_mod(sock, ev, NULL);
	if (r < 0) {
		DBG("loop_mod(socket): %s", strerror(-r));
		exit(SPAWND_EXIT_SYSCALL);
	}
	registered = ev;
}

/* One write(2) of everything pending; 0, or -errno of a real failure. */
static int write_out(void)
{
	ssize_t n = direct(out.p + out.head, -1, out.len - out.head);

	if (n < 0)
		return (int)n;
	out.head += (size_t)n;
	return 0;
}

void conn_flush(void)
{
	int r = 0;

	if (!want_out && out.head < out.len)
		r = write_out();
	if (r < 0) {
		/* EPIPE, ECONNRESET: the client is gone, and so are we. */
		DBG("write(socket): %s", strerror(-r));
		exit(SPAWND_EXIT_OK);
	}
	if (out.head == out.len) {
		out.head = out.len = 0;
		if (out.cap > 4 * SPAWND_OUT_SOFT)
			buf_fit(&out, SPAWND_OUT_SOFT);
	}
	want_out = out.head < out.len;
	update_events();
}

/* Best effort before exiting, within 200 ms: the client may be gone. */
static void flush_before_exit(void)
{
	struct pollfd p = { .fd = sock, .events = POLLOUT };

	for (int tries = 0; out.head < out.len && tries < 10; tries++) {
		if (write_out() < 0 || (out.head < out.len && poll(&p, 1, 20) < 0))
			return;
	}
}

_Noreturn void conn_fatal(const char *why)
{
	struct sp_msg m = { .type = SP_FATAL };

	DBG("protocol error: %s", why);
	m.data.p = (const uint8_t *)why;
	m.data.n = (uint32_t)strlen(why);
	conn_send(&m);
	flush_before_exit();
	exit(SPAWND_EXIT_PROTOCOL);
}

static void on_hello(const struct sp_msg *m)
{
	struct sp_msg r = { .type = SP_S_HELLO, .version = SP_VERSION };

	r.pid = (uint32_t)getpid();
	if (m->version == SP_VERSION)
		r.parked = hello_cb(m->parked);
	conn_send(&r);
	hello_done = 1;
	if (m->version != SP_VERSION) {
		DBG("client speaks version %u", m->version);
		flush_before_exit();
		exit(SPAWND_EXIT_VERSION);
	}
}

static void on_frame(const struct sp_msg *m)
{
	if (!hello_done) {
		if (m->type != SP_HELLO)
			conn_fatal("first frame is not HELLO");
		on_hello(m);
	} else if (m->type == SP_HELLO) {
		conn_fatal("HELLO sent twice");
	} else if (m->type >= SP_S_HELLO) {
		conn_fatal("server frame sent to the server");
	} else {
		frame_cb(m);
	}
}

/* Decodes and handles every complete frame in the input buffer. */
static void parse_frames(void)
{
	struct sp_msg m;
	const char *why = NULL;
	size_t used;
	int r;

	while ((r = sp_decode(in.p + in.head, in.len - in.head, &m, &used,
			      &why)) == SP_OK) {
		on_frame(&m);
		in.head += used;
	}
	if (r == SP_BAD)
		conn_fatal(why);
	if (in.head == in.len) {
		in.head = in.len = 0;
		if (in.cap > SPAWND_IN_CHUNK)
			buf_fit(&in, SPAWND_IN_CHUNK);
		return;
	}
	/* Keep the partial frame at the front so the next read is a big one;
	 * grow only for a frame larger than the buffer. */
	buf_compact(&in);
	if (used > in.len)
		buf_room(&in, used - in.len);
}

/* Reads one chunk and handles its frames; 0 once the socket would block.
 * EOF or ECONNRESET: the client closed or died, so we finish (what was
 * read has been handled). */
static int read_in(void)
{
	ssize_t n;

	if (in.len == in.cap)
		buf_room(&in, SPAWND_IN_CHUNK);
	if (read_cb)
		read_cb();
	do
		n = read(sock, in.p + in.len, in.cap - in.len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		DBG("socket closed (%s)", n ? strerror(errno) : "EOF");
		flush_before_exit();
		exit(SPAWND_EXIT_OK);
	}
	in.len += (size_t)n;
	parse_frames();
	return 1;
}

void conn_on_event(uint32_t events)
{
	if (events & LOOP_WRITABLE) {
		want_out = 0;
		conn_flush();
	}
	if (events & (LOOP_READABLE | LOOP_HANGUP))
		read_in();
}

_Noreturn void conn_finish(void)
{
	DBG("parent exited: finishing the requests received");
	while (read_in())
		;
	flush_before_exit();
	exit(SPAWND_EXIT_OK);
}
