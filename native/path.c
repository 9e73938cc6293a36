/* PATH search with execvp's rules, using the PATH of the child's env.
 * Checking in the server costs one stat(2) per entry tried, cheaper than
 * one failed execve(2) per entry in the child.
 *
 * Found programs are cached, and the cache is never stale: every PATH
 * directory up to the one that had the program is watched with inotify (a
 * missing one through its nearest existing ancestor), and any event clears
 * the whole cache. The kernel queues an event within the syscall that
 * changes the directory, so a change made before the client wrote its
 * SPAWN is seen by the drain that precedes the lookup. A hit costs that
 * drain (one read that finds nothing) and one stat of the program, instead
 * of a stat per entry tried. Directories inotify cannot vouch for (network
 * and FUSE file systems) are never cached through. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "path.h"
#include "platform.h"

/* 0 if execve(path) would be worth trying, else -errno as execve reports.
 * A symlink that leads to no executable clears *cacheable: its target may
 * change in a directory nobody watches. */
static int check(const char *path, int *cacheable)
{
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode) && stat(path, &st) < 0) {
		*cacheable = 0;
		return -errno;
	}
	if (!S_ISREG(st.st_mode))
		r = -EACCES;
	/* Executable by everyone: skip access(2), the common case. */
	else if ((st.st_mode & 0111) == 0111)
		r = 0;
	else
		r = access(path, X_OK) < 0 ? -errno : 0;
	if (r < 0 && S_ISLNK(st.st_mode))
		*cacheable = 0;
	return r;
}

/* Errors that make execvp go on to the next entry (glibc's list). */
static int try_next(int err)
{
	return err == EACCES || err == ENOENT || err == ENOTDIR ||
	       err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

/* dir/file into buf (file alone for an empty dir); 0 or -ENAMETOOLONG. */
static int join(char *buf, size_t bufsz, const char *dir, size_t dlen,
		const char *file, size_t flen)
{
	size_t n = dlen ? dlen + 1 : 0;

	if (n + flen + 1 > bufsz)
		return -ENAMETOOLONG;
	memcpy(buf, dir, dlen);
	if (dlen)
		buf[dlen] = '/';
	memcpy(buf + n, file, flen + 1);
	return 0;
}

/* The search itself; *hit_end is the end of the PATH entry that had it,
 * and *cacheable is cleared if the result may change unseen. */
static int search(const char *file, const char *path_env, const char *cwd,
		  char *buf, char *scratch, size_t bufsz, const char **out,
		  const char **hit_end, int *cacheable)
{
	size_t flen = strlen(file);
	const char *p = path_env;
	int eacces = 0, r;

	if (flen == 0)
		return -ENOENT;
	for (;;) {
		const char *end = strchrnul(p, ':');
		const char *probe = buf;

		r = join(buf, bufsz, p, (size_t)(end - p), file, flen);
		/* The child chdirs before exec: a relative candidate is
		 * checked from its cwd. Too long a name skips the entry. */
		if (r == 0 && cwd && buf[0] != '/') {
			r = join(scratch, bufsz, cwd, strlen(cwd), buf, strlen(buf));
			probe = scratch;
		}
		if (r == 0) {
			r = check(probe, cacheable);
			if (r == 0) {
				*out = buf;
				*hit_end = end;
				return 0;
			}
			if (!try_next(-r))
				return r;
			eacces |= r == -EACCES;
		}
		if (!*end)
			return eacces ? -EACCES : -ENOENT;
		p = end + 1;
	}
}

/* ------------------------------------------------------------ the cache */
enum { SLOTS = 64 };

struct entry {
	char *path_env, *file, *found;  /* one allocation; NULL: empty */
};

static struct entry cache[SLOTS];
static int ifd = -1;            /* -1: inotify unusable here, search every time */

static const uint32_t k_watch = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
	IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

static void clear_cache(void)
{
	for (size_t i = 0; i < SLOTS; i++) {
		free(cache[i].path_env);
		cache[i].path_env = cache[i].file = cache[i].found = NULL;
	}
}

static void disable(const char *what)
{
	DBG("PATH cache off: %s: %s", what, strerror(errno));
	clear_cache();
	if (ifd >= 0 && close(ifd) < 0)
		DBG("close(inotify): %s", strerror(errno));
	ifd = -1;
}

/* Reads every queued event; any at all clears the cache. */
static void drain(void)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int changed = 0;
	ssize_t n;

	for (;;) {
		n = read(ifd, ev, sizeof(ev));
		if (n > 0) {
			changed = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			disable("read(inotify)");
		break;
	}
	if (changed)
		clear_cache();
}

/* inotify sees only this kernel's changes: not those of other NFS, SMB,
 * Ceph, AFS or 9p clients, nor what a FUSE daemon decides. */
static int local_fs(const char *dir)
{
	struct statfs st;

	if (statfs(dir, &st) < 0)
		return 0;
	switch ((uint32_t)st.f_type) {
	case 0x6969:            /* NFS */
	case 0x517B:            /* SMB */
	case 0xFF534D42:        /* CIFS */
	case 0xFE534D42:        /* SMB2 */
	case 0x65735546:        /* FUSE */
	case 0x01021997:        /* 9p */
	case 0x00C36400:        /* Ceph */
	case 0x6B414653:        /* AFS */
	case 0x73757245:        /* Coda */
	case 0x7461636F:        /* OCFS2 */
	case 0x01161970:        /* GFS2 */
		return 0;
	default:
		return 1;
	}
}

/* Watches dir[0..len), or its nearest existing ancestor if it is missing
 * (its creation is then an event there). 0, or -1 if it cannot be. */
static int watch_dir(const char *dir, size_t len)
{
	char path[4096];

	if (len == 0 || dir[0] != '/' || len >= sizeof(path))
		return -1;              /* relative: depends on the cwd */
	memcpy(path, dir, len);
	path[len] = '\0';
	for (;;) {
		if (inotify_add_watch(ifd, path, k_watch) >= 0)
			return local_fs(path) ? 0 : -1;
		if ((errno != ENOENT && errno != ENOTDIR) || strcmp(path, "/") == 0)
			return -1;
		char *slash = strrchr(path, '/');
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

static size_t slot_of(const char *path_env, const char *file)
{
	uint32_t h = 2166136261u;

	for (const char *c = path_env; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (const char *c = file; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	return h % SLOTS;
}

/* Remembers `found` for (path_env, file) if every entry up to hit_end can
 * be watched. */
static void remember(const char *path_env, const char *file,
		     const char *found, const char *hit_end)
{
	size_t lp = strlen(path_env), lf = strlen(file), lr = strlen(found);
	struct entry *e = &cache[slot_of(path_env, file)];
	char *mem;

	for (const char *p = path_env;; ) {
		const char *end = strchrnul(p, ':');

		if (watch_dir(p, (size_t)(end - p)) < 0)
			return;
		if (end >= hit_end)
			break;
		p = end + 1;
	}
	if (!(mem = malloc(lp + lf + lr + 3)))
		return;
	free(e->path_env);
	e->path_env = memcpy(mem, path_env, lp + 1);
	e->file = memcpy(mem + lp + 1, file, lf + 1);
	e->found = memcpy(mem + lp + lf + 2, found, lr + 1);
}

void path_init(void)
{
	if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		disable("inotify_init1");
}

int path_search(const char *file, const char *path_env, const char *cwd,
		char *buf, char *scratch, size_t bufsz, const char **out)
{
	const char *hit_end;
	struct entry *e;
	int r, cacheable = 1;

	*out = file;
	if (strchr(file, '/'))
		return 0;
	if (!path_env)
		path_env = "/usr/bin:/bin";
	if (ifd < 0)
		return search(file, path_env, cwd, buf, scratch, bufsz, out,
			      &hit_end, &cacheable);
	drain();
	e = &cache[slot_of(path_env, file)];
	if (e->found && strcmp(e->file, file) == 0 &&
	    strcmp(e->path_env, path_env) == 0 && strlen(e->found) < bufsz) {
		/* Still there and executable (a symlink's target can change
		 * unseen): else search again. */
		strcpy(buf, e->found);
		if (check(buf, &cacheable) == 0) {
			*out = buf;
			return 0;
		}
	}
	cacheable = 1;
	r = search(file, path_env, cwd, buf, scratch, bufsz, out, &hit_end,
		   &cacheable);
	if (r == 0 && cacheable)
		remember(path_env, file, buf, hit_end);
	return r;
}
