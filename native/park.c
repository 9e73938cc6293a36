/* Parked children: pids handed out before the program is known.
 *
 * Each parked child is a clone(CLONE_VM | CLONE_FILES) of the server on its
 * own small stack, blocked on a futex in its slot, with every signal
 * blocked and PR_SET_PDEATHSIG(SIGKILL): it shares our memory and our fd
 * table (so it holds no fd of its own, and keeps no pipe of another child
 * open), and it dies with the server. It waits in a process group of its
 * own (a session leader's, for detached spawns), so that a Ctrl-C or a
 * kill of the application's group does not reach a program not yet
 * started; a program not detached joins the application's group at its
 * exec, as Node's child is in it. Once it has set itself up (named,
 * a session leader if asked) it says so through the eventfd, and only then
 * does its pid go out on the feed. A SPAWN naming that pid fills the slot's
 * plan (the strings in the slot's own memory: the server keeps running
 * while the child uses them) and opens the stdio; once the server watches
 * the new pipes it wakes the child, which
 *
 *   drops the signals queued while it waited (a Ctrl-C or a cgroup-wide
 *   SIGTERM meant for the processes of that time, not for this program),
 *   keeping those the client or the server sent (a kill right after
 *   spawn() returned)
 *   unshare(CLONE_FILES)   its own copy of our fd table, with its stdio
 *   writes the eventfd     we may now close our copies of its stdio ends
 *   plan_exec()            signals, setsid, dup3, chdir, ids, execve
 *
 * CLONE_CHILD_CLEARTID zeroes slot->ctid when the child leaves our memory
 * (exec, or exit): from then on the slot's stack and strings may be reused.
 * The child runs raw system calls only (rawsys.h: errno is ours).
 *
 * Slot states: FREE → PARKED → CLAIMED (plan ready, not yet woken) → WOKEN
 * (our copies of its stdio ends still open) → LEAVING (ends closed; memory
 * busy until ctid is 0) → FREE. A parked child that dies is kept a zombie
 * (DEAD) until a SPAWN names it or we exit, so that its pid, which the
 * client may hold, names no other process; one killed because its SPAWN
 * could not be set up (DISCARDED) is reaped here. A claimed one is reaped
 * by child.c, which took its pidfd. */
#include "park.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "child.h"
#include "conn.h"
#include "loop.h"
#include "platform.h"
#include "protocol.h"
#include "rawsys.h"
#include "spawn.h"

#ifndef CLONE_CHILD_CLEARTID
#define CLONE_CHILD_CLEARTID 0x00200000
#endif

enum slot_state { FREE, PARKED, CLAIMED, WOKEN, LEAVING, DEAD, DISCARDED };

struct slot {
	struct watch w;                 /* W_PARK: the pidfd while parked */
	uint8_t state;
	uint8_t leader;                 /* parked as a session leader (setsid) */
	uint8_t announced;              /* its pid went out on the feed */
	uint8_t watched;                /* on the pending list (scan) */
	int ready;                      /* the child has set itself up */
	int go;                         /* futex: 0 wait, 1 plan ready, -1 exit */
	int unshared;                   /* the child has its own fd table */
	volatile pid_t ctid;            /* non-zero until it leaves our memory */
	volatile int *err_out;          /* where the child reports a failure */
	pid_t pid, server_pid, client_pid;
	int pidfd;                      /* -1 once handed to child.c or reaped */
	int efd;
	int child_end[3];               /* closed once the child unshared */
	uint32_t id;                    /* the claiming SPAWN's */
	char *stack_top;
	struct plan plan;
	struct plan_mem mem;
};

static int feed = -1;           /* where pids are announced; -1: off */
static int efd = -1;            /* parked and woken children write 1 here */
static struct watch wake_watch = { .kind = W_PARK_WAKE };
static pid_t client;            /* the client process (our parent, or --detach's) */
static pid_t self_pid, self_pgrp;       /* ours, read once at park_start */
static uint32_t target;         /* parked children wanted */
static uint32_t target_leaders; /* and session leaders, for detached spawns */
static uint32_t n_parked, n_leaders;
static struct slot **slots;
static size_t n_slots;
/* The slots scan() has to look at: parked but not yet announced, woken
 * but not yet gone from our memory. Room for every slot (grown with
 * slots), so adding to it cannot fail. */
static struct slot **pending;
static size_t n_pending;
static long long retry_at;      /* ms: no clone before this after a failure */
static uint8_t *feed_out;       /* announcements the feed has not taken yet */
static size_t feed_len, feed_cap;

static const char parked_name[] = "spawnd:parked";
enum { PARK_PER_TURN = 8, LEADERS_MAX = 4 };
static const uint64_t k_all_sigs = ~(uint64_t)0;

static void park_settle(void);

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drops the signals queued while parked, except the client's and the
 * server's, which are raised again once their dispositions are the
 * defaults (still blocked: they act when plan_exec unblocks them). */
__attribute__((noinline, no_sanitize("address", "undefined")))
static void drop_stale_signals(const struct slot *s)
{
	const struct timespec zero = { 0, 0 };
	siginfo_t info;
	int keep[64], n = 0;
	long sig;

	while ((sig = RAW4(SYS_rt_sigtimedwait, &k_all_sigs, &info, &zero, 8)) > 0)
		if ((info.si_pid == s->client_pid || info.si_pid == s->server_pid) && n < 64)
			keep[n++] = (int)sig;
	if (n == 0)
		return;
	plan_reset_signals();
	for (int i = 0; i < n; i++)
		RAW2(SYS_kill, RAW0(SYS_getpid), keep[i]);
}

/* The parked child. Dies with the server (the check after prctl closes the
 * race with a server that died before it); sets itself up and says so;
 * waits for its plan; unshares the fd table; tells the server; execs. */
__attribute__((noinline, no_sanitize("address", "undefined")))
static int park_main(void *arg)
{
	struct slot *s = arg;
	const uint64_t one = 1;
	long r;
	int go;

	RAW2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
	if (RAW0(SYS_getppid) != s->server_pid)
		RAW1(SYS_exit_group, 0);
	RAW2(SYS_prctl, PR_SET_NAME, parked_name);
	/* Detached spawns take a child that leads its own session already, so
	 * that the group is there as soon as the client has the pid. */
	if ((s->leader ? RAW0(SYS_setsid) : RAW2(SYS_setpgid, 0, 0)) < 0)
		RAW1(SYS_exit_group, 0);
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	RAW3(SYS_write, s->efd, &one, sizeof(one));
	while ((go = __atomic_load_n(&s->go, __ATOMIC_ACQUIRE)) == 0)
		RAW4(SYS_futex, &s->go, FUTEX_WAIT_PRIVATE, 0, NULL);
	if (go < 0)
		RAW1(SYS_exit_group, 0);
	drop_stale_signals(s);
	r = RAW1(SYS_unshare, CLONE_FILES);
	if (r == 0) {
		__atomic_store_n(&s->unshared, 1, __ATOMIC_RELEASE);
		RAW3(SYS_write, s->efd, &one, sizeof(one));
		r = plan_exec(&s->plan);
	}
	*s->err_out = (int)-r;
	RAW1(SYS_exit_group, 127);
	return 127;
}

int park_init(int feed_fd, pid_t client_pid, const char **what)
{
	int type = 0, fl;
	socklen_t len = sizeof(type);

	client = client_pid;
	*what = "atexit";
	if (atexit(park_settle) != 0)
		return -ENOMEM;
	*what = "eventfd";
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	*what = "epoll_ctl";
	if ((fl = loop_add(efd, LOOP_READABLE, &wake_watch)) < 0)
		return fl;
	/* No feed (started by hand, or by an older client): no parking. */
	if (getsockopt(feed_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_STREAM)
		return 0;
	*what = "fcntl";
	if ((fl = fcntl(feed_fd, F_GETFL)) < 0 ||
	    fcntl(feed_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(feed_fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	feed = feed_fd;
	return 0;
}

/* Queues one announcement; park_refill() writes them. */
static void announce(uint32_t v)
{
	if (feed_len + 4 > feed_cap) {
		size_t cap = feed_cap ? 2 * feed_cap : 256;
		uint8_t *p = realloc(feed_out, cap);

		if (!p)
			return;         /* out of memory: that pid is never announced */
		feed_out = p;
		feed_cap = cap;
	}
	memcpy(feed_out + feed_len, &v, 4);     /* little-endian hosts only */
	feed_len += 4;
}

/* Writes what the feed takes. A full feed (the client not reading) keeps
 * the rest for later; a closed one (the client gone) stops parking. */
static void feed_flush(void)
{
	ssize_t n;

	while (feed_len > 0) {
		n = write(feed, feed_out, feed_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno != EAGAIN) {
				DBG("feed: %s", strerror(errno));
				target = target_leaders = 0;
				feed_len = 0;
			}
			return;
		}
		memmove(feed_out, feed_out + n, feed_len - (size_t)n);
		feed_len -= (size_t)n;
	}
}

uint32_t park_start(uint32_t want)
{
	if (feed < 0)
		return 0;
	if (!SPAWND_CAN_PARK) {
		announce(0);    /* "this server cannot park": the client stops waiting */
		feed_flush();
		return 0;
	}
	self_pid = getpid();
	self_pgrp = getpgrp();
	target = want > SPAWND_PARK_MAX ? SPAWND_PARK_MAX : want;
	/* Session leaders, for detached spawns: a quarter as many, 1 to 4. */
	target_leaders = target / 4 > LEADERS_MAX ? LEADERS_MAX : target / 4;
	if (target && !target_leaders)
		target_leaders = 1;
	return target;
}

static uint32_t *count_of(const struct slot *s)
{
	return s->leader ? &n_leaders : &n_parked;
}

/* scan() will look at s until it needs nothing more (see pending). */
static void watch_slot(struct slot *s)
{
	if (!s->watched) {
		s->watched = 1;
		pending[n_pending++] = s;
	}
}

static struct slot *slot_new(void)
{
	long page = sysconf(_SC_PAGESIZE);
	struct slot **grown, *s;
	char *stack;

	if (!(grown = realloc(slots, (n_slots + 1) * sizeof(*slots))))
		return NULL;
	slots = grown;
	if (!(grown = realloc(pending, (n_slots + 1) * sizeof(*pending))))
		return NULL;
	pending = grown;
	if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	stack = mmap(NULL, SPAWND_STACK + (size_t)page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		free(s);
		return NULL;
	}
	if (mprotect(stack, (size_t)page, PROT_NONE) < 0) {   /* guard page */
		munmap(stack, SPAWND_STACK + (size_t)page);
		free(s);
		return NULL;
	}
	s->w.kind = W_PARK;
	s->state = FREE;
	s->pidfd = -1;
	s->stack_top = stack + (size_t)page + SPAWND_STACK;
	for (int i = 0; i < 3; i++)
		s->child_end[i] = -1;
	slots[n_slots++] = s;
	return s;
}

static struct slot *slot_free(void)
{
	for (size_t i = 0; i < n_slots; i++)
		if (slots[i]->state == FREE)
			return slots[i];
	return slot_new();
}

/* Kills a slot's child and leaves it to be reaped by park_on_event. */
static void discard(struct slot *s)
{
	if (sys_pidfd_send_signal(s->pidfd, SIGKILL) < 0 && errno != ESRCH)
		DBG("pidfd_send_signal(%d): %s", (int)s->pid, strerror(errno));
	s->state = DISCARDED;
}

/* Clones one parked child (a session leader if `leader`) into a free slot.
 * It is announced once it says it is ready. The caller has blocked every
 * signal: the child runs on our memory, and no handler or default action
 * but SIGKILL's may reach it before its plan resets them, so it must start
 * with all of them blocked. 0 or -errno. */
static int park_one(int leader)
{
	struct slot *s = slot_free();
	int pid, err, r;

	if (!s)
		return -ENOMEM;
	s->go = 0;
	s->leader = (uint8_t)leader;
	s->ready = 0;
	s->announced = 0;
	s->unshared = 0;
	s->ctid = 1;
	s->server_pid = self_pid;
	s->client_pid = client;
	s->efd = efd;
	pid = clone(park_main, s->stack_top,
		    CLONE_VM | CLONE_FILES | CLONE_PIDFD | CLONE_CHILD_CLEARTID | SIGCHLD,
		    s, &s->pidfd, NULL, &s->ctid);
	err = errno;
	if (pid < 0)
		return -err;
	s->pid = pid;
	s->state = PARKED;
	watch_slot(s);
	(*count_of(s))++;
	if ((r = loop_add(s->pidfd, LOOP_READABLE, &s->w)) < 0) {
		/* Not watched: kill and reap it here, it was never announced. */
		sys_pidfd_send_signal(s->pidfd, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		close(s->pidfd);
		s->pidfd = -1;
		s->state = FREE;
		(*count_of(s))--;
		return r;
	}
	DBG("parked %d%s", pid, leader ? " (session leader)" : "");
	return 0;
}

int park_claim(const struct sp_msg *m, volatile int *err_out,
	       struct spawn_out *o, const char **call)
{
	struct slot *s = NULL;
	int r;

	*call = NULL;
	o->park = NULL;
	for (size_t i = 0; i < n_slots && !s; i++)
		if ((slots[i]->state == PARKED || slots[i]->state == DEAD) &&
		    slots[i]->announced && slots[i]->pid == (pid_t)m->pid)
			s = slots[i];
	if (!s) {
		DBG("claim %u: no such parked child", m->pid);
		return -ESRCH;
	}
	if (s->leader != !!(m->flags & SP_F_DETACHED))
		conn_fatal("SPAWN: detached spawns take session-leader pids, others not");
	if (s->state == DEAD) {
		/* Killed while parked: its zombie goes to child.c, to be reaped
		 * on the client's REAP once it has seen the child end. */
		o->pid = s->pid;
		o->pidfd = s->pidfd;
		s->pidfd = -1;
		s->state = FREE;
		return -ECHILD;
	}
	DBG("claim %d", (int)s->pid);
	(*count_of(s))--;
	r = spawn_prepare(m, &s->plan, &s->mem, s->child_end, o->fds, call);
	if (r < 0) {
		discard(s);
		return r;
	}
	if (s->leader) {
		s->plan.flags &= ~(uint32_t)SP_F_DETACHED;      /* done at park */
	} else {
		/* Into the application's group now, not at its wake-up (the
		 * child does it again, in case this failed). */
		s->plan.pgid = self_pgrp;
		if (setpgid(s->pid, s->plan.pgid) < 0)
			DBG("setpgid(%d): %s", (int)s->pid, strerror(errno));
	}
	s->err_out = err_out;
	*err_out = 0;
	s->id = m->id;
	o->pid = s->pid;
	o->pidfd = s->pidfd;
	o->park = s;
	s->pidfd = -1;
	s->state = CLAIMED;
	return 0;
}

void park_go(void *claimed)
{
	struct slot *s = claimed;

	s->state = WOKEN;
	watch_slot(s);
	__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
	if (syscall(SYS_futex, &s->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0)
		DBG("futex wake: %s", strerror(errno));
}

void park_cancel(void *claimed)
{
	struct slot *s = claimed;

	/* Killed and reaped by the caller, never woken: its memory is free. */
	close_fds3(s->child_end);
	plan_release(&s->plan);
	plan_mem_trim(&s->mem);
	s->state = FREE;
}

/* Closes the stdio ends woken children have copied; frees the memory of
 * those that left it; queues the pids of children now ready. Looks only
 * at the pending slots: the others wait for nothing. */
static void scan(void)
{
	size_t keep = 0;

	for (size_t i = 0; i < n_pending; i++) {
		struct slot *s = pending[i];
		int left = __atomic_load_n(&s->ctid, __ATOMIC_ACQUIRE) == 0;

		if (s->state == PARKED && !s->announced &&
		    __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
			announce((uint32_t)s->pid | (s->leader ? 0x80000000u : 0));
			s->announced = 1;
		}
		if (s->state == WOKEN &&
		    (left || __atomic_load_n(&s->unshared, __ATOMIC_ACQUIRE))) {
			close_fds3(s->child_end);
			s->state = LEAVING;
			child_stdin_settled(s->id);
		}
		if (s->state == LEAVING && left) {
			plan_release(&s->plan);
			plan_mem_trim(&s->mem);
			s->state = FREE;
		}
		if ((s->state == PARKED && !s->announced) || s->state == WOKEN ||
		    s->state == LEAVING)
			pending[keep++] = s;
		else
			s->watched = 0;
	}
	n_pending = keep;
	feed_flush();
}

void park_on_event(void *ptr)
{
	struct watch *w = ptr;
	struct slot *s;
	siginfo_t si;
	uint64_t n;
	int r;

	if (w->kind == W_PARK_WAKE) {
		while (read(efd, &n, sizeof(n)) < 0 && errno == EINTR)
			;
		scan();
		return;
	}
	s = (struct slot *)(void *)w;
	if (s->pidfd < 0 || s->state == DEAD)
		return;         /* stale: handed to child.c, or seen already */
	si.si_pid = 0;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si,
			   WEXITED | WNOHANG | (s->state == PARKED ? WNOWAIT : 0));
	while (r < 0 && errno == EINTR);
	if (r == 0 && si.si_pid == 0)
		return;
	DBG("parked child %d ended (state %d)", (int)s->pid, s->state);
	if (s->state == PARKED) {
		(*count_of(s))--;
		if (s->announced) {
			/* The client may hold its pid: a zombie until claimed. */
			s->state = DEAD;
			if ((r = loop_del(s->pidfd)) < 0)
				DBG("loop_del: %s", strerror(-r));
			return;
		}
		/* Never announced: reaped now. */
		while (waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) < 0 &&
		       errno == EINTR)
			;
	}
	close(s->pidfd);
	s->pidfd = -1;
	s->state = FREE;        /* exited: ctid is 0, the stack is ours */
}

int park_refill(void)
{
	sigset_t all, old;
	long long now;
	int r;

	scan();
	if (n_parked >= target && n_leaders >= target_leaders)
		return feed_len > 0 ? 10 : -1;
	now = now_ms();
	if (now < retry_at)
		return (int)(retry_at - now);
	/* Every signal blocked in each new child from its first instruction
	 * (park_one): once for the whole batch. */
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, &old) < 0) {
		DBG("sigprocmask: %s", strerror(errno));
		retry_at = now + 10;
		return 10;
	}
	/* A few per loop turn (about 20 µs each): SPAWNs that arrive while
	 * the stash fills, at start or after a burst, are not held up. */
	r = 0;
	for (int n = 0; r == 0 && n < PARK_PER_TURN &&
	     (n_parked < target || n_leaders < target_leaders); n++)
		r = park_one(n_leaders < target_leaders && (n_parked >= target || n_leaders == 0));
	if (sigprocmask(SIG_SETMASK, &old, NULL) < 0)  /* cannot fail: valid set */
		DBG("sigprocmask: %s", strerror(errno));
	if (r < 0) {
		DBG("park: %s", strerror(-r));
		retry_at = now + 10;
		return target ? 10 : -1;
	}
	if (n_parked < target || n_leaders < target_leaders)
		return 0;
	return feed_len > 0 ? 10 : -1;
}

/* At exit: the parked children are killed and reaped (they would die with
 * us anyway, but as zombies of whoever adopts them). Woken ones still on
 * our memory would die with us too (their parent-death signal is cleared
 * just before exec): wait until each has left it, within 2 s. */
static void park_settle(void)
{
	long long deadline = now_ms() + 2000;
	siginfo_t si;

	for (size_t i = 0; i < n_slots; i++) {
		struct slot *s = slots[i];

		if (s->pidfd < 0)
			continue;
		sys_pidfd_send_signal(s->pidfd, SIGKILL);
		while (waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED) < 0 &&
		       errno == EINTR)
			;
	}
	for (size_t i = 0; i < n_slots; i++) {
		struct slot *s = slots[i];
		pid_t t;

		if (s->state != WOKEN && s->state != LEAVING)
			continue;
		while ((t = __atomic_load_n(&s->ctid, __ATOMIC_ACQUIRE)) != 0) {
			long long left = deadline - now_ms();
			struct timespec ts = { 0, 10 * 1000000L };

			if (left <= 0)
				return;
			syscall(SYS_futex, &s->ctid, FUTEX_WAIT, t, &ts, NULL, 0);
		}
	}
}
