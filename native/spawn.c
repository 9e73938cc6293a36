/* Starting a program: the request is copied into NUL-terminated arrays,
 * the PATH is searched here, stdio socket pairs are made, and one
 * clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD) runs child_main(), which only
 * makes raw system calls until execve.
 *
 * Why not posix_spawn: uid/gid need this path anyway; glibc's posix_spawn
 * maps and unmaps a stack per call and makes ~64 sigaction calls in the
 * child; CLONE_PIDFD hands us the pidfd without a pidfd_open(2). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "path.h"
#include "platform.h"
#include "protocol.h"
#include "rawsys.h"

static int devnull_r = -1, devnull_rw = -1;
static int std_copy[3] = { -1, -1, -1 };  /* the server's fds 0-2 at start */
static char *stack_top;
static int reset_sigs[_NSIG];             /* not SIG_DFL in the server */
static int n_reset;
static struct plan_mem vfork_mem;         /* the vfork-style child's plan */

/* Kernel-sized sigaction and sigset, all zero: SIG_DFL, no flags, empty. */
static const unsigned long k_zero[8];
#define K_SIGSET_SIZE (_NSIG / 8)

__attribute__((noinline, no_sanitize("address", "undefined")))
void plan_reset_signals(void)
{
	for (int i = 0; i < n_reset; i++)
		RAW4(SYS_rt_sigaction, reset_sigs[i], k_zero, NULL, K_SIGSET_SIZE);
}

/* The child's side of a plan, in a task that shares our memory (the
 * vfork-style child, or a parked child woken with its plan): raw system
 * calls only (no libc state, no errno, no sanitizer interceptors), on its
 * own stack. Returns -errno when a step failed; the caller reports it. */
__attribute__((noinline, no_sanitize("address", "undefined")))
long plan_exec(struct plan *p)
{
	long r;
	int fd;

	plan_reset_signals();
	if (p->pgid && (r = RAW2(SYS_setpgid, 0, p->pgid)) < 0)
		return r;
	if ((p->flags & SP_F_DETACHED) && (r = RAW0(SYS_setsid)) < 0)
		return r;
	/* Sources are never 0-2 (pipes, /dev/null and the copies of our own
	 * stdio all live higher), so no dup3 can clobber a later source:
	 * stdio like [pipe, 2, 1] swaps correctly. */
	for (fd = 0; fd < 3; fd++)
		if ((r = RAW3(SYS_dup3, p->src[fd], fd, 0)) < 0)
			return r;
	if (p->cwd && (r = RAW1(SYS_chdir, p->cwd)) < 0)
		return r;
	if (p->flags & (SP_F_SET_UID | SP_F_SET_GID))
		RAW2(SYS_setgroups, 0, NULL);   /* drop extra groups; EPERM if not root */
	if ((p->flags & SP_F_SET_GID) && (r = RAW1(SYS_setgid, p->gid)) < 0)
		return r;
	if ((p->flags & SP_F_SET_UID) && (r = RAW1(SYS_setuid, p->uid)) < 0)
		return r;
	/* A parked child dies with the server until now; the program does not. */
	RAW2(SYS_prctl, PR_SET_PDEATHSIG, 0);
	RAW4(SYS_rt_sigprocmask, SIG_SETMASK, k_zero, NULL, K_SIGSET_SIZE);
	r = RAW3(SYS_execve, p->path, p->argv, p->envp);
	if (r == -ENOEXEC) {
		/* Like execvp: a file without #! runs under /bin/sh. */
		p->argv[-1] = (char *)"/bin/sh";
		p->argv[0] = (char *)p->path;
		r = RAW3(SYS_execve, "/bin/sh", p->argv - 1, p->envp);
	}
	return r < 0 ? r : -EINVAL;
}

/* The vfork-style child: reports a failure through p->err. */
__attribute__((noinline, no_sanitize("address", "undefined")))
static int child_main(void *arg)
{
	struct plan *p = arg;

	p->err = (int)-plan_exec(p);
	RAW1(SYS_exit_group, 127);
	return 127;     /* not reached; glibc's clone would exit with it */
}

/* Asked of the kernel, not of libc: libc will not tell its own signals
 * (32-34), and a server started with posix_spawn (the launch addon) has
 * them ignored: glibc and musl ignore them in the vfork-style child, and
 * exec keeps SIG_IGN. A child of Node has them at their default. */
static int find_reset_sigs(void)
{
	for (int sig = 1; sig < _NSIG; sig++) {
		unsigned long act[8] = { 0 };   /* the handler comes first (x86-64, arm64: rawsys.h) */

		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, act, K_SIGSET_SIZE) < 0)
			return -errno;
		if (act[0] != (unsigned long)SIG_DFL)
			reset_sigs[n_reset++] = sig;
	}
	return 0;
}

int spawn_init(const char **what)
{
	long page = sysconf(_SC_PAGESIZE);
	char *stack;

	path_init();    /* without inotify, PATH is searched every time */
	*what = "open";
	devnull_r = open("/dev/null", O_RDONLY | O_CLOEXEC);
	devnull_rw = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull_r < 0 || devnull_rw < 0)
		return -errno;
	*what = "fcntl";
	for (int i = 0; i < 3; i++)
		if ((std_copy[i] = fcntl(i, F_DUPFD_CLOEXEC, 3)) < 0)
			return -errno;
	*what = "mmap";
	stack = mmap(NULL, SPAWND_STACK + (size_t)page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	if (mprotect(stack, (size_t)page, PROT_NONE) < 0)    /* guard page */
		return -errno;
	stack_top = stack + (size_t)page + SPAWND_STACK;
	*what = "rt_sigaction";
	return find_reset_sigs();
}

static char *copy_str(char **at, struct sp_bytes b)
{
	char *s = *at;

	memcpy(s, b.p, b.n);
	s[b.n] = '\0';
	*at += b.n + 1;
	return s;
}

/* An environment as execve takes it, in one block: the pointers, then the
 * strings. The one noted last is kept for SPAWNs with SAME_ENV, and each
 * plan holds the one its envp points into: a parked child reads it after
 * the server has moved on, perhaps to another environment. */
struct envset {
	unsigned refs;
	const char *path;       /* the value of its first PATH= (getenv's), or NULL */
	char *envp[];
};

static struct envset *noted_env;

static void env_unref(struct envset *e)
{
	if (e && --e->refs == 0)
		free(e);
}

static struct envset *env_new(const struct sp_list *l)
{
	size_t ptrs = ((size_t)l->count + 1) * sizeof(char *);
	/* raw: 4 + len >= len + 1 per string */
	struct envset *e = malloc(sizeof(*e) + ptrs + l->raw_len);
	const uint8_t *at = l->raw;
	struct sp_bytes s;
	char *str;

	if (!e)
		return NULL;
	e->refs = 1;
	e->path = NULL;
	str = (char *)e + sizeof(*e) + ptrs;
	for (uint32_t i = 0; i < l->count; i++) {
		at = sp_list_next(at, &s);
		e->envp[i] = copy_str(&str, s);
		if (!e->path && strncmp(e->envp[i], "PATH=", 5) == 0)
			e->path = e->envp[i] + 5;
	}
	e->envp[l->count] = NULL;
	return e;
}

int spawn_note_env(const struct sp_msg *m)
{
	struct envset *e;

	if (m->flags & SP_F_SAME_ENV)
		return noted_env ? 0 : -ENOENT;
	if (!(e = env_new(&m->env)))
		return -ENOMEM;
	env_unref(noted_env);
	noted_env = e;
	return 0;
}

void plan_release(struct plan *p)
{
	env_unref(p->env);
	p->env = NULL;
}

/* Copies the request into mem's arena; the environment is the noted one.
 * 0 or -ENOMEM. */
static int plan_build(const struct sp_msg *m, struct plan *p,
		      struct plan_mem *mem, const char **file,
		      const char **path_env)
{
	size_t nptr = 1 + m->argv.count + 1;
	size_t need = nptr * sizeof(char *) + m->file.n + 1 + m->cwd.n + 1 +
		      m->argv.raw_len;  /* raw: 4 + len >= len + 1 */
	const uint8_t *at;
	struct sp_bytes s;
	char *str;

	if (need > mem->cap) {
		free(mem->arena);
		if (!(mem->arena = malloc(need))) {
			mem->cap = 0;
			return -ENOMEM;
		}
		mem->cap = need;
	}
	p->argv = (char **)(void *)mem->arena + 1;
	str = mem->arena + nptr * sizeof(char *);
	*file = copy_str(&str, m->file);
	p->cwd = m->cwd.n ? copy_str(&str, m->cwd) : NULL;
	at = m->argv.raw;
	for (uint32_t i = 0; i < m->argv.count; i++) {
		at = sp_list_next(at, &s);
		p->argv[i] = copy_str(&str, s);
	}
	p->argv[m->argv.count] = NULL;
	p->env = noted_env;
	p->env->refs++;
	p->envp = p->env->envp;
	*path_env = p->env->path;
	return 0;
}

void close_fds3(int fds[3])
{
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* A socket pair for one child stdio fd, as libuv makes child stdio: programs see
 * S_ISSOCK, and a writer whose reader closed with unread data gets
 * ECONNRESET instead of SIGPIPE (`yes` exits 1 under Node). Both ends
 * stay blocking (the child's must): ours is only read and written with
 * MSG_DONTWAIT (stdio.c), spliced with SPLICE_F_NONBLOCK, and made
 * non-blocking by the client when handed over, which saves an fcntl per
 * pipe. */
static int make_pipe(int *child_end, int *server_end, const char **syscall)
{
	int sv[2];

	*syscall = "socketpair";
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	*child_end = sv[0];
	*server_end = sv[1];
	return 0;
}

/* Fills p->src from the stdio modes; child_end/server_end get the pipes. */
static int open_stdio(const uint8_t mode[3], struct plan *p, int child_end[3],
		      int server_end[3], const char **syscall)
{
	int r = 0;

	for (int i = 0; i < 3; i++)
		child_end[i] = server_end[i] = -1;
	for (int i = 0; i < 3 && r == 0; i++) {
		if (mode[i] == SP_IO_PIPE)
			r = make_pipe(&child_end[i], &server_end[i], syscall);
		p->src[i] = mode[i] == SP_IO_PIPE ? child_end[i]
			  : mode[i] == SP_IO_IGNORE ? (i ? devnull_rw : devnull_r)
			  : std_copy[mode[i] - SP_IO_FD0];
	}
	if (r < 0) {
		close_fds3(child_end);
		close_fds3(server_end);
	}
	return r;
}

/* clone with every signal blocked (no handler may run on the child's
 * borrowed memory); returns the pid, or -errno of clone or of the child. */
static int start(struct plan *p, int *pidfd)
{
	sigset_t all, old;
	int pid, err;

	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, &old) < 0)
		return -errno;
	p->err = 0;
	pid = clone(child_main, stack_top,
		    CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, p, pidfd);
	err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -err;
	if (p->err == 0)
		return pid;
	/* The child has _exited (we resumed at its mm release): reap it. */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(*pidfd);
	return -p->err;
}

void plan_mem_trim(struct plan_mem *mem)
{
	if (mem->cap > 1024 * 1024) {   /* a huge request: give it back */
		free(mem->arena);
		mem->arena = NULL;
		mem->cap = 0;
	}
}

int spawn_prepare(const struct sp_msg *m, struct plan *p, struct plan_mem *mem,
		  int child_end[3], int server_end[3], const char **syscall)
{
	const char *file, *path_env;
	int r;

	for (int i = 0; i < 3; i++)
		child_end[i] = server_end[i] = -1;
	p->env = NULL;
	*syscall = "malloc";
	if ((r = plan_build(m, p, mem, &file, &path_env)) < 0)
		return r;
	p->flags = m->flags;
	p->pgid = 0;
	p->uid = m->uid;
	p->gid = m->gid;
	*syscall = "spawn";
	r = path_search(file, path_env, p->cwd, mem->path, mem->scratch,
			sizeof(mem->path), &p->path);
	if (r == 0)
		r = open_stdio(m->stdio, p, child_end, server_end, syscall);
	if (r < 0)
		plan_release(p);
	return r;
}

int spawn_start(const struct sp_msg *m, struct spawn_out *o,
		const char **syscall)
{
	struct plan p;
	int child_end[3], r;

	r = spawn_prepare(m, &p, &vfork_mem, child_end, o->fds, syscall);
	if (r < 0)
		return r;
	r = start(&p, &o->pidfd);
	close_fds3(child_end);
	plan_release(&p);       /* the child has exec'd, or failed */
	plan_mem_trim(&vfork_mem);
	*syscall = "spawn";
	if (r < 0) {
		close_fds3(o->fds);
		return r;
	}
	o->pid = r;
	return 0;
}
