/* spawnd: the spawn server of spawnpool.
 *
 *   spawnd [--detach] [parent-pid]     with a SOCK_STREAM socket on fd 3
 *                                      (and the pid feed on fd 4, and the
 *                                      handover socket on fd 5, optional)
 *
 * Reads like a script: check the fds, tie our life to the parent's (and
 * detach), set the signals, prepare, then run the loop until the socket
 * closes or the parent exits.
 * Protocol: docs/protocol.md. Exit statuses: 0 socket closed or parent gone, 2 version
 * mismatch, 3 protocol error, 100 usage, 111 a syscall the server needs failed, or out of memory. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "child.h"
#include "conn.h"
#include "loop.h"
#include "park.h"
#include "path.h"
#include "protocol.h"
#include "platform.h"
#include "spawn.h"
#include "stdio.h"

#define SOCK_FD 3
#define FEED_FD 4      /* optional: where parked pids are announced */
#define HANDOVER_FD 5  /* optional: where busy streams go to the client */

int spawnd_debug;

static _Noreturn void usage(const char *why)
{
	fprintf(stderr,
		"spawnd: %s\n"
		"usage: spawnd [--detach] [parent-pid]   (with a SOCK_STREAM socket on fd 3)\n"
		"       spawnd --version\n"
		"spawnd is started by the spawnpool library, not by hand.\n", why);
	exit(SPAWND_EXIT_USAGE);
}

static _Noreturn void die(const char *what, int err)
{
	DBG("%s: %s", what, strerror(err));
	exit(SPAWND_EXIT_SYSCALL);
}

/* Opens /dev/null on any closed fd 0-2, so that no fd we create lands there
 * (a child's dup onto 0-2 would clobber it). */
static void fill_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (open("/dev/null", O_RDWR) != fd)
			die("open /dev/null", errno);
	}
}

static void check_socket(void)
{
	int type = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(SOCK_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		usage(errno == EBADF ? "fd 3 is not open" : "fd 3 is not a socket");
	if (type != SOCK_STREAM)
		usage("fd 3 is not a SOCK_STREAM socket");
	if (fcntl(SOCK_FD, F_SETFD, FD_CLOEXEC) < 0)
		die("fcntl", errno);
}

/* Whatever else we inherited must not reach our children. */
static void cloexec_inherited(void)
{
	long max;

	if (syscall(SYS_close_range, SOCK_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	/* Before Linux 5.11: one fcntl per possible fd, once. */
	max = sysconf(_SC_OPEN_MAX);
	for (int fd = SOCK_FD + 1; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF)
			die("fcntl", errno);
}

/* The server's life is tied to its parent *process* through a pidfd in
 * the loop (not PR_SET_PDEATHSIG: that fires when the *thread* that
 * started us exits, a Node worker say, and would kill us with requests
 * already received). Returns the pidfd, or -1 if there is none to watch. */
static int tie_to_parent(const char *arg, int detach, pid_t *client)
{
	pid_t ppid = getppid();
	char *end;
	long n;
	int fd;

	if (arg) {
		n = strtol(arg, &end, 10);
		if (*end || end == arg || n <= 0 || n > INT32_MAX)
			usage("parent-pid must be a number");
		ppid = (pid_t)n;
	}
	*client = ppid;
	fd = (int)syscall(SYS_pidfd_open, ppid, 0);     /* always close-on-exec */
	if (fd < 0 && errno == ESRCH)
		exit(SPAWND_EXIT_OK);   /* gone already: nobody to serve */
	if (fd < 0 && errno != ENOSYS)
		die("pidfd_open", errno);
	/* Opened first, checked second: if ppid is still our parent now, the
	 * pidfd is that parent, whatever reuses the pid later. Detached, our
	 * parent is init or a subreaper: the argument is the tie. */
	if (!detach && getppid() != ppid)
		exit(SPAWND_EXIT_OK);   /* orphaned already: nobody to serve */
	return fd;                      /* ENOSYS (< 5.3): socket EOF only */
}

/* --detach: the process our starter waits for exits at once (a Node worker
 * thread reaps it before it ends, leaving no zombie behind); the forked
 * copy serves, reparented to init or the nearest subreaper. */
static void detach_now(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork", errno);
	if (pid > 0)
		_exit(SPAWND_EXIT_OK);
}

/* No handlers. SIGPIPE is ignored: write errors come back as EPIPE. So are
 * SIGINT, SIGQUIT, SIGHUP and SIGTERM: we share the parent's process group,
 * and a Ctrl-C, a hang-up or a group-wide SIGTERM (systemd's default
 * KillMode=control-group) is for the application and its children to
 * handle; dying of it would cut the children's graceful shutdown short. We
 * leave on socket EOF or when the parent process exits instead. Children get every
 * signal back at its default (spawn.c). */
static void setup_signals(void)
{
	static const int ignored[] = { SIGPIPE, SIGINT, SIGQUIT, SIGHUP, SIGTERM };
	struct sigaction sa = { .sa_handler = SIG_IGN };
	sigset_t none;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (sigaction(ignored[i], &sa, NULL) < 0)
			die("sigaction", errno);
	sa.sa_handler = SIG_DFL;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		die("sigaction", errno);
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		die("sigprocmask", errno);
}

/* The tag of the parent's pidfd in the loop (the socket's is NULL). */
static char parent_tag;

static _Noreturn void run(void)
{
	struct loop_event ev[SPAWND_EVENTS];

	for (;;) {
		int due = streams_drop_due();
		int park_due = park_refill();
		int n;

		if (park_due >= 0 && (due < 0 || park_due < due))
			due = park_due;
		n = loop_wait(ev, SPAWND_EVENTS, streams_busy() ? 0 : due);

		if (n < 0)
			die("epoll_wait", -n);
		for (int i = 0; i < n; i++) {
			if (ev[i].ptr == &parent_tag)
				conn_finish();
			else if (ev[i].ptr)
				child_on_event(ev[i].ptr, ev[i].events);
			else
				conn_on_event(ev[i].events);
		}
		streams_pump();
		conn_flush();
		child_collect();
	}
}

/* SPAWND_PARK=<version>:<n> in our environment: the client's protocol
 * version and the number of parked children its HELLO will ask for, so
 * that they are parked (and their pids on the feed) by the time its first
 * SPAWN wants one, rather than from the HELLO on, which the client writes
 * a millisecond or more after starting us. Only for a client of our
 * version: another one's HELLO is refused, and no pid may have gone out
 * by then. The HELLO's number is the one that holds. A client that sets
 * nothing gets its children from the HELLO on. */
static void park_early(void)
{
	const char *want = getenv("SPAWND_PARK");
	char *end;
	long version, n;

	if (want == NULL || *want == '\0')
		return;
	version = strtol(want, &end, 10);
	if (end == want || *end != ':' || version != SP_VERSION)
		return;
	want = end + 1;
	n = strtol(want, &end, 10);
	if (end != want && *end == '\0' && n > 0 && n <= INT32_MAX)
		park_start((uint32_t)n);
}

/* Parses [--detach] [parent-pid]; --detach requires the pid. */
static const char *parse_args(int argc, char **argv, int *detach)
{
	int i = 1;

	*detach = argc > 1 && strcmp(argv[1], "--detach") == 0;
	i += *detach;
	if (argc - i > 1)
		usage("too many arguments");
	if (*detach && argc - i < 1)
		usage("--detach needs the parent-pid");
	return argc > i ? argv[i] : NULL;
}

int main(int argc, char **argv)
{
	const char *what = "epoll_create1";
	const char *dbg = getenv("SPAWND_DEBUG");
	const char *parent;
	int detach, parent_fd, r;
	pid_t client;

	spawnd_debug = dbg && strcmp(dbg, "1") == 0;
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		/* The client's start-up probe: this binary runs and speaks v1. */
		if (printf("spawnd protocol %d\n", SP_VERSION) < 0 || fflush(stdout) != 0)
			return 111;
		return 0;
	}
	fill_std_fds();
	check_socket();
	cloexec_inherited();
	parent = parse_args(argc, argv, &detach);
	parent_fd = tie_to_parent(parent, detach, &client);
	if (detach)
		detach_now();
	setup_signals();
	if ((r = loop_init()) < 0 || (r = spawn_init(&what)) < 0 ||
	    (r = park_init(FEED_FD, client, &what)) < 0)
		die(what, -r);
	if (parent_fd >= 0 && (r = loop_add(parent_fd, LOOP_READABLE, &parent_tag)) < 0)
		die("epoll_ctl", -r);
	park_early();
	stdio_handover_init(HANDOVER_FD);
	if ((r = conn_init(SOCK_FD, child_dispatch, park_start, path_input)) < 0)
		die("socket setup", -r);
	if ((r = child_init()) < 0)
		die("malloc", -r);
	DBG("ready");
	run();
}
