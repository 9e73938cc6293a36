/* launch.node: the two things the library cannot do cheaply in JS, as a
 * Node-API addon (built with plain cc by scripts/build-native.js, no
 * node-gyp, no headers: the few Node-API calls it makes are declared
 * below; their C ABI is stable across Node versions).
 *
 *   start(file, argv, env)       starts a spawn server with posix_spawn
 *                                (vfork-style: the Node process is not
 *                                copied, so the event loop does not wait
 *                                on a fork whatever the heap's size); its
 *                                fds 3, 4 and 5 are the far ends of three
 *                                new socket pairs (5: SOCK_SEQPACKET, for
 *                                handovers). Returns [pid, fd3, fd4, fd5]
 *                                (our ends, non-blocking, close-on-exec)
 *                                or -errno.
 *   receive(fd)                  one handover message from the server's
 *                                fd 5 (docs/protocol.md, "Handover"):
 *                                [id, stdio fd, received fd (close-on-
 *                                exec, above 2) or -errno when it could
 *                                not be had (EMFILE)], or -errno (EAGAIN:
 *                                none waiting; EPROTO: not a handover
 *                                message). One fd is kept in reserve for
 *                                it, so a process at its fd limit still
 *                                gets the next one.
 *   reap(pid)                    waitpid(pid, WNOHANG): -1 while it runs,
 *                                -2 - errno on failure, else the raw
 *                                wait status.
 *   stat(path, out)              stat(2) of path: 0 with out (an
 *                                Int32Array of 3) = mode, uid, gid, or
 *                                -errno. The precheck's question, without
 *                                the Stats object (and its four Dates)
 *                                fs.statSync builds.
 *   watch(fd, buffer, callback)  reads fd (a spawn server's socket) as
 *                                the event loop finds it readable, into
 *                                buffer, and calls callback(n) for each
 *                                read: n bytes, 0 at EOF, -errno on an
 *                                error (the watch then stops). Returns
 *                                the watch, or -errno (-ENOSYS: this
 *                                Node's libuv could not be found). A
 *                                libuv poll handle: the first net.Socket
 *                                of a process costs about 1.5 ms of
 *                                Node's first-run code, and the library
 *                                only ever needed the reads.
 *   unwatch(watch)               stops the watch and closes its fd; again
 *                                is a no-op.
 *   refWatch(watch, ref)         whether the watch keeps the loop alive.
 *   watchPipe(fd, callback)      reads fd (a child's pipe, handed over
 *                                by its server) as libuv reads a pipe of
 *                                Node's: up to 32 reads of 64 KiB in a
 *                                row, each its own callback(buffer, n)
 *                                (the read is buffer's first n bytes),
 *                                callback(0) at EOF, callback(-errno) on
 *                                an error (the watch then stops).
 *                                Returns the watch (which unwatch and
 *                                refWatch take too) or -errno, as watch
 *                                does.
 *   pauseWatch(watch, paused)    stops or resumes a watchPipe watch's
 *                                reads.
 *   shutdown(fd)                 shutdown(fd, SHUT_WR): 0 or -errno.
 *   envBlock()                   the last envState() snapshot's strings
 *                                encoded as a SPAWN carries them, or -1
 *                                (env_block).
 *   onClosePhase(fn), closeSoon() fn runs in libuv's close phase of this
 *                                loop iteration (see on_phase): 1 if
 *                                registered (once, main thread), 0 if
 *                                not; closeSoon() 0 or -errno.
 *   envState(entries)            whether the C environment (what
 *                                process.env reads and writes on Node's
 *                                main thread) changed since the last call,
 *                                as a stamp, and its "K=V" strings when it
 *                                did (see env_state). Main thread only: the
 *                                copy it compares with is one per process.
 *
 * lib/launch.js loads it, and falls back to node:child_process and to
 * JSON.stringify(process.env) when it cannot. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Node-API, as much of it as this file uses (js_native_api.h). */
typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;                /* napi_ok is 0 */
typedef napi_value (*napi_callback)(napi_env, napi_callback_info);

napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
napi_status napi_create_int32(napi_env, int32_t, napi_value *);
napi_status napi_create_uint32(napi_env, uint32_t, napi_value *);
napi_status napi_get_value_int32(napi_env, napi_value, int32_t *);
napi_status napi_get_value_string_utf8(napi_env, napi_value, char *, size_t, size_t *);
napi_status napi_get_array_length(napi_env, napi_value, uint32_t *);
napi_status napi_get_element(napi_env, napi_value, uint32_t, napi_value *);
napi_status napi_create_array_with_length(napi_env, size_t, napi_value *);
napi_status napi_set_element(napi_env, napi_value, uint32_t, napi_value);
napi_status napi_throw_type_error(napi_env, const char *, const char *);
napi_status napi_get_value_bool(napi_env, napi_value, bool *);
napi_status napi_get_boolean(napi_env, bool, napi_value *);
napi_status napi_create_string_utf8(napi_env, const char *, size_t, napi_value *);
typedef int napi_valuetype;
#define NAPI_FUNCTION 7
napi_status napi_typeof(napi_env, napi_value, napi_valuetype *);
typedef int napi_typedarray_type;
#define NAPI_INT32_ARRAY 5
napi_status napi_get_typedarray_info(napi_env, napi_value, napi_typedarray_type *, size_t *, void **, napi_value *,
				     size_t *);
#define NAPI_AUTO_LENGTH SIZE_MAX
typedef struct napi_ref__ *napi_ref;
typedef struct napi_handle_scope__ *napi_handle_scope;
typedef struct napi_async_context__ *napi_async_context;
typedef void (*napi_finalize)(napi_env, void *, void *);
napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);
napi_status napi_create_buffer(napi_env, size_t, void **, napi_value *);
napi_status napi_create_buffer_copy(napi_env, size_t, const void *, void **, napi_value *);
napi_status napi_create_reference(napi_env, napi_value, uint32_t, napi_ref *);
napi_status napi_delete_reference(napi_env, napi_ref);
napi_status napi_get_reference_value(napi_env, napi_ref, napi_value *);
napi_status napi_open_handle_scope(napi_env, napi_handle_scope *);
napi_status napi_close_handle_scope(napi_env, napi_handle_scope);
napi_status napi_create_external(napi_env, void *, napi_finalize, void *, napi_value *);
napi_status napi_get_value_external(napi_env, napi_value, void **);
napi_status napi_async_init(napi_env, napi_value, napi_value, napi_async_context *);
napi_status napi_async_destroy(napi_env, napi_async_context);
napi_status napi_make_callback(napi_env, napi_async_context, napi_value, napi_value, size_t, const napi_value *,
			       napi_value *);
napi_status napi_get_global(napi_env, napi_value *);
napi_status napi_is_exception_pending(napi_env, bool *);
napi_status napi_get_and_clear_last_exception(napi_env, napi_value *);
napi_status napi_fatal_exception(napi_env, napi_value);
struct uv_loop_s;
napi_status napi_get_uv_event_loop(napi_env, struct uv_loop_s **);
napi_status napi_add_env_cleanup_hook(napi_env, void (*)(void *), void *);

#define FD_SOCK 3
#define FD_FEED 4
#define FD_HANDOVER 5

static napi_value int_value(napi_env env, int32_t n)
{
	napi_value v = NULL;

	napi_create_int32(env, n, &v);
	return v;
}

static napi_value uint_value(napi_env env, uint32_t n)
{
	napi_value v = NULL;

	napi_create_uint32(env, n, &v);
	return v;
}

static napi_value type_error(napi_env env, const char *msg)
{
	napi_throw_type_error(env, NULL, msg);
	return NULL;
}

/* A JS string as a malloc'd C string, or NULL (a TypeError is pending). */
static char *c_string(napi_env env, napi_value v)
{
	size_t len;
	char *s;

	if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != 0) {
		type_error(env, "expected a string");
		return NULL;
	}
	s = malloc(len + 1);
	if (s == NULL) {
		type_error(env, "out of memory");
		return NULL;
	}
	napi_get_value_string_utf8(env, v, s, len + 1, &len);
	return s;
}

static void free_strings(char **list)
{
	if (list == NULL)
		return;
	for (char **p = list; *p; p++)
		free(*p);
	free(list);
}

/* A JS array of strings as a NULL-terminated malloc'd list, or NULL. */
static char **c_strings(napi_env env, napi_value array)
{
	uint32_t n;
	char **list;

	if (napi_get_array_length(env, array, &n) != 0 || n > 4096) {
		type_error(env, "expected an array of strings");
		return NULL;
	}
	list = calloc((size_t)n + 1, sizeof(*list));
	if (list == NULL) {
		type_error(env, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		napi_value item;

		if (napi_get_element(env, array, i, &item) != 0 || (list[i] = c_string(env, item)) == NULL) {
			free_strings(list);
			return NULL;
		}
	}
	return list;
}

/* Moves *fd to the lowest free fd >= min (close-on-exec). 0 or -errno. */
static int move_up(int *fd, int min)
{
	int moved = fcntl(*fd, F_DUPFD_CLOEXEC, min);

	if (moved < 0)
		return -errno;
	close(*fd);
	*fd = moved;
	return 0;
}

/* One fd kept free for the next handover: a process at its fd limit
 * would have the passed fd dropped by the kernel (MSG_CTRUNC). Made when
 * the addon loads, again by start() and after each receive if it could
 * not be then; -1 while it cannot be. */
static int reserve = -1;

static void keep_reserve(void)
{
	int fd;

	if (reserve >= 0 || (fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return;
	/* Not on 0-2 (one was closed): the next server would get it as its
	 * stdio. */
	if (fd <= 2 && move_up(&fd, 3) < 0) {
		close(fd);
		return;
	}
	reserve = fd;
}

/* A socket pair of `type`, both ends close-on-exec: [0] ours,
 * non-blocking, never on fds 0-2 (were one of them closed, the next open
 * would take it: a child inheriting our stdio would get our end); [1] the
 * server's, above fd 5 (so that its dup2 onto 3, 4 or 5 never lands on
 * itself and keeps FD_CLOEXEC). 0 or -errno, with both set to -1. */
static int server_pair(int sv[2], int type)
{
	int r = 0;

	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0) {
		sv[0] = sv[1] = -1;
		return -errno;
	}
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
		r = -errno;
	if (r == 0 && sv[0] <= 2)
		r = move_up(&sv[0], 3);
	if (r == 0 && sv[1] <= FD_HANDOVER)
		r = move_up(&sv[1], FD_HANDOVER + 1);
	if (r < 0) {
		close(sv[0]);
		close(sv[1]);
		sv[0] = sv[1] = -1;
	}
	return r;
}

/* Copies of our fds 0-2 above fd 5 (-1 for one that is closed: the server
 * fills it with /dev/null). Node marks its fds 0-2 close-on-exec, and a
 * dup2 of an fd onto itself does not clear the flag everywhere (musl,
 * older glibc): the server gets each through a copy, as libuv does for
 * 'inherit'. Made before the socket pairs, which may take a closed one's
 * number. 0 or -errno, with all closed again. */
static int std_copies(int std[3])
{
	for (int fd = 0; fd < 3; fd++) {
		std[fd] = fcntl(fd, F_DUPFD_CLOEXEC, FD_HANDOVER + 1);
		if (std[fd] < 0 && errno != EBADF) {
			int err = -errno;

			while (fd-- > 0) {
				if (std[fd] >= 0)
					close(std[fd]);
				std[fd] = -1;
			}
			return err;
		}
	}
	return 0;
}

/* posix_spawn(file) with the three far ends on fds 3, 4 and 5, the copies of
 * our stdio on 0-2, every signal at its default and none blocked (as
 * libuv starts a child). Returns the pid or -errno. */
static pid_t spawn_server(const char *file, char **argv, char **envp, const int far[3], const int std[3])
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	sigset_t all, none;
	pid_t pid;
	int r;

	if ((r = posix_spawn_file_actions_init(&actions)) != 0)
		return -r;
	if ((r = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&actions);
		return -r;
	}
	sigfillset(&all);
	sigemptyset(&none);
	for (int fd = 0; fd < 3 && r == 0; fd++)
		if (std[fd] >= 0)
			r = posix_spawn_file_actions_adddup2(&actions, std[fd], fd);
	if (r == 0
	    && (r = posix_spawn_file_actions_adddup2(&actions, far[0], FD_SOCK)) == 0
	    && (r = posix_spawn_file_actions_adddup2(&actions, far[1], FD_FEED)) == 0
	    && (r = posix_spawn_file_actions_adddup2(&actions, far[2], FD_HANDOVER)) == 0
	    && (r = posix_spawnattr_setsigdefault(&attr, &all)) == 0
	    && (r = posix_spawnattr_setsigmask(&attr, &none)) == 0
	    && (r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) == 0)
		r = posix_spawn(&pid, file, &actions, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	return r == 0 ? pid : -r;
}

/* A server being started: posix_spawn runs on a thread of its own, so
 * that the event loop does not wait for the new process to exec (0.5 to
 * 2 ms here, more on a loaded machine). Shared by that thread and the JS
 * handle (an external); freed by whichever lets go last. */
struct launch {
	atomic_int refs;
	atomic_int result;              /* 0 while running, then the pid or -errno */
	char *file, **argv, **envp;
	int far[3];                     /* the server's ends, closed once it runs */
	int std[3];
};

static void launch_release(struct launch *l)
{
	if (atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	free(l->file);
	free_strings(l->argv);
	free_strings(l->envp);
	free(l);
}

/* Spawns, publishes the outcome, then closes the server's ends: whoever
 * reads our end's EOF finds the outcome (a failed start) already there. */
static void launch_run(struct launch *l)
{
	pid_t pid = spawn_server(l->file, l->argv, l->envp, l->far, l->std);

	/* The strings are the new process's own now (or of no use). */
	free(l->file);
	free_strings(l->argv);
	free_strings(l->envp);
	l->file = NULL;
	l->argv = l->envp = NULL;
	atomic_store(&l->result, pid);
	for (int i = 0; i < 3; i++) {
		if (l->far[i] >= 0)
			close(l->far[i]);
		if (l->std[i] >= 0)
			close(l->std[i]);
	}
}

static void *launch_thread(void *arg)
{
	launch_run(arg);
	launch_release(arg);
	return NULL;
}

static void launch_finalize(napi_env env, void *data, void *hint)
{
	(void)env;
	(void)hint;
	launch_release(data);
}

/* Runs launch_run on a new detached thread, with every signal blocked in
 * it (a signal for the process is not delivered there). 0 or an errno. */
static int launch_detached(struct launch *l)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;
	int r;

	if ((r = pthread_attr_init(&attr)) != 0)
		return r;
	sigfillset(&all);
	if ((r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)) == 0
	    && (r = pthread_sigmask(SIG_BLOCK, &all, &old)) == 0) {
		atomic_fetch_add(&l->refs, 1);
		r = pthread_create(&thread, &attr, launch_thread, l);
		if (r != 0)
			atomic_fetch_sub(&l->refs, 1);
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);  /* cannot fail: a valid set */
	}
	pthread_attr_destroy(&attr);
	return r;
}

static napi_value start(napi_env env, napi_callback_info info)
{
	size_t argc = 3;
	napi_value args[3], out = NULL, handle;
	static const int types[3] = { SOCK_STREAM, SOCK_STREAM, SOCK_SEQPACKET };
	int pairs[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	struct launch *l;
	int r;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 3)
		return type_error(env, "start(file, argv, env)");
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return type_error(env, "out of memory");
	atomic_init(&l->refs, 1);
	atomic_init(&l->result, 0);
	for (int i = 0; i < 3; i++)
		l->far[i] = l->std[i] = -1;
	if ((l->file = c_string(env, args[0])) == NULL || (l->argv = c_strings(env, args[1])) == NULL
	    || (l->envp = c_strings(env, args[2])) == NULL) {
		launch_release(l);
		return NULL;
	}
	/* What would make posix_spawn fail at once is said at once, as
	 * node:child_process throws or emits it: a missing file, one that
	 * may not be run. */
	if (access(l->file, X_OK) < 0) {
		r = -errno;
		launch_release(l);
		return int_value(env, r);
	}
	keep_reserve();
	r = std_copies(l->std);
	for (int i = 0; i < 3 && r == 0; i++)
		r = server_pair(pairs[i], types[i]);
	for (int i = 0; i < 3; i++)
		l->far[i] = pairs[i][1];
	if (r == 0 && napi_create_external(env, l, launch_finalize, NULL, &handle) != 0)
		r = -ENOMEM;
	if (r == 0) {
		atomic_fetch_add(&l->refs, 1);  /* the handle's, dropped by its finalizer */
		if (launch_detached(l) != 0) {
			/* No thread to be had: spawned here, as before. */
			launch_run(l);
			r = atomic_load(&l->result) < 0 ? atomic_load(&l->result) : 0;
		}
	} else {
		for (int i = 0; i < 3; i++) {
			if (l->far[i] >= 0)
				close(l->far[i]);
			if (l->std[i] >= 0)
				close(l->std[i]);
		}
	}
	launch_release(l);
	if (r < 0) {
		for (int i = 0; i < 3; i++)
			if (pairs[i][0] >= 0)
				close(pairs[i][0]);
		return int_value(env, r);
	}
	napi_create_array_with_length(env, 4, &out);
	napi_set_element(env, out, 0, handle);
	for (int i = 0; i < 3; i++)
		napi_set_element(env, out, (uint32_t)i + 1, int_value(env, pairs[i][0]));
	return out;
}

/* launched(handle): 0 while the start runs, then the server's pid, or
 * -errno if posix_spawn failed. */
static napi_value launched(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;
	void *p = NULL;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1
	    || napi_get_value_external(env, arg, &p) != 0 || p == NULL)
		return type_error(env, "launched(handle)");
	return int_value(env, atomic_load(&((struct launch *)p)->result));
}

static napi_value reap(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;
	int32_t pid;
	int status;
	pid_t r;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1
	    || napi_get_value_int32(env, arg, &pid) != 0 || pid <= 0)
		return type_error(env, "reap(pid): pid must be a positive integer");
	do
		r = waitpid(pid, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return int_value(env, -2 - errno);
	return int_value(env, r == 0 ? -1 : status);
}

/* Closes the fds of a control message (one we do not accept). */
static void close_passed(struct msghdr *msg)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
}

static napi_value receive(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg, out;
	int32_t sock;
	uint8_t body[8];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = body, .iov_len = sizeof(body) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.space, .msg_controllen = sizeof(ctl.space) };
	struct cmsghdr *cm;
	uint32_t id = 0;
	ssize_t n;
	int fd, err, r;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1
	    || napi_get_value_int32(env, arg, &sock) != 0 || sock < 0)
		return type_error(env, "receive(fd): fd must be a socket's fd");
	if (reserve >= 0) {
		close(reserve);
		reserve = -1;
	}
	do
		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	err = errno;
	keep_reserve();
	if (n < 0)
		return int_value(env, -err);
	if (n != 5 || (msg.msg_flags & MSG_TRUNC)) {
		close_passed(&msg);
		return int_value(env, n == 0 ? -EPIPE : -EPROTO);
	}
	for (int i = 0; i < 4; i++)
		id |= (uint32_t)body[i] << (8 * i);
	cm = CMSG_FIRSTHDR(&msg);
	if ((msg.msg_flags & MSG_CTRUNC) || cm == NULL || cm->cmsg_level != SOL_SOCKET
	    || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int))
	    || CMSG_NXTHDR(&msg, cm) != NULL) {
		/* The message came, its fd did not: no room for it here
		 * (EMFILE), or not one fd. That stream is lost to us. */
		close_passed(&msg);
		fd = (msg.msg_flags & MSG_CTRUNC) ? -EMFILE : -EPROTO;
	} else {
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		/* Never on 0-2 (one of them was closed): a child inheriting
		 * our stdio would get it. */
		if (fd <= 2 && (r = move_up(&fd, 3)) < 0) {
			close(fd);
			fd = r;
		}
	}
	napi_create_array_with_length(env, 3, &out);
	napi_set_element(env, out, 0, uint_value(env, id));
	napi_set_element(env, out, 1, int_value(env, body[4]));
	napi_set_element(env, out, 2, int_value(env, fd));
	return out;
}

/* The environment as last seen: its strings end to end, NUL-separated. */
static char *seen;
static size_t seen_len;
static size_t seen_count;
static uint32_t stamp;

/* True if environ is what `seen` holds; cheap (one pass, no allocation). */
static int environ_unchanged(void)
{
	const char *p = seen;
	size_t count = 0;

	if (seen == NULL)
		return 0;
	for (char **e = environ; e && *e; e++, count++) {
		size_t n = strlen(*e) + 1;

		if (count == seen_count || (size_t)(p - seen) + n > seen_len || memcmp(p, *e, n) != 0)
			return 0;
		p += n;
	}
	return count == seen_count && (size_t)(p - seen) == seen_len;
}

/* Copies environ into `seen`; on failure `seen` is left NULL (every call
 * then counts as a change, which is always correct). */
static void environ_remember(void)
{
	size_t len = 0, count = 0;
	char *p;

	free(seen);
	seen = NULL;
	for (char **e = environ; e && *e; e++, count++)
		len += strlen(*e) + 1;
	if ((seen = malloc(len ? len : 1)) == NULL)
		return;
	/* Bounded by the first walk: native code that calls setenv without
	 * Node's lock may change environ between the two (the copy is then
	 * short, and the next call finds a change). */
	p = seen;
	count = 0;
	for (char **e = environ; e && *e; e++, count++) {
		size_t n = strlen(*e) + 1;

		if ((size_t)(p - seen) + n > len)
			break;
		memcpy(p, *e, n);
		p += n;
	}
	seen_len = (size_t)(p - seen);
	seen_count = count;
}

/* Node's lock around the environment: node::per_process::env_var_mutex, a
 * node::Mutex (whose only member is a uv_mutex_t), taken by every access
 * to process.env, from any thread (a worker with SHARE_ENV writes it from
 * its own). It and libuv's lock calls are exported by the node binary;
 * without them the environment is not read here at all. */
typedef void uv_lock_fn(void *);
static void *env_mutex;
static uv_lock_fn *lock_env, *unlock_env;
static int lock_state;          /* 0 not looked up, 1 found, -1 missing */

static int env_lock_found(void)
{
	if (lock_state == 0) {
		env_mutex = dlsym(RTLD_DEFAULT, "_ZN4node11per_process13env_var_mutexE");
		*(void **)&lock_env = dlsym(RTLD_DEFAULT, "uv_mutex_lock");
		*(void **)&unlock_env = dlsym(RTLD_DEFAULT, "uv_mutex_unlock");
		lock_state = env_mutex && lock_env && unlock_env ? 1 : -1;
	}
	return lock_state == 1;
}

/* envState(entries): under Node's lock, compares environ with the copy
 * taken at the last change. Returns the stamp (a number that moves at each
 * change) when unchanged and `entries` is false; else [stamp, ...the
 * "K=V" strings of the copy], the copy and its stamp consistent with each
 * other whatever other threads do. -1 when that cannot be known. */
static napi_value env_state(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg, out = NULL, item;
	bool entries = false;
	int changed;
	uint32_t i = 1;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0
	    || (argc > 0 && napi_get_value_bool(env, arg, &entries) != 0))
		return type_error(env, "envState(entries: boolean)");
	if (!env_lock_found())
		return int_value(env, -1);
	lock_env(env_mutex);
	changed = !environ_unchanged();
	if (changed) {
		environ_remember();
		stamp++;
	}
	unlock_env(env_mutex);
	/* `seen` is ours, and only the main thread calls this: read unlocked. */
	if (seen == NULL)
		return int_value(env, -1);
	if (!changed && !entries) {
		napi_create_uint32(env, stamp, &out);
		return out;
	}
	napi_create_array_with_length(env, seen_count + 1, &out);
	napi_create_uint32(env, stamp, &item);
	napi_set_element(env, out, 0, item);
	for (const char *p = seen; p < seen + seen_len; p += strlen(p) + 1, i++) {
		napi_create_string_utf8(env, p, NAPI_AUTO_LENGTH, &item);
		napi_set_element(env, out, i, item);
	}
	return out;
}

/* Whether s[0..n) is UTF-8 as V8 decodes it without replacing anything:
 * no overlong form, no surrogate, nothing above U+10FFFF. */
static bool utf8_exact(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t len;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += len;
	}
	return true;
}

/* envBlock(): the strings of the last envState() snapshot as a SPAWN
 * carries them ([u32 length, little-endian][bytes], each), in a new
 * Buffer: what lib/protocol.js would make of the same strings, without a
 * JS call per variable (a process's first spawn spent 0.5 ms there). -1
 * with no snapshot, or when a string is not exact UTF-8 (its JS string
 * has U+FFFD for the bytes, and so does Node's child: JS encodes it then).
 * Main thread only, as envState. */
static napi_value env_block(napi_env env, napi_callback_info info)
{
	napi_value out;
	unsigned char *p;
	void *data = NULL;

	(void)info;
	if (seen == NULL || !utf8_exact((const unsigned char *)seen, seen_len))
		return int_value(env, -1);
	/* Each string: its NUL out, a 4-byte length in. */
	if (napi_create_buffer(env, seen_len - seen_count + 4 * seen_count, &data, &out) != 0)
		return int_value(env, -1);
	p = data;
	for (const char *e = seen; e < seen + seen_len; e += strlen(e) + 1) {
		size_t n = strlen(e);

		p[0] = (unsigned char)n;
		p[1] = (unsigned char)(n >> 8);
		p[2] = (unsigned char)(n >> 16);
		p[3] = (unsigned char)(n >> 24);
		memcpy(p + 4, e, n);
		p += 4 + n;
	}
	return out;
}

static napi_value stat_path(napi_env env, napi_callback_info info)
{
	size_t argc = 2, len = 0, n = 0;
	napi_value args[2];
	napi_typedarray_type type;
	/* Room for PATH_MAX bytes and then some: the copy stops short of a
	 * character that does not fit whole (up to 4 bytes in UTF-8), so a
	 * longer path still comes out at least PATH_MAX long. */
	char path[PATH_MAX + 4];
	int32_t *out = NULL;
	struct stat st;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 2
	    || napi_get_typedarray_info(env, args[1], &type, &n, (void **)&out, NULL, NULL) != 0
	    || type != NAPI_INT32_ARRAY || n < 3)
		return type_error(env, "stat(path, Int32Array(3))");
	if (napi_get_value_string_utf8(env, args[0], path, sizeof(path), &len) != 0)
		return type_error(env, "expected a string");
	/* The kernel refuses a name that fills PATH_MAX without its NUL. */
	if (len >= PATH_MAX)
		return int_value(env, -ENAMETOOLONG);
	if (stat(path, &st) < 0)
		return int_value(env, -errno);
	out[0] = (int32_t)st.st_mode;
	out[1] = (int32_t)st.st_uid;
	out[2] = (int32_t)st.st_gid;
	return int_value(env, 0);
}

/* The watch: a libuv poll handle on a server's socket, read here. libuv's
 * handle types are opaque to this file (no headers): its functions are
 * looked up in the node binary, and the handle's memory, whose size
 * uv_handle_size() gives, follows the struct. */
#define UV_POLL_TYPE 8                  /* uv_handle_type's UV_POLL */
#define UV_IDLE_TYPE 6                  /* and UV_IDLE */
#define UV_READABLE_EVENT 1
#define UV_WRITABLE_EVENT 2
#define UV_DISCONNECT_EVENT 4
#define WATCH_EVENTS (UV_READABLE_EVENT | UV_DISCONNECT_EVENT)

typedef void uv_poll_cb_fn(void *handle, int status, int events);
typedef void uv_close_cb_fn(void *handle);
static struct {
	int state;                      /* 0 not looked up, 1 found, -1 missing */
	size_t (*handle_size)(int);
	int (*poll_init)(struct uv_loop_s *, void *, int);
	int (*poll_start)(void *, int, uv_poll_cb_fn *);
	int (*poll_stop)(void *);
	void (*close)(void *, uv_close_cb_fn *);
	void (*ref)(void *);
	void (*unref)(void *);
	int (*idle_init)(struct uv_loop_s *, void *);   /* closePhase's handles; optional */
} uv;

/* The main thread's loop, recorded when the addon is registered there (a
 * worker's loop is its own, and is closed at the worker's exit). */
static struct uv_loop_s *main_loop;

/* An environment that may make watches (one registration on the main
 * thread), told when its teardown begins: an env cleanup hook, which runs
 * after process 'exit' and before Node-API's own hook frees the env (hooks
 * run newest first, and Node-API's was added before the module's init).
 * Node then runs the loop to close its own handles, and a watch's poll,
 * still open, may fire in it: it must not call into the env any more (a
 * freed env: SIGSEGV at exit). Its callbacks stop the poll and return;
 * the process (or this environment) is going away, and so are the
 * servers' sockets. Never freed: a watch may outlive its env's teardown. */
struct env_state {
	napi_env env;
	bool closing;
};

static void env_cleanup(void *arg);

static int uv_found(void)
{
	if (uv.state == 0) {
		*(void **)&uv.handle_size = dlsym(RTLD_DEFAULT, "uv_handle_size");
		*(void **)&uv.poll_init = dlsym(RTLD_DEFAULT, "uv_poll_init");
		*(void **)&uv.poll_start = dlsym(RTLD_DEFAULT, "uv_poll_start");
		*(void **)&uv.poll_stop = dlsym(RTLD_DEFAULT, "uv_poll_stop");
		*(void **)&uv.close = dlsym(RTLD_DEFAULT, "uv_close");
		*(void **)&uv.ref = dlsym(RTLD_DEFAULT, "uv_ref");
		*(void **)&uv.unref = dlsym(RTLD_DEFAULT, "uv_unref");
		*(void **)&uv.idle_init = dlsym(RTLD_DEFAULT, "uv_idle_init");
		uv.state = uv.handle_size && uv.poll_init && uv.poll_start && uv.poll_stop && uv.close && uv.ref
				   && uv.unref ? 1 : -1;
		/* A poll handle is some 160 bytes; anything far off is not
		 * the libuv this file was written against. */
		if (uv.state == 1 && (uv.handle_size(UV_POLL_TYPE) < 64 || uv.handle_size(UV_POLL_TYPE) > 4096))
			uv.state = -1;
		if (uv.state == 1 && uv.idle_init != NULL
		    && (uv.handle_size(UV_IDLE_TYPE) < 64 || uv.handle_size(UV_IDLE_TYPE) > 4096))
			uv.idle_init = NULL;
	}
	return uv.state == 1;
}

struct watch {
	napi_env env;
	struct env_state *state;        /* its env's: closing, no more calls into it */
	napi_ref callback;
	napi_ref buffer;                /* keeps `data` alive (not a pipe's) */
	napi_async_context context;
	char *data;                     /* NULL for a pipe (pipe_read) */
	size_t size;
	int fd;
	bool closed;
	bool pipe;                      /* watchPipe's: each read delivered as a Buffer of its own */
	bool paused;                    /* pauseWatch: no reads until resumed */
	bool ended;                     /* EOF or an error delivered: the poll is stopped for good */
	bool want_write;                /* waitWritable: one WATCH_WRITABLE call when fd can take more */
	int refs;                       /* the handle's (until its close callback) and the external's */
	_Alignas(max_align_t) unsigned char handle[];
};

#define WATCH_OF(h) ((struct watch *)((unsigned char *)(h) - offsetof(struct watch, handle)))

static void watch_release(struct watch *w)
{
	if (--w->refs == 0)
		free(w);
}

static void watch_freed(void *handle)
{
	watch_release(WATCH_OF(handle));
}

/* The external's finalizer: a watch JS can still name stays allocated,
 * closed or not, so that a late unwatch or refWatch finds it closed. */
static void watch_finalize(napi_env env, void *data, void *hint)
{
	(void)env;
	(void)hint;
	watch_release(data);
}

/* Hands one read's outcome to the callback (called on the global object:
 * napi_make_callback wants an object) as a libuv callback of Node's
 * would: a callback scope, so that the next tick queue and the promise
 * reactions run after it; an exception it throws is an uncaught one. */
static void watch_call(struct watch *w, size_t argc, const napi_value *args)
{
	napi_env env = w->env;
	napi_value fn, recv, err;
	bool pending = false;

	if (napi_get_reference_value(env, w->callback, &fn) == 0 && fn != NULL && napi_get_global(env, &recv) == 0
	    && napi_make_callback(env, w->context, recv, fn, argc, args, NULL) != 0
	    && napi_is_exception_pending(env, &pending) == 0 && pending
	    && napi_get_and_clear_last_exception(env, &err) == 0)
		napi_fatal_exception(env, err);
}

static void watch_deliver(struct watch *w, int32_t n)
{
	napi_handle_scope scope;
	napi_value arg;

	if (napi_open_handle_scope(w->env, &scope) != 0)
		return;
	if (napi_create_int32(w->env, n, &arg) == 0)
		watch_call(w, 1, &arg);
	napi_close_handle_scope(w->env, scope);
}

/* What the callback hears when a watch that waits (waitWritable) can be
 * written to again: no read's count (> 0), EOF (0) or -errno is this. */
#define WATCH_WRITABLE INT32_MIN

static int watch_events(const struct watch *w)
{
	return WATCH_EVENTS | (w->want_write ? UV_WRITABLE_EVENT : 0);
}

/* libuv reports an EPOLLERR as status UV_EBADF, and stops the handle
 * then: the reads say what the error is (ECONNRESET, say), after the
 * bytes still queued, as a net.Socket's would. Otherwise one read per
 * wake-up: the poll is level-triggered. A wake-up for writing (asked
 * once by waitWritable) is told first, and the poll goes back to reading
 * only; a wake-up for writing alone reads nothing. */
static void on_readable(void *handle, int status, int events)
{
	struct watch *w = WATCH_OF(handle);
	bool stopped = status < 0;
	ssize_t n;
	int err;

	if (w->state->closing) {
		uv.poll_stop(w->handle);
		return;
	}
	if (!stopped && w->want_write && (events & UV_WRITABLE_EVENT)) {
		w->want_write = false;
		if ((err = uv.poll_start(w->handle, watch_events(w), on_readable)) < 0) {
			watch_deliver(w, err);
			return;
		}
		watch_deliver(w, WATCH_WRITABLE);
		if (!(events & (UV_READABLE_EVENT | UV_DISCONNECT_EVENT)))
			return;
	}
	while (!w->closed) {
		do
			n = read(w->fd, w->data, w->size);
		while (n < 0 && errno == EINTR);
		err = errno;
		if (n > 0) {
			watch_deliver(w, (int32_t)n);
			if (stopped)
				continue;
			return;
		}
		if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
			if (stopped && (err = uv.poll_start(w->handle, watch_events(w), on_readable)) < 0)
				watch_deliver(w, err);
			return;
		}
		if (!stopped)
			uv.poll_stop(w->handle);
		watch_deliver(w, n < 0 ? -err : 0);
		return;
	}
}

/* A handed-over pipe, read as libuv reads a pipe of Node's (uv__read):
 * up to 32 reads in a row while each fills the buffer, each delivered
 * as its own callback; a short read ends the round, unless the writer
 * has gone, where libuv reads the EOF at once too (on POLLHUP; here on
 * UV_DISCONNECT, EPOLLRDHUP, which a socket raises when its peer closes:
 * servers hand over socket pairs' ends, never pipes). The callback may
 * pause or unwatch between two reads. The EOF and an error stop the
 * watch for good. */
enum { PIPE_READ = 64 * 1024, PIPE_READS_IN_A_ROW = 32 };

/* The Buffer the next read goes into (main thread only: watch_new
 * refuses the others), and the env it was made in. A full read is
 * delivered in it, and the next read gets a new one; a shorter read is
 * copied into a Buffer of its size (a short read ends a round, so that
 * is about one copy per wake-up), and this one is kept. Node reads into
 * a new buffer too, and shrinks it to the read; a chunk here never holds
 * more memory than its bytes either. */
static napi_ref spare;
static napi_env spare_env;
static char *spare_data;

static void drop_spare(void)
{
	if (spare != NULL)
		napi_delete_reference(spare_env, spare);
	spare = NULL;
}

static void env_cleanup(void *arg)
{
	struct env_state *st = arg;

	st->closing = true;
	/* Its spare Buffer goes now, while the env can still let go of it. */
	if (spare != NULL && spare_env == st->env)
		drop_spare();
}

/* An allocation failed: no exception may be left pending for the
 * callback that reports it. */
static void clear_exception(napi_env env)
{
	bool pending = false;
	napi_value err;

	if (napi_is_exception_pending(env, &pending) == 0 && pending)
		napi_get_and_clear_last_exception(env, &err);
}

/* One read of the pipe (recv with MSG_DONTWAIT: whatever the fd's own
 * flags), delivered if it got bytes. *n and *err are its result and
 * errno; -1 and ENOMEM if a Buffer could not be had (then the bytes of a
 * read are lost, and the stream ends with ENOMEM). */
static void pipe_read(struct watch *w, ssize_t *n, int *err)
{
	napi_env env = w->env;
	napi_handle_scope scope;
	napi_value buf = NULL, args[2];
	void *data = NULL;
	bool ok;

	*n = -1;
	*err = ENOMEM;
	if (napi_open_handle_scope(env, &scope) != 0)
		return;
	if (spare != NULL && (spare_env != env || napi_get_reference_value(env, spare, &buf) != 0 || buf == NULL))
		drop_spare();
	if (spare == NULL) {
		if (napi_create_buffer(env, PIPE_READ, &data, &buf) != 0
		    || napi_create_reference(env, buf, 1, &spare) != 0) {
			spare = NULL;
			clear_exception(env);
			napi_close_handle_scope(env, scope);
			return;
		}
		spare_env = env;
		spare_data = data;
	}
	do
		*n = recv(w->fd, spare_data, PIPE_READ, MSG_DONTWAIT);
	while (*n < 0 && errno == EINTR);
	*err = errno;
	if (*n > 0) {
		if (*n == PIPE_READ)
			drop_spare();
		ok = (*n == PIPE_READ || napi_create_buffer_copy(env, (size_t)*n, spare_data, NULL, &buf) == 0)
		     && napi_create_int32(env, (int32_t)*n, &args[1]) == 0;
		if (ok) {
			args[0] = buf;
			watch_call(w, 2, args);
		} else {
			clear_exception(env);
			*n = -1;
			*err = ENOMEM;
		}
	}
	napi_close_handle_scope(env, scope);
}

static void on_pipe_readable(void *handle, int status, int events);

/* A pipe watch's end: the EOF (0) or an error (-errno), delivered once;
 * its poll is stopped for good. */
static void pipe_end(struct watch *w, int32_t n)
{
	w->ended = true;
	watch_deliver(w, n);
}

/* (Re)starts a pipe watch's poll; a failure ends the stream with it. */
static void pipe_poll(struct watch *w)
{
	int r = uv.poll_start(w->handle, WATCH_EVENTS, on_pipe_readable);

	if (r < 0)
		pipe_end(w, r);
}

static void on_pipe_readable(void *handle, int status, int events)
{
	struct watch *w = WATCH_OF(handle);
	bool stopped = status < 0;      /* EPOLLERR: libuv stopped the handle */
	ssize_t n;
	int err;

	if (w->state->closing) {
		uv.poll_stop(w->handle);
		return;
	}
	for (int i = 0; i < PIPE_READS_IN_A_ROW && !w->closed && !w->paused; i++) {
		pipe_read(w, &n, &err);
		if (n > 0) {
			if (n == PIPE_READ || stopped || (events & UV_DISCONNECT_EVENT))
				continue;
			return;
		}
		if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK))
			break;
		if (!stopped)
			uv.poll_stop(w->handle);
		pipe_end(w, n < 0 ? -err : 0);
		return;
	}
	if (stopped && !w->closed && !w->paused)
		pipe_poll(w);
}

static struct watch *watch_arg(napi_env env, napi_value v)
{
	void *p = NULL;

	if (napi_get_value_external(env, v, &p) != 0 || p == NULL) {
		type_error(env, "expected a watch");
		return NULL;
	}
	return p;
}

/* A new watch on fd (reads into data, or a pipe's into the shared
 * buffer), started; or -errno as a JS number, the fd left to the caller. */
static napi_value watch_new(napi_env env, struct env_state *st, int32_t fd, napi_value buffer, void *data, size_t size,
			    napi_value callback)
{
	napi_value name, out = NULL;
	struct uv_loop_s *loop = NULL;
	struct watch *w;
	bool pipe = buffer == NULL;
	int r;

	/* The main thread's loop only: a worker's would be closed at its
	 * exit with this handle still open, which aborts the process. */
	if (!uv_found() || st == NULL || st->closing || napi_get_uv_event_loop(env, &loop) != 0 || loop == NULL
	    || loop != main_loop)
		return int_value(env, -ENOSYS);
	w = calloc(1, sizeof(*w) + uv.handle_size(UV_POLL_TYPE));
	if (w == NULL)
		return int_value(env, -ENOMEM);
	w->env = env;
	w->state = st;
	w->refs = 1;                    /* the handle's */
	w->fd = fd;
	w->data = data;
	w->size = size;
	w->pipe = pipe;
	if ((r = uv.poll_init(loop, w->handle, fd)) < 0) {
		free(w);
		return int_value(env, r);
	}
	if (napi_create_reference(env, callback, 1, &w->callback) != 0
	    || (!pipe && napi_create_reference(env, buffer, 1, &w->buffer) != 0)
	    || napi_create_string_utf8(env, pipe ? "SPAWNPOOL_PIPE" : "SPAWNPOOL_SERVER", NAPI_AUTO_LENGTH, &name) != 0
	    || napi_async_init(env, NULL, name, &w->context) != 0
	    || napi_create_external(env, w, watch_finalize, NULL, &out) != 0) {
		r = -ENOMEM;
	} else {
		w->refs++;              /* the external's, even if it is dropped below */
		r = uv.poll_start(w->handle, WATCH_EVENTS, pipe ? on_pipe_readable : on_readable);
	}
	if (r < 0) {
		w->fd = -1;                 /* the caller keeps its fd */
		w->closed = true;
		if (w->callback)
			napi_delete_reference(env, w->callback);
		if (w->buffer)
			napi_delete_reference(env, w->buffer);
		if (w->context)
			napi_async_destroy(env, w->context);
		uv.close(w->handle, watch_freed);
		return int_value(env, r);
	}
	return out;
}

static napi_value watch(napi_env env, napi_callback_info info)
{
	size_t argc = 3, size = 0;
	napi_value args[3];
	void *data = NULL, *st = NULL;
	int32_t fd;

	if (napi_get_cb_info(env, info, &argc, args, NULL, &st) != 0 || argc < 3
	    || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0
	    || napi_get_buffer_info(env, args[1], &data, &size) != 0 || size == 0 || size > INT32_MAX)
		return type_error(env, "watch(fd, buffer, callback)");
	return watch_new(env, st, fd, args[1], data, size, args[2]);
}

static napi_value watch_pipe(napi_env env, napi_callback_info info)
{
	size_t argc = 2;
	napi_value args[2];
	void *st = NULL;
	int32_t fd;

	if (napi_get_cb_info(env, info, &argc, args, NULL, &st) != 0 || argc < 2
	    || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0)
		return type_error(env, "watchPipe(fd, callback)");
	return watch_new(env, st, fd, NULL, NULL, PIPE_READ, args[1]);
}

static napi_value pause_watch(napi_env env, napi_callback_info info)
{
	size_t argc = 2;
	napi_value args[2];
	struct watch *w;
	bool paused = false;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 2
	    || napi_get_value_bool(env, args[1], &paused) != 0)
		return type_error(env, "pauseWatch(watch, paused)");
	if ((w = watch_arg(env, args[0])) == NULL)
		return NULL;
	if (!w->pipe)
		return type_error(env, "pauseWatch: not a watchPipe watch");
	if (w->closed || w->ended || w->paused == paused)
		return NULL;
	w->paused = paused;
	if (paused)
		uv.poll_stop(w->handle);
	else
		pipe_poll(w);
	return NULL;
}

/* waitWritable(watch): the callback hears WATCH_WRITABLE once, when the
 * fd can take more (at once if it can now). A watch of watch()'s only
 * (not a pipe's); true if the wait is on. */
static napi_value wait_writable(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg, out = NULL;
	struct watch *w;
	bool on = false;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1)
		return type_error(env, "waitWritable(watch)");
	if ((w = watch_arg(env, arg)) == NULL)
		return NULL;
	if (w->pipe)
		return type_error(env, "waitWritable: a watchPipe watch");
	if (!w->closed && !w->ended && !w->state->closing) {
		if (!w->want_write) {
			w->want_write = true;
			if (uv.poll_start(w->handle, watch_events(w), on_readable) < 0)
				w->want_write = false;
		}
		on = w->want_write;
	}
	napi_get_boolean(env, on, &out);
	return out;
}

static napi_value unwatch(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;
	struct watch *w;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1)
		return type_error(env, "unwatch(watch)");
	if ((w = watch_arg(env, arg)) == NULL || w->closed)
		return NULL;
	w->closed = true;
	/* uv_close takes the fd out of the loop's epoll set before it
	 * returns: the fd may be closed now. */
	uv.close(w->handle, watch_freed);
	close(w->fd);
	napi_delete_reference(env, w->callback);
	if (w->buffer != NULL)
		napi_delete_reference(env, w->buffer);
	napi_async_destroy(env, w->context);
	return NULL;
}

static napi_value ref_watch(napi_env env, napi_callback_info info)
{
	size_t argc = 2;
	napi_value args[2];
	struct watch *w;
	bool ref = false;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 2
	    || napi_get_value_bool(env, args[1], &ref) != 0)
		return type_error(env, "refWatch(watch, ref)");
	if ((w = watch_arg(env, args[0])) == NULL || w->closed)
		return NULL;
	if (ref)
		uv.ref(w->handle);
	else
		uv.unref(w->handle);
	return NULL;
}

static napi_value shutdown_fd(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;
	int32_t fd;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1
	    || napi_get_value_int32(env, arg, &fd) != 0 || fd < 0)
		return type_error(env, "shutdown(fd)");
	return int_value(env, shutdown(fd, SHUT_WR) < 0 ? -errno : 0);
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* pidfd(pid): a pidfd of process `pid`, readable once it has exited, or a
 * negative errno (ENOSYS before Linux 5.3). A server's:
 * its socket closes only when its parked children, which share its fd
 * table, have exited too; the pidfd tells its own exit at once. */
static napi_value pidfd(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;
	int32_t pid;
	int fd, r;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1
	    || napi_get_value_int32(env, arg, &pid) != 0 || pid <= 0)
		return type_error(env, "pidfd(pid)");
	fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);        /* close-on-exec always */
	if (fd < 0)
		return int_value(env, -errno);
	/* Never one of 0-2 (closed in this process): a child of Node's that
	 * inherits its stdio would get the pidfd. */
	if (fd < 3 && (r = move_up(&fd, 3)) < 0) {
		close(fd);
		return int_value(env, r);
	}
	return int_value(env, fd);
}

/* uncaught(error): hands `error` to Node's uncaught-exception handling now,
 * as Node does for an exception that leaves a libuv callback: 'uncaught
 * Exception' is emitted (or the process ends), and the async id stack is
 * reset. A callback of ours runs in napi_make_callback's scope, whose
 * TryCatch would otherwise hold the exception until the scope closes, and
 * a next-tick callback that threw leaves its async id on the stack (Node's
 * tick loop pops it only when it returns): the scope's close would then
 * find the stack corrupted and abort the process. */
static napi_value uncaught(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value arg;

	if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != 0 || argc < 1)
		return type_error(env, "uncaught(error)");
	napi_fatal_exception(env, arg);
	return NULL;
}

/* write(fd, buffer): one write(2) of the whole buffer (EINTR retried):
 * the bytes the kernel took, or a negative errno (-EAGAIN when the socket
 * is full). A SPAWN frame's write, without fs.writeSync's request object. */
static napi_value write_fd(napi_env env, napi_callback_info info)
{
	size_t argc = 2, len = 0;
	napi_value args[2];
	int32_t fd;
	void *data = NULL;
	ssize_t n;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 2
	    || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0
	    || napi_get_buffer_info(env, args[1], &data, &len) != 0)
		return type_error(env, "write(fd, Buffer)");
	if (len > INT32_MAX)
		len = INT32_MAX;
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR);
	return int_value(env, n < 0 ? -errno : (int32_t)n);
}

/* read(fd, buffer, offset): one read(2) into buffer[offset..] (EINTR
 * retried): the bytes read, 0 at EOF, or a negative errno (-EAGAIN when
 * nothing is waiting). The parked-pid feed's read, which is often empty:
 * without the exception fs.readSync throws for EAGAIN. */
static napi_value read_fd(napi_env env, napi_callback_info info)
{
	size_t argc = 3, len = 0;
	napi_value args[3];
	int32_t fd, off;
	void *data = NULL;
	ssize_t n;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 3
	    || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0
	    || napi_get_buffer_info(env, args[1], &data, &len) != 0
	    || napi_get_value_int32(env, args[2], &off) != 0 || off < 0
	    || (size_t)off >= len)
		return type_error(env, "read(fd, Buffer, offset)");
	len -= (size_t)off;
	if (len > INT32_MAX)
		len = INT32_MAX;
	do
		n = read(fd, (char *)data + off, len);
	while (n < 0 && errno == EINTR);
	return int_value(env, n < 0 ? -errno : (int32_t)n);
}

/* The close phase: libuv runs the close callbacks of the handles closed
 * during a loop iteration after its check phase (setImmediate), newest
 * first. onClosePhase(fn) registers fn; closeSoon() has it called there,
 * as the close callback of an idle handle opened and closed for the
 * purpose (no system call), in a callback scope of its own, as Node runs
 * a pipe handle's close callback: the stdio streams' 'close' then comes
 * where Node's does, after any setImmediate queued before the close phase
 * (in an 'exit' listener, say). Called from the close phase itself, fn
 * runs in the next iteration's, as a handle closed there would. */
static struct {
	struct env_state *state;
	napi_ref fn;
	napi_async_context context;
} phase;

static void on_phase(void *handle);

/* A handle closed for the close phase: 0 or -errno. */
static int arm_phase(void)
{
	void *handle = calloc(1, uv.handle_size(UV_IDLE_TYPE));

	if (handle == NULL)
		return -ENOMEM;
	if (uv.idle_init(main_loop, handle) != 0) {
		free(handle);
		return -EINVAL;
	}
	uv.close(handle, on_phase);
	return 0;
}

static void on_phase(void *handle)
{
	struct env_state *st = phase.state;
	napi_handle_scope scope;
	napi_value fn = NULL, recv, err;
	bool pending = false;

	free(handle);
	if (st == NULL || st->closing)
		return;
	/* The library waits for this call (no other close phase is asked
	 * for meanwhile): one that cannot be made now is tried again in the
	 * next iteration's close phase. */
	if (napi_open_handle_scope(st->env, &scope) != 0) {
		arm_phase();
		return;
	}
	if (napi_get_reference_value(st->env, phase.fn, &fn) != 0 || fn == NULL || napi_get_global(st->env, &recv) != 0)
		arm_phase();
	else if (napi_make_callback(st->env, phase.context, recv, fn, 0, NULL, NULL) != 0
		 && napi_is_exception_pending(st->env, &pending) == 0 && pending
		 && napi_get_and_clear_last_exception(st->env, &err) == 0)
		napi_fatal_exception(st->env, err);
	napi_close_handle_scope(st->env, scope);
}

static napi_value on_close_phase(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value fn, name;
	void *st = NULL;
	napi_valuetype type;

	if (napi_get_cb_info(env, info, &argc, &fn, NULL, &st) != 0 || argc < 1
	    || napi_typeof(env, fn, &type) != 0 || type != NAPI_FUNCTION)
		return type_error(env, "onClosePhase(fn)");
	/* Once, on the main thread, with a libuv that has idle handles. */
	if (st == NULL || phase.state != NULL || !uv_found() || uv.idle_init == NULL)
		return int_value(env, 0);
	if (napi_create_reference(env, fn, 1, &phase.fn) != 0)
		return int_value(env, 0);
	if (napi_create_string_utf8(env, "SPAWNPOOL_CLOSE", NAPI_AUTO_LENGTH, &name) != 0
	    || napi_async_init(env, NULL, name, &phase.context) != 0) {
		napi_delete_reference(env, phase.fn);
		return int_value(env, 0);
	}
	phase.state = st;
	return int_value(env, 1);
}

static napi_value close_soon(napi_env env, napi_callback_info info)
{
	(void)info;
	if (phase.state == NULL || phase.state->closing || phase.state->env != env)
		return int_value(env, -ENOSYS);
	return int_value(env, arm_phase());
}

static void export_with(napi_env env, napi_value exports, const char *name, napi_callback cb, void *data)
{
	napi_value fn;

	if (napi_create_function(env, name, strlen(name), cb, data, &fn) == 0)
		napi_set_named_property(env, exports, name, fn);
}

static void export(napi_env env, napi_value exports, const char *name, napi_callback cb)
{
	export_with(env, exports, name, cb, NULL);
}

napi_value napi_register_module_v1(napi_env env, napi_value exports);

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
	/* The reserve is the main thread's (start and receive run there),
	 * and so are watches (main_loop): a worker thread loading the addon
	 * leaves both alone. */
	struct env_state *st = NULL;

	if (syscall(SYS_gettid) == getpid()) {
		keep_reserve();
		if (napi_get_uv_event_loop(env, &main_loop) != 0)
			main_loop = NULL;
		/* A state of its own per registration (a hook's function and
		 * argument must be unique). No hook, no watches. */
		if (main_loop != NULL && (st = calloc(1, sizeof(*st))) != NULL) {
			st->env = env;
			if (napi_add_env_cleanup_hook(env, env_cleanup, st) != 0) {
				free(st);
				st = NULL;
			}
		}
	}
	export(env, exports, "start", start);
	export(env, exports, "launched", launched);
	export(env, exports, "reap", reap);
	export(env, exports, "envState", env_state);
	export(env, exports, "envBlock", env_block);
	export(env, exports, "receive", receive);
	export(env, exports, "stat", stat_path);
	export_with(env, exports, "watch", watch, st);
	export(env, exports, "unwatch", unwatch);
	export(env, exports, "refWatch", ref_watch);
	export_with(env, exports, "watchPipe", watch_pipe, st);
	export(env, exports, "pauseWatch", pause_watch);
	export(env, exports, "waitWritable", wait_writable);
	export(env, exports, "shutdown", shutdown_fd);
	export(env, exports, "write", write_fd);
	export(env, exports, "uncaught", uncaught);
	export(env, exports, "pidfd", pidfd);
	export(env, exports, "read", read_fd);
	export_with(env, exports, "onClosePhase", on_close_phase, st);
	export(env, exports, "closeSoon", close_soon);
	return exports;
}
