/* spawnd: the spawn server of spawnpool.
 *
 *   spawnd [parent-pid]     with a SOCK_STREAM socket on fd 3
 *
 * Reads like a script: check the fds, tie our life to the parent's, set
 * the signals, prepare, then run the loop until the socket closes.
 * Protocol: docs/protocol.md. Exit statuses: 0 socket closed, 2 version
 * mismatch, 3 protocol error, 100 usage, 111 a start-up syscall failed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "child.h"
#include "conn.h"
#include "loop.h"
#include "protocol.h"
#include "platform.h"
#include "spawn.h"

#define SOCK_FD 3

int spawnd_debug;

static _Noreturn void usage(const char *why)
{
	fprintf(stderr,
		"spawnd: %s\n"
		"usage: spawnd [parent-pid]   (with a SOCK_STREAM socket on fd 3)\n"
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

/* SIGKILL when the parent dies; then check it did not die before that. */
static void tie_to_parent(const char *arg)
{
	char *end;
	long ppid;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		die("prctl", errno);
	if (!arg)
		return;
	ppid = strtol(arg, &end, 10);
	if (*end || end == arg || ppid <= 0)
		usage("parent-pid must be a number");
	if (getppid() != (pid_t)ppid)
		exit(SPAWND_EXIT_OK);   /* orphaned already: nobody to serve */
}

/* No handlers. SIGPIPE is ignored: write errors come back as EPIPE. So are
 * SIGINT, SIGQUIT, SIGHUP and SIGTERM: we share the parent's process group,
 * and a Ctrl-C, a hang-up or a group-wide SIGTERM (systemd's default
 * KillMode=control-group) is for the application and its children to
 * handle; dying of it would cut the children's graceful shutdown short. We
 * leave on socket EOF or PR_SET_PDEATHSIG instead. Children get every
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

static _Noreturn void run(void)
{
	struct epoll_event ev[SPAWND_EVENTS];

	for (;;) {
		int n = loop_wait(ev, SPAWND_EVENTS, streams_busy() ? 0 : -1);

		if (n < 0)
			die("epoll_wait", -n);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr)
				child_on_event(ev[i].data.ptr, ev[i].events);
			else
				conn_on_event(ev[i].events);
		}
		streams_pump();
		conn_flush();
		child_collect();
	}
}

int main(int argc, char **argv)
{
	const char *what = "epoll_create1";
	const char *dbg = getenv("SPAWND_DEBUG");
	int r;

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
	if (argc > 2)
		usage("too many arguments");
	tie_to_parent(argc > 1 ? argv[1] : NULL);
	setup_signals();
	if ((r = loop_init()) < 0 || (r = spawn_init(&what)) < 0)
		die(what, -r);
	if ((r = conn_init(SOCK_FD)) < 0)
		die("socket setup", -r);
	if ((r = child_init()) < 0)
		die("malloc", -r);
	DBG("ready");
	run();
}
