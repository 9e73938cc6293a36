/* launch.node: the two things the library cannot do cheaply in JS, as a
 * Node-API addon (built with plain cc by scripts/build-native.js, no
 * node-gyp, no headers: the few Node-API calls it makes are declared
 * below; their C ABI is stable across Node versions).
 *
 *   start(file, argv, env, fds)  starts a spawn server with posix_spawn
 *                                (vfork-style: the Node process is not
 *                                copied, so the event loop does not wait
 *                                on a fork whatever the heap's size); its
 *                                fds 3 and 4 are the far ends of two new
 *                                socket pairs. Returns [pid, fd3, fd4]
 *                                (our ends, non-blocking, close-on-exec)
 *                                or -errno.
 *   reap(pid)                    waitpid(pid, WNOHANG): -1 while it runs,
 *                                -2 - errno on failure, else the raw
 *                                wait status.
 *   envStamp()                   a number that changes whenever the C
 *                                environment (what process.env reads and
 *                                writes on Node's main thread) differs from
 *                                what it was at the last call. Main thread
 *                                only: the copy it compares with is one per
 *                                process.
 *
 * lib/launch.js loads it, and falls back to node:child_process and to
 * JSON.stringify(process.env) when it cannot. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

#define FD_SOCK 3
#define FD_FEED 4

static napi_value int_value(napi_env env, int32_t n)
{
	napi_value v = NULL;

	napi_create_int32(env, n, &v);
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

/* A socket pair, ours non-blocking: [0] ours, [1] the server's, both
 * close-on-exec, and the server's above fd 4 (so that its dup2 onto 3 or
 * 4 never lands on itself and keeps FD_CLOEXEC). 0 or -errno. */
static int server_pair(int sv[2])
{
	int far;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
		goto fail;
	if (sv[1] > FD_FEED)
		return 0;
	far = fcntl(sv[1], F_DUPFD_CLOEXEC, FD_FEED + 1);
	if (far < 0)
		goto fail;
	close(sv[1]);
	sv[1] = far;
	return 0;
fail:
	far = -errno;
	close(sv[0]);
	close(sv[1]);
	sv[0] = sv[1] = -1;
	return far;
}

/* posix_spawn(file) with the two far ends on fds 3 and 4, our stdio 0-2
 * shared, every signal at its default and none blocked (as libuv starts a
 * child). Returns the pid or -errno.
 *
 * Node marks its fds 0-2 close-on-exec, and a dup2 of an fd onto itself
 * does not clear the flag everywhere (glibc before 2.35?, musl): each one
 * goes through a copy above fd 4, as libuv does for 'inherit'. */
static pid_t spawn_server(const char *file, char **argv, char **envp, int sock, int feed)
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	sigset_t all, none;
	int std[3] = { -1, -1, -1 };
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
	for (int fd = 0; fd < 3 && r == 0; fd++) {
		std[fd] = fcntl(fd, F_DUPFD_CLOEXEC, FD_FEED + 1);
		if (std[fd] >= 0)
			r = posix_spawn_file_actions_adddup2(&actions, std[fd], fd);
		else if (errno != EBADF)        /* closed here: the server fills it */
			r = errno;
	}
	if (r == 0
	    && (r = posix_spawn_file_actions_adddup2(&actions, sock, FD_SOCK)) == 0
	    && (r = posix_spawn_file_actions_adddup2(&actions, feed, FD_FEED)) == 0
	    && (r = posix_spawnattr_setsigdefault(&attr, &all)) == 0
	    && (r = posix_spawnattr_setsigmask(&attr, &none)) == 0
	    && (r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) == 0)
		r = posix_spawn(&pid, file, &actions, &attr, argv, envp);
	for (int fd = 0; fd < 3; fd++)
		if (std[fd] >= 0)
			close(std[fd]);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	return r == 0 ? pid : -r;
}

static napi_value start(napi_env env, napi_callback_info info)
{
	size_t argc = 3;
	napi_value args[3], out = NULL;
	char *file = NULL, **argv = NULL, **envp = NULL;
	int sock[2] = { -1, -1 }, feed[2] = { -1, -1 };
	pid_t pid;

	if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != 0 || argc < 3)
		return type_error(env, "start(file, argv, env)");
	if ((file = c_string(env, args[0])) == NULL || (argv = c_strings(env, args[1])) == NULL
	    || (envp = c_strings(env, args[2])) == NULL)
		goto done;
	if ((pid = server_pair(sock)) == 0 && (pid = server_pair(feed)) == 0)
		pid = spawn_server(file, argv, envp, sock[1], feed[1]);
	if (sock[1] >= 0)
		close(sock[1]);
	if (feed[1] >= 0)
		close(feed[1]);
	if (pid < 0) {
		if (sock[0] >= 0)
			close(sock[0]);
		if (feed[0] >= 0)
			close(feed[0]);
		out = int_value(env, pid);
		goto done;
	}
	napi_create_array_with_length(env, 3, &out);
	napi_set_element(env, out, 0, int_value(env, pid));
	napi_set_element(env, out, 1, int_value(env, sock[0]));
	napi_set_element(env, out, 2, int_value(env, feed[0]));
done:
	free(file);
	free_strings(argv);
	free_strings(envp);
	return out;
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
	p = seen;
	for (char **e = environ; e && *e; e++) {
		size_t n = strlen(*e) + 1;

		memcpy(p, *e, n);
		p += n;
	}
	seen_len = len;
	seen_count = count;
}

static napi_value env_stamp(napi_env env, napi_callback_info info)
{
	napi_value v = NULL;

	(void)info;
	if (!environ_unchanged()) {
		environ_remember();
		stamp++;
	}
	napi_create_uint32(env, stamp, &v);
	return v;
}

static void export(napi_env env, napi_value exports, const char *name, napi_callback cb)
{
	napi_value fn;

	if (napi_create_function(env, name, strlen(name), cb, NULL, &fn) == 0)
		napi_set_named_property(env, exports, name, fn);
}

napi_value napi_register_module_v1(napi_env env, napi_value exports);

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
	export(env, exports, "start", start);
	export(env, exports, "reap", reap);
	export(env, exports, "envStamp", env_stamp);
	return exports;
}
