/* A child's pipes: stdout/stderr forwarded as DATA within the client's
 * credit, stdin written from STDIN frames with WROTE acknowledgements.
 *
 * Pipes are edge-triggered: an event only sets `readable`; reading happens
 * in streams_pump(), which leaves a stream alone while its credit is zero
 * (the pipe fills and the child blocks in write(2)) or while the output
 * buffer is full (a slow client stops all reading: memory stays bounded). */
#include "stdio.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "conn.h"
#include "loop.h"
#include "platform.h"
#include "protocol.h"

#define DROP_QUIET_MS 2
#define DROP_EMPTY_WAITS 4   /* quiet periods an empty socket waits for its writer */

static struct stream *drop_head;

/* Whether the socket still holds bytes to read. A read (or splice) can
 * stop short of what is queued: after a message that carries fds
 * (SCM_RIGHTS), before an out-of-band byte, or when the relay pipe ran out
 * of slots; the edge is spent then, so ask (libuv, level-triggered, would
 * simply be woken again). Unknown counts as queued: the next read's
 * EAGAIN settles it. */
static int still_queued(int fd)
{
	int unread = 0;

	return ioctl(fd, FIONREAD, &unread) < 0 || unread > 0;
}

/* After a short read: whether more is queued (1) or not (0), as
 * still_queued says, or -errno. One byte is peeked where still_queued asks
 * FIONREAD, for the same syscall: a peek also tells EOF (the writer closed
 * or shut down its end: nothing can follow), which marks the stream's
 * writer gone, so that its END goes out now, with its last bytes, rather
 * than after one more wake-up for the hang-up a fast child (echo) leaves
 * behind once we have closed our copy of its end. A peek takes a pending
 * socket error as a read would (the read after it would say EOF): it is
 * returned, for the stream to end with. */
static int queued_after_short_read(struct stream *s)
{
	uint8_t b;
	ssize_t n;

	do
		n = recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return 1;
	if (n == 0) {
		s->hup = 1;
		s->gone = 1;
		return 0;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct stream *ready_head, *ready_tail;

/* Where busy streams go to the client (docs/protocol.md, "Handover"). */
static int handover_fd = -1;

void stdio_handover_init(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		return;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		DBG("fcntl (handover): %s", strerror(errno));
		return;
	}
	handover_fd = fd;
	DBG("handover: busy streams go to the client");
}

static void ready_push(struct stream *s)
{
	if (s->queued)
		return;
	s->queued = 1;
	s->next = NULL;
	s->prev = ready_tail;
	if (ready_tail)
		ready_tail->next = s;
	else
		ready_head = s;
	ready_tail = s;
}

static void ready_unlink(struct stream *s)
{
	if (!s->queued)
		return;
	s->queued = 0;
	if (s->prev)
		s->prev->next = s->next;
	else
		ready_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		ready_tail = s->prev;
}

static void ready_update(struct stream *s)
{
	if (s->fd >= 0 && s->readable && s->credit > 0)
		ready_push(s);
	else
		ready_unlink(s);
}

void stream_start(struct stream *s, struct child *c, int which, int fd,
		  uint32_t window, int handover)
{
	s->handover = handover && handover_fd >= 0;
	s->relayed = 0;
	s->w.kind = W_OUT;
	s->which = (uint8_t)which;
	s->readable = 0;
	s->hup = 0;
	s->gone = 0;
	s->dropping = 0;
	s->busy = 0;
	s->queued = 0;
	s->fd = fd;
	s->credit = window;
	s->c = c;
}

void stream_on_event(struct stream *s, uint32_t events)
{
	if (s->dropping) {
		/* The writer is still writing: wait for it to block. */
		s->drop_at = (events & LOOP_HANGUP) ? 0 : now_ms() + DROP_QUIET_MS;
		return;
	}
	s->readable = 1;
	/* The writer has closed or shut down its side (or an error waits):
	 * EOF waits behind the data, and no further edge will announce it. */
	if (events & LOOP_HANGUP)
		s->hup = 1;
	if (events & LOOP_CLOSED)
		s->gone = 1;
	ready_update(s);
}

void stream_credit(struct stream *s, uint32_t bytes)
{
	s->credit += bytes;
	ready_update(s);
}

void stream_close(struct stream *s)
{
	if (s->fd < 0)
		return;
	ready_unlink(s);
	close(s->fd);           /* also leaves the loop */
	s->fd = -1;
	child_maybe_forget(s->c);
}

/* The client destroyed the stream. Closing a socket with bytes unread
 * resets its writer (ECONNRESET: `yes` exits 1 with "Connection reset by
 * peer", as under Node, whose reader goes away while the writer is blocked
 * on a full pipe); closing it while the writer is mid-write, or empty,
 * gives EPIPE and SIGPIPE instead, and we read so eagerly that the writer
 * is rarely blocked. So we stop reading and close once the writer has been
 * quiet for DROP_QUIET_MS (blocked on the full socket, or idle), or has
 * gone, or the child is reaped. A quiet writer with nothing unread may just
 * be descheduled (a loaded machine) between two writes: it gets a few more
 * periods to write before the close, which then resets it as Node's
 * blocked writer is reset; a writer idle all that time gets EPIPE, as
 * Node's idle one. */
void stream_drop(struct stream *s)
{
	if (s->fd < 0 || s->dropping)
		return;
	if (s->hup || s->c->pidfd < 0) {
		stream_close(s);
		return;
	}
	s->dropping = 1;
	s->drop_waits = 0;
	s->credit = 0;
	s->drop_at = now_ms() + DROP_QUIET_MS;
	ready_unlink(s);
	s->drop_next = drop_head;
	drop_head = s;
}

/* Closes the dropped streams whose writer went quiet; returns the wait (ms)
 * until the next one is due, or -1 when none is left. */
int streams_drop_due(void)
{
	struct stream **at = &drop_head, *s;
	long long now = now_ms(), wait = -1;

	while ((s = *at)) {
		if (s->fd >= 0 && s->dropping && s->drop_at != 0 && now >= s->drop_at &&
		    s->c->pidfd >= 0 && !s->c->exited && s->drop_waits < DROP_EMPTY_WAITS &&
		    !still_queued(s->fd)) {
			s->drop_waits++;
			s->drop_at = now + DROP_QUIET_MS;
		}
		if (s->fd >= 0 && s->dropping && now < s->drop_at) {
			if (wait < 0 || s->drop_at - now < wait)
				wait = s->drop_at - now;
			at = &s->drop_next;
			continue;
		}
		*at = s->drop_next;
		s->dropping = 0;
		stream_close(s);
	}
	return (int)wait;
}

static void stream_end(struct stream *s, int err);

/* Hands the client our end of a busy stream: one message on the handover
 * socket (`u32 id, u8 fd` with the fd attached), then HANDED behind the
 * stream's DATA. From then on the client reads the child directly and we
 * forget the stream, as after its END. 1 if handed over; 0 if the socket
 * would not take it now (the client is behind, or holds too many fds in
 * flight): the stream stays ours, relayed as before, for good. */
static int stream_hand_over(struct stream *s)
{
	uint8_t body[5];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = body, .iov_len = sizeof(body) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.space, .msg_controllen = sizeof(ctl.space) };
	struct cmsghdr *cm;
	struct sp_msg m = { .type = SP_HANDED, .id = s->c->id, .fd = s->which };
	ssize_t n;
	int r, err;

	s->handover = 0;
	for (int i = 0; i < 4; i++)     /* little-endian, as in every frame */
		body[i] = (uint8_t)(m.id >> (8 * i));
	body[4] = s->which;
	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &s->fd, sizeof(int));
	/* Our registration would outlive our close (the client holds the
	 * socket): it ends first, and comes back if the send fails. */
	if ((r = loop_del(s->fd)) < 0) {
		DBG("epoll_ctl DEL (handover of %u fd %d): %s", m.id, s->which, strerror(-r));
		return 0;
	}
	do
		n = sendmsg(handover_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : EPROTO;   /* a SOCK_SEQPACKET send is whole or fails */
	if (n == (ssize_t)sizeof(body)) {
		DBG("handover of %u fd %d after %llu bytes relayed", m.id, s->which,
		    (unsigned long long)s->relayed);
		conn_send(&m);
		stream_close(s);
		return 1;
	}
	DBG("handover of %u fd %d: %s", m.id, s->which, strerror(err));
	if (err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == EBADF) {
		/* The client closed its end: no more handovers. */
		close(handover_fd);
		handover_fd = -1;
	}
	if ((r = loop_add(s->fd, LOOP_READABLE | LOOP_HANGUP | LOOP_EDGE, &s->w)) < 0)
		stream_end(s, -r);      /* cannot be watched again: it ends */
	return 0;
}

/* END (errno 0 at EOF, else the read error), then close. */
static void stream_end(struct stream *s, int err)
{
	struct sp_msg m = { .type = SP_END, .id = s->c->id, .fd = s->which,
			    .err = err };

	conn_send(&m);
	stream_close(s);
}

/* How a read left the stream: not known to be empty, emptied (a short
 * read), or emptied by read(2) itself (whose short count, as libuv takes
 * it, says all that was queued is read). */
enum { DRAINED = 1, DRAINED_READ = 2 };

/* One read of at most min(credit, 64 KiB), straight into the output
 * buffer, or spliced past it (see relay_splice). */
static void stream_read_once(struct stream *s, int *drained);

/* A pipe the bytes of a busy stream pass through on their way from the
 * child's socket to the client's: two splice(2) calls move page references
 * (Linux 6.5 and later, for sockets) where a read and a write copied the
 * bytes twice. Made at the first use; -1 if it could not be, or once
 * splice turned out not to work here (the copy is used then). */
static int relay[2] = { -1, -1 };
static int relay_state;         /* 0 not tried, 1 works, -1 off */

enum { SPLICE_MIN = 16 * 1024 };        /* smaller reads are cheaper copied */

/* No more splicing: the copy path from now on, and the pipe closed (it is
 * empty whenever this runs). */
static void relay_off(void)
{
	relay_state = -1;
	for (int i = 0; i < 2; i++) {
		if (relay[i] >= 0)
			close(relay[i]);
		relay[i] = -1;
	}
}

static int relay_ready(void)
{
	if (relay_state == 0) {
		relay_state = -1;
		if (pipe2(relay, O_CLOEXEC | O_NONBLOCK) < 0) {
			DBG("pipe2 (relay): %s", strerror(errno));
			return 0;
		}
		/* Room for a whole chunk however the socket cut it into pages
		 * (one slot per fragment). A user over its pipe quota gets a
		 * pipe of 2 slots: splicing 8 KiB at a time would cost more
		 * than it saves, so then there is no relay. */
		if (fcntl(relay[1], F_SETPIPE_SZ, 4 * SPAWND_PIPE_CHUNK) < 0)
			DBG("F_SETPIPE_SZ (relay): %s", strerror(errno));
		if (fcntl(relay[1], F_GETPIPE_SZ) < 2 * SPAWND_PIPE_CHUNK) {
			DBG("relay pipe too small: relaying by copy");
			relay_off();
			return 0;
		}
		relay_state = 1;
		DBG("relay: busy streams are spliced");
	}
	return relay_state == 1;
}

/* One chunk of a busy stream, spliced: returns what read(2) would (bytes,
 * or -1 with errno EAGAIN), or -2 when splicing is not possible now
 * (output is waiting, or splice does not work here): read instead. */
static ssize_t relay_splice(struct stream *s, size_t want)
{
	uint8_t hdr[SP_DATA_HDR];
	ssize_t n;

	if (!s->busy || want < SPLICE_MIN || !conn_idle() || !relay_ready())
		return -2;
	do
		n = splice(s->fd, NULL, relay[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
		DBG("splice: %s; relaying by copy", strerror(errno));
		relay_off();
		return -2;
	}
	/* EOF, and errors, are read(2)'s to tell: splice returns 0 when it
	 * cannot get a page too, and EFAULT for its own failures. */
	if (n == 0 || (n < 0 && errno != EAGAIN))
		return -2;
	if (n > 0) {
		sp_put_data_hdr(hdr, s->c->id, s->which, (uint32_t)n);
		if (conn_send_spliced(hdr, sizeof(hdr), relay[0], (size_t)n) < 0) {
			DBG("splice into the socket failed: relaying by copy");
			relay_off();
		}
	}
	return n;
}

/* Whether the stream may go to the client at all: still ours, its client
 * takes handovers, and the handover socket is there. */
static int may_hand_over(const struct stream *s)
{
	return s->fd >= 0 && s->handover && handover_fd >= 0;
}

/* Whether a stream goes to the client now. What fits in one chunk stays
 * relayed (a handover costs the client more than that chunk costs us);
 * after a full chunk, with more behind it, the client's reads of the
 * pipe cost less than our relay (docs/benchmarks.md, "Twelfth pass"),
 * unless the writer has gone and little is left: that is relayed too.
 * (busy_from_the_start() makes the same choice before the first read.) */
static int worth_handing_over(struct stream *s)
{
	int unread = 0;

	if (!may_hand_over(s) || !s->busy || s->relayed < SPAWND_PIPE_CHUNK)
		return 0;
	return !s->hup || ioctl(s->fd, FIONREAD, &unread) < 0 || unread >= SPAWND_PIPE_CHUNK / 2;
}

/* Whether a stream not read yet goes to the client before its first read:
 * more than a chunk is queued already (the writer outran us), so the
 * relay of that first chunk (our read and write of it, the client's read
 * and copy of it) would only precede a handover anyway. It is
 * worth_handing_over's test, made on what is queued (with the writer
 * gone, at least half a chunk behind the first), whatever the credit: a
 * window smaller than a chunk, whose reads never fill one, does not keep
 * such a stream from going over here (its credit is void from then on).
 * One FIONREAD at a stream's first read (again only after a first read
 * that found nothing: EAGAIN); docs/benchmarks.md, "Fourteenth pass". */
static int busy_from_the_start(struct stream *s)
{
	int unread = 0;

	if (!may_hand_over(s) || s->relayed > 0 ||
	    ioctl(s->fd, FIONREAD, &unread) < 0 || unread <= SPAWND_PIPE_CHUNK)
		return 0;
	return !s->hup || unread - SPAWND_PIPE_CHUNK >= SPAWND_PIPE_CHUNK / 2;
}

/* Reads a ready stream as libuv reads a readable pipe: up to 32 chunks
 * in a row, until it is empty (or out of credit, or the output backs up),
 * then the EOF right behind when the writer is gone. Node delivers what
 * one pipe holds before the bytes of a pipe that became readable later,
 * and a pipe's last bytes and its EOF in one go (libuv reports POLLHUP's
 * EOF after a short read), so neither may wait behind other streams. As
 * libuv does, a short read of a socket whose peer is closed (or shut
 * down: a peek saw it) is its end: no read(2) for the 0. (A read also
 * stops short at a message that carried fds, or at an out-of-band byte:
 * a child that sends those on its stdout and exits loses what follows
 * them, as under Node.) */
static void stream_read(struct stream *s)
{
	int drained = 0;

	if (s->readable && s->credit > 0 && busy_from_the_start(s) && stream_hand_over(s))
		return;
	for (int i = 0; i < SPAWND_READS_IN_A_ROW && !drained && s->fd >= 0 && s->readable &&
	     s->credit > 0 && (i == 0 || conn_pipe_room()); i++) {
		stream_read_once(s, &drained);
		/* Bulk output, more likely to follow: the client reads it. */
		if (worth_handing_over(s) && stream_hand_over(s))
			return;
	}
	if (drained && s->fd >= 0 && s->hup && s->credit > 0) {
		if (drained == DRAINED_READ && s->gone)
			stream_end(s, 0);
		else
			stream_read_once(s, &drained);
	}
	ready_update(s);
}

static void stream_read_once(struct stream *s, int *drained)
{
	size_t want = s->credit < SPAWND_PIPE_CHUNK ? (size_t)s->credit
						     : SPAWND_PIPE_CHUNK;
	ssize_t n = relay_splice(s, want);
	int copied = n == -2;   /* read(2), not splice(2), which stops at the relay pipe's room */

	if (n == -2) {
		uint8_t *dst = conn_reserve(SP_DATA_HDR + want);

		do
			n = recv(s->fd, dst + SP_DATA_HDR, want, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n > 0) {
			sp_put_data_hdr(dst, s->c->id, s->which, (uint32_t)n);
			conn_commit(SP_DATA_HDR + (size_t)n);
		}
	}
	if (n > 0) {
		/* Short, but perhaps not empty (see queued_after_short_read);
		 * a writer that has gone is read on to EOF anyway. */
		int q = (size_t)n < want && !s->hup ? queued_after_short_read(s) : 0;
		int left = q > 0;

		/* A full chunk: more is likely to follow, worth splicing (a
		 * backlog of small pieces splices a few KiB at a time: read). */
		s->busy = (size_t)n == SPAWND_PIPE_CHUNK || (left && (size_t)n >= SPLICE_MIN);
		s->credit -= (size_t)n;
		s->relayed += (size_t)n;
		/* A short read emptied the pipe: the next write is a new edge
		 * (unless the writer has gone: then read on to EOF). */
		if ((size_t)n < want && !left && !s->hup)
			s->readable = 0;
		*drained = (size_t)n < want && !left ? (copied ? DRAINED_READ : DRAINED) : 0;
		if (q < 0)
			stream_end(s, -q);      /* behind the bytes just read */
	} else if (n == 0) {
		stream_end(s, 0);
	} else if (errno == EAGAIN) {
		s->readable = 0;
	} else {
		stream_end(s, errno);
	}
}

void streams_pump(void)
{
	struct stream *last = ready_tail, *s;

	/* At most 32 chunks per stream per round (stream_read), so one
	 * chatty child cannot starve the others; streams still ready go
	 * back to the tail. */
	while ((s = ready_head) && conn_pipe_room()) {
		ready_unlink(s);
		stream_read(s);
		if (s == last)
			break;
	}
}

int streams_busy(void)
{
	return ready_head && conn_pipe_room();
}

static void wrote(struct child *c, size_t n)
{
	struct sp_msg m = { .type = SP_WROTE, .id = c->id, .bytes = (uint32_t)n };

	conn_send(&m);
}

static void send_end0(uint32_t id, int err)
{
	struct sp_msg m = { .type = SP_END, .id = id, .fd = 0, .err = err };

	conn_send(&m);
}

void stdin_refuse(uint32_t id)
{
	send_end0(id, EPIPE);
}

/* END fd 0 for c, unless its exec failed (the child wrote exec_err before
 * it exited, and so before its end of stdin closed): the SPAWN_ERROR that
 * follows at its exit ends stdin on the client as a failed spawn's, its
 * pending write failing without an 'error' event; an END before it would
 * raise one (docs/protocol.md). */
static void refuse(struct child *c, int err)
{
	DBG("stdin of %u refused: %s (queued %zu)", c->id, strerror(err), c->qlen - c->qhead);
	if (c->exec_err == 0)
		send_end0(c->id, err);
}

/* Writing failed: END fd 0 with the write's errno. That is EPIPE when the
 * child closed its stdin even with our bytes unread: the peer's shutdown
 * is checked before the ECONNRESET its close left pending. */
static void stdin_failed(struct child *c, int err)
{
	refuse(c, err);
	stdin_close(c);
}

/* Writes what the pipe takes; bytes written, or -1 after stdin_failed(). */
static ssize_t write_some(struct child *c, const uint8_t *p, size_t n)
{
	ssize_t w;

	do
		w = send(c->in_fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0 && errno == EAGAIN)
		return 0;
	if (w < 0) {
		stdin_failed(c, errno);
		return -1;
	}
	if (w > 0)
		wrote(c, (size_t)w);
	return w;
}

static void enqueue(struct child *c, const uint8_t *p, size_t n)
{
	size_t live = c->qlen - c->qhead;

	if (live + n > SPAWND_STDIN_MAX)
		conn_fatal("more than 1 MiB of stdin queued for one child");
	if (c->qcap - c->qlen < n && c->qhead) {
		memmove(c->q, c->q + c->qhead, live);
		c->qhead = 0;
		c->qlen = live;
	}
	if (c->qcap - c->qlen < n) {
		size_t cap = live + n > 2 * c->qcap ? live + n : 2 * c->qcap;
		uint8_t *q = realloc(c->q, cap);

		if (!q) {
			DBG("out of memory (stdin queue of %u)", c->id);
			exit(SPAWND_EXIT_SYSCALL);
		}
		c->q = q;
		c->qcap = cap;
	}
	memcpy(c->q + c->qlen, p, n);
	c->qlen += n;
}

void stdin_write(struct child *c, const uint8_t *p, size_t n)
{
	ssize_t w = 0;
	int r;

	if (c->in_fd < 0 || c->in_shut || c->in_end) {
		/* Not a pipe, ended, closed or failed: the client's write
		 * callback waits for an answer. */
		refuse(c, EPIPE);
		return;
	}
	if (c->qhead == c->qlen && (w = write_some(c, p, n)) < 0)
		return;
	if ((size_t)w == n)
		return;
	enqueue(c, p + w, n - (size_t)w);
	if (c->in_wants_out)
		return;
	/* Writability asked for lazily: most children never fill their
	 * stdin pipe. */
	r = c->in_watched ? loop_mod(c->in_fd, LOOP_WRITABLE | LOOP_EDGE, &c->iw)
			  : loop_add(c->in_fd, LOOP_WRITABLE | LOOP_EDGE, &c->iw);
	if (r < 0)
		stdin_failed(c, -r);
	else
		c->in_watched = c->in_wants_out = 1;
}

/* A piped stdin is watched for its hang-up from the start: a child that
 * closes its stdin (or exits) with nothing of ours queued is told to the
 * client at once (END fd 0, EPIPE), so that a write after it fails at
 * once, as Node's write(2) into that pipe does, rather than completing
 * and failing the stream later. Edge-triggered, no readiness asked: the
 * registration itself reports nothing. Without it (the add failed), a
 * write finds the hang-up instead, as before. */
void stdin_watch(struct child *c)
{
	if (c->in_fd >= 0 && loop_add(c->in_fd, LOOP_EDGE, &c->iw) == 0)
		c->in_watched = 1;
}

/* End of stdin the way libuv does stdin.end(): shutdown(SHUT_WR), so the
 * child reads EOF. The fd itself stays open until reap or CLOSE. */
static void stdin_shut(struct child *c)
{
	c->in_end = 0;
	c->in_shut = 1;
	free(c->q);
	c->q = NULL;
	c->qhead = c->qlen = c->qcap = 0;
	if (shutdown(c->in_fd, SHUT_WR) < 0) {
		/* Cannot happen on a connected AF_UNIX socket; closing gives
		 * the child its EOF all the same. */
		DBG("shutdown(stdin of %u): %s", c->id, strerror(errno));
		stdin_close(c);
	}
}

void stdin_end(struct child *c)
{
	if (c->in_fd < 0 || c->in_shut)
		return;
	if (c->qhead == c->qlen)
		stdin_shut(c);
	else
		c->in_end = 1;
}

/* Whether no process holds the other end of c's stdin any more (1), it
 * is still open (0), or -errno: a zero-timeout poll, which reports a
 * hang-up (or the error only the peer's close leaves) unasked. */
static int hung_up(struct child *c)
{
	struct pollfd p = { .fd = c->in_fd, .events = 0 };
	int r;

	do
		r = poll(&p, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		int err = errno;

		DBG("poll(stdin of %u): %s", c->id, strerror(err));
		return -err;
	}
	if (r > 0 && (p.revents & (POLLHUP | POLLERR))) {
		DBG("stdin of %u hung up (revents %#x)", c->id, (unsigned)p.revents);
		return 1;
	}
	return 0;
}

/* Bytes still queued at reap die with the child. When its pipe is closed
 * (no process holds the other end), a write of Node's would have failed
 * with EPIPE by then: END fd 0 says so. When a grandchild still holds it
 * (and does not read), Node's write was still pending, and the exit's
 * destroy() of stdin cancels it without an error: nothing is said, the
 * EXIT tells the client. */
void stdin_reaped(struct child *c)
{
	if (c->in_fd >= 0 && c->qhead < c->qlen && !c->in_shut && hung_up(c) != 0)
		refuse(c, EPIPE);       /* a poll that failed: as before, EPIPE */
	stdin_close(c);
}

void stdin_close(struct child *c)
{
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	c->in_watched = c->in_wants_out = 0;
	c->in_end = 0;
	c->in_shut = 0;
	free(c->q);
	c->q = NULL;
	c->qhead = c->qlen = c->qcap = 0;
}

/* Whether the child's stdin has hung up already (stdin_watch's event may
 * still be on its way), for child_stdin_settled: as that event would. */
void stdin_check_hangup(struct child *c)
{
	if (c->in_fd >= 0 && !c->in_shut && c->qhead == c->qlen && hung_up(c) > 0)
		stdin_failed(c, EPIPE);         /* a poll that failed: the watch tells */
}

void stdin_on_event(struct child *c, uint32_t events)
{
	ssize_t w;

	if (c->in_fd < 0 || c->in_shut)
		return;
	if (c->qhead == c->qlen) {
		/* Nothing queued: a hang-up (or an error, which only the
		 * peer's close leaves on this socket) is the child's end
		 * closed by every process that had it (our copy goes once
		 * the child has its own: none hangs up before). Asked of the
		 * fd itself: the event may be a closed fd's, whose struct
		 * now serves another child (a child between its unshare and
		 * its exec holds our fds, their registrations with them). */
		if (events & LOOP_HANGUP)
			stdin_check_hangup(c);
		return;
	}
	w = write_some(c, c->q + c->qhead, c->qlen - c->qhead);
	if (w < 0)
		return;
	c->qhead += (size_t)w;
	if (c->qhead < c->qlen)
		return;
	c->qhead = c->qlen = 0;
	if (c->in_end)
		stdin_shut(c);
}
