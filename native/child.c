/* The child table: SPAWN -> SPAWNED/SPAWN_ERROR, KILL through the pidfd,
 * reaping by pidfd (never waitpid(-1)), and forgetting a child once the
 * client has seen its terminal state. */
#include "child.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "idmap.h"
#include "loop.h"
#include "park.h"
#include "platform.h"
#include "protocol.h"
#include "spawn.h"
#include "stdio.h"

#define OWNER(ptr, member) \
	((struct child *)(void *)((char *)(ptr) - offsetof(struct child, member)))

static void child_release_pid(struct child *c);
static void send_reaped(uint32_t id);

static struct child *free_list;   /* recycled, never freed (see child.h) */
static struct child *dead_list;   /* forgotten during this iteration */

int child_init(void)
{
	return idmap_reserve();
}

static struct child *child_alloc(void)
{
	struct child *c = free_list;

	if (c)
		free_list = c->next;
	else if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	else
		c->pidfd = c->in_fd = c->out[0].fd = c->out[1].fd = -1;  /* not fd 0 */
	c->next = NULL;
	return c;
}

static void spawn_error(uint32_t id, int err, const char *syscall)
{
	struct sp_msg m = { .type = SP_SPAWN_ERROR, .id = id, .err = err };

	m.data.p = (const uint8_t *)syscall;
	m.data.n = (uint32_t)strlen(syscall);
	conn_send(&m);
}

/* Undoes a started child we cannot track: kill it, reap it, close all. */
static void abandon(struct spawn_out *o)
{
	if (sys_pidfd_send_signal(o->pidfd, SIGKILL) < 0)
		DBG("pidfd_send_signal: %s", strerror(errno));
	while (waitpid(o->pid, NULL, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < 3; i++)
		if (o->fds[i] >= 0)
			close(o->fds[i]);
	close(o->pidfd);
}

/* Registers the pidfd (a parked child's is registered already: it is
 * pointed at c) and the stdout/stderr pipes. 0 or -errno. The pidfd
 * reports once: the exit (the zombie stays readable until REAP), so no
 * removal is needed at exit, and the close at reap ends it. */
static int watch_child(struct child *c, const struct spawn_out *o, int parked)
{
	int r = parked ? loop_mod(o->pidfd, LOOP_READABLE | LOOP_ONCE, &c->pw)
		       : loop_add(o->pidfd, LOOP_READABLE | LOOP_ONCE, &c->pw);

	for (int i = 1; i < 3 && r == 0; i++)
		if (o->fds[i] >= 0)
			r = loop_add(o->fds[i], LOOP_READABLE | LOOP_HANGUP | LOOP_EDGE,
				     &c->out[i - 1].w);
	return r;
}

/* A SPAWN for a parked child that died before it came (killed by someone):
 * answered as a child killed at once, its pipes empty. */
static void answer_gone(const struct sp_msg *m)
{
	struct sp_msg end = { .type = SP_END, .id = m->id };
	struct sp_msg ex = { .type = SP_EXIT, .id = m->id, .code = -1, .sig = SIGKILL };

	for (uint8_t fd = 1; fd < 3; fd++) {
		if (m->stdio[fd] != SP_IO_PIPE)
			continue;
		end.fd = fd;
		conn_send(&end);
	}
	conn_send(&ex);
}

/* Fills c for request m from o; the caller registers it (idmap_put). */
static void child_init_from(struct child *c, const struct sp_msg *m,
			    const struct spawn_out *o)
{
	c->pw.kind = W_PIDFD;
	c->iw.kind = W_STDIN;
	c->id = m->id;
	c->pid = o->pid;
	c->pidfd = o->pidfd;
	c->in_fd = o->fds[0];
	c->in_watched = c->in_wants_out = c->in_end = c->in_shut = 0;
	c->exited = 0;
	stream_start(&c->out[0], c, 1, o->fds[1], m->window, m->flags & SP_F_HANDOVER);
	stream_start(&c->out[1], c, 2, o->fds[2], m->window, m->flags & SP_F_HANDOVER);
}

static void child_spawn(const struct sp_msg *m)
{
	struct sp_msg ok = { .type = SP_SPAWNED, .id = m->id };
	struct spawn_out o = { .fds = { -1, -1, -1 } };
	const char *syscall = "spawn";
	struct child *c;
	int r;

	if (m->id == 0)
		conn_fatal("SPAWN with id 0");
	if (idmap_get(m->id))
		conn_fatal("SPAWN id already in use");
	if ((r = spawn_note_env(m)) == -ENOENT)
		conn_fatal("SPAWN with SAME_ENV before any environment");
	if (r < 0) {
		/* Later SPAWNs would run with the wrong environment. */
		DBG("out of memory for an environment");
		exit(SPAWND_EXIT_SYSCALL);
	}
	if (idmap_reserve() < 0 || !(c = child_alloc())) {
		spawn_error(m->id, ENOMEM, "malloc");
		return;
	}
	c->exec_err = 0;
	if (m->pid)
		r = park_claim(m, &c->exec_err, &o, &syscall);
	else
		r = spawn_start(m, &o, &syscall);
	if (m->pid && (r == -ESRCH || r == -ECHILD) && !syscall) {
		if (r == -ECHILD) {
			/* Died while parked: its zombie waits for REAP, as
			 * any child's does. */
			child_init_from(c, m, &o);
			c->exited = 1;
			idmap_put(c->id, c);
		} else {
			c->next = free_list;
			free_list = c;
		}
		answer_gone(m);
		return;
	}
	if (r == 0 && (r = watch_child(c, &o, m->pid != 0)) < 0) {
		abandon(&o);
		if (o.park)
			park_cancel(o.park);
		syscall = "epoll_ctl";
	}
	if (r < 0) {
		c->next = free_list;
		free_list = c;
		spawn_error(m->id, -r, syscall);
		return;
	}
	child_init_from(c, m, &o);
	stdin_watch(c);
	idmap_put(c->id, c);
	if (m->pid) {
		park_go(o.park);        /* its pipes are watched: it may run */
		return;                 /* the client has the pid already */
	}
	ok.pid = (uint32_t)o.pid;
	conn_send(&ok);
	stdin_check_hangup(c);  /* exec'd, our copies closed: see below */
}

/* A child that closed its stdin and then wrote to stdout: the client must
 * hear of the stdin first, as Node's write into it fails by then. The
 * hang-up comes when our copy of its end closes, which may be after that
 * output is ready: it is asked for right then, before the output is
 * read. */
void child_stdin_settled(uint32_t id)
{
	struct child *c = idmap_get(id);

	if (c)
		stdin_check_hangup(c);
}

static void child_kill(struct child *c, uint32_t sig)
{
	struct sp_msg m = { .type = SP_KILL_ERROR, .id = c->id };

	if (c->pidfd < 0 || c->exited)
		return;         /* exited: as Node, nothing to signal any more */
	if (sys_pidfd_send_signal(c->pidfd, (int)sig) == 0 || errno == ESRCH)
		return;
	m.err = errno;
	conn_send(&m);
}

static void child_close(struct child *c, uint8_t fd)
{
	if (fd == 0)
		stdin_close(c);
	else
		stream_drop(&c->out[fd - 1]);
}

void child_dispatch(const struct sp_msg *m)
{
	struct child *c;

	if (m->type == SP_SPAWN) {
		child_spawn(m);
		/* Without a parked child the answer leaves now, not at the end
		 * of the batch: a server killed mid-batch has then reported
		 * every child it started, and the client, which retries
		 * unanswered pid-less SPAWNs on another server, never runs a
		 * program twice. */
		if (!m->pid)
			conn_flush();
		return;
	}
	/* Unknown ids are late frames racing with the child's end: ignored,
	 * except STDIN, whose write callback on the client waits for an
	 * answer (the client ignores it if it has released the id). */
	if (!(c = idmap_get(m->id))) {
		if (m->type == SP_STDIN)
			stdin_refuse(m->id);
		else if (m->type == SP_REAP)
			send_reaped(m->id);     /* a pid never announced: nothing to reap */
		return;
	}
	switch (m->type) {
	case SP_STDIN: stdin_write(c, m->data.p, m->data.n); break;
	case SP_STDIN_END: stdin_end(c); break;
	case SP_KILL: child_kill(c, m->signal); break;
	case SP_CREDIT: stream_credit(&c->out[m->fd - 1], m->bytes); break;
	case SP_CLOSE: child_close(c, m->fd); break;
	case SP_REAP: child_release_pid(c); break;
	default: break;
	}
}

static void exit_status(const siginfo_t *si, int32_t *code, int32_t *sig)
{
	if (si->si_code == CLD_EXITED) {
		*code = si->si_status;
		*sig = 0;
	} else {
		*code = -1;
		*sig = si->si_status;
	}
}

/* Reaps an exited child: its pid is free from now on. */
static void reap_now(struct child *c)
{
	siginfo_t si;

	while (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 &&
	       errno == EINTR)
		;
	close(c->pidfd);        /* also leaves the loop */
	c->pidfd = -1;
}

static void send_reaped(uint32_t id)
{
	struct sp_msg m = { .type = SP_REAPED, .id = id };

	conn_send(&m);
}

/* The client's REAP, sent when it read the EXIT: the child is reaped and
 * REAPED answers, upon which the client emits 'exit', as Node reaps just
 * before emitting it. Until then the child stays a zombie, so its pid names
 * no other process while the client may still signal it; from 'exit' on
 * it names nothing. */
static void child_release_pid(struct child *c)
{
	uint32_t id = c->id;

	if (c->pidfd >= 0 && c->exited) {
		reap_now(c);
		child_maybe_forget(c);
	}
	send_reaped(id);
}

/* The pidfd is readable: the child exited. Its status is read without
 * reaping it (see child_release_pid); the stdio is wound up and EXIT sent. */
static void child_reap(struct child *c)
{
	struct sp_msg m = { .type = SP_EXIT, .id = c->id };
	siginfo_t si;
	int r;

	if (c->pidfd < 0 || c->exited)
		return;
	si.si_pid = 0;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si,
			   WEXITED | WNOHANG | WNOWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		/* ECHILD cannot happen (SIGCHLD is not SIG_IGN, nobody else
		 * waits); if it does, report the child as gone. */
		DBG("waitid(%d): %s", (int)c->pid, strerror(errno));
		si.si_code = CLD_KILLED;
		si.si_status = 0;
	} else if (si.si_pid == 0) {
		/* Not exited yet (a stale event): watch for the exit again. */
		if ((r = loop_mod(c->pidfd, LOOP_READABLE | LOOP_ONCE, &c->pw)) < 0 &&
		    (r = loop_add(c->pidfd, LOOP_READABLE | LOOP_ONCE, &c->pw)) < 0)
			conn_fatal("cannot watch a child's exit any more");
		return;
	}
	c->exited = 1;
	stdin_reaped(c);        /* as Node destroys child.stdin at exit */
	if (c->exec_err) {
		/* A parked child that could not exec: it never ran, and its pid
		 * was never the program's. Nothing follows SPAWN_ERROR, so its
		 * pipes close unannounced, and no REAP is awaited. */
		int open = 0;

		spawn_error(c->id, c->exec_err, "spawn");
		c->exec_err = 0;
		reap_now(c);
		for (int i = 0; i < 2; i++) {
			if (c->out[i].fd < 0)
				continue;
			open = 1;       /* the last one closed forgets c */
			if (c->out[i].dropping)
				c->out[i].drop_at = 0;
			else
				stream_close(&c->out[i]);
		}
		if (!open)
			child_maybe_forget(c);
		return;
	}
	exit_status(&si, &m.code, &m.sig);
	conn_send(&m);
	for (int i = 0; i < 2; i++)
		if (c->out[i].dropping)
			c->out[i].drop_at = 0;  /* closed, then forgotten, next round */
}

/* Events may be stale: an fd closed during this batch, or one closed just
 * after a spawn whose exec had not yet dropped its copy of our fds. The
 * handlers then find a closed fd or nothing to do; a recycled struct gets
 * at worst one read or waitid that finds nothing. */
void child_on_event(void *ptr, uint32_t events)
{
	struct watch *w = ptr;

	switch (w->kind) {
	case W_PIDFD: child_reap(OWNER(w, pw)); break;
	case W_STDIN: stdin_on_event(OWNER(w, iw), events); break;
	case W_OUT: stream_on_event((struct stream *)(void *)w, events); break;
	case W_PARK: case W_PARK_WAKE: park_on_event(w); break;
	default: break;
	}
}

void child_maybe_forget(struct child *c)
{
	if (c->pidfd >= 0 || c->out[0].fd >= 0 || c->out[1].fd >= 0)
		return;
	idmap_del(c->id);
	c->next = dead_list;
	dead_list = c;
}

void child_collect(void)
{
	while (dead_list) {
		struct child *c = dead_list;

		dead_list = c->next;
		c->next = free_list;
		free_list = c;
	}
}
