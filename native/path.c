/* PATH search with execvp's rules, using the PATH of the child's env.
 * Checking in the server costs one stat(2) per entry tried, cheaper than
 * one failed execve(2) per entry in the child.
 *
 * Found programs are cached, and the cache does not go stale: every PATH
 * directory up to the one that had the program is watched with inotify
 * (with the directory holding each symlink on the way to it, and for a
 * missing one the directory its first missing component would appear in),
 * and any event clears the whole cache. The kernel queues an event within
 * the syscall that makes the change, so a change made before the client
 * wrote its SPAWN is queued before we read that SPAWN, and seen by the
 * drain that the first lookup after each read of the client's socket
 * makes (path_input). A hit costs one stat of the program, and the first
 * of a read that drain too (a poll that finds nothing), instead of a stat
 * per entry tried. Not cached: what depends on the cwd, dangling
 * symlinks, candidates that are symlinks to no executable, and
 * directories on file systems whose changes inotify may not see
 * (anything but local ones). What it cannot see is listed in
 * docs/protocol.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
 * change in a directory nobody watches. `exact`: ask access(2) even when
 * every x bit is set (a noexec mount, an ACL); a cached hit skips it, as
 * a remount or an ACL change is an event (drain()). */
static int check(const char *path, int *cacheable, int exact)
{
	struct stat st;
	int r, link;

	if (lstat(path, &st) < 0)
		return -errno;
	link = S_ISLNK(st.st_mode);
	if (link && stat(path, &st) < 0) {
		*cacheable = 0;
		return -errno;
	}
	if (!S_ISREG(st.st_mode))
		r = -EACCES;
	/* A cached hit executable by everyone: skip access(2). */
	else if (!exact && (st.st_mode & 0111) == 0111)
		r = 0;
	else
		r = access(path, X_OK) < 0 ? -errno : 0;
	if (r < 0 && link)
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
			r = check(probe, cacheable, 1);
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
	int uncacheable;        /* found, but not watchable: do not try again */
};

static struct entry cache[SLOTS];
static int ifd = -1;            /* -1: inotify unusable here, search every time */
static int mfd = -1;            /* /proc/self/mountinfo: POLLPRI on a mount change */
/* Nothing was read from the client since the last drain(): every event of
 * a change it made before writing what we have read is drained already. */
static int drained_since_input;

static const uint32_t k_watch = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
	IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

static void clear_cache(void)
{
	for (size_t i = 0; i < SLOTS; i++) {
		free(cache[i].path_env);
		cache[i].path_env = cache[i].file = cache[i].found = NULL;
		cache[i].uncacheable = 0;
	}
}

static void disable(const char *what)
{
	DBG("PATH cache off: %s: %s", what, strerror(errno));
	clear_cache();
	if (ifd >= 0 && close(ifd) < 0)
		DBG("close(inotify): %s", strerror(errno));
	if (mfd >= 0 && close(mfd) < 0)
		DBG("close(mountinfo): %s", strerror(errno));
	ifd = mfd = -1;
}

/* Reads every queued event; any at all, or a change of the mount table (a
 * mount, unmount, move or remount: none of them is an inotify event),
 * clears the cache. One poll asks both, so a lookup with nothing changed
 * costs no read. The instance is then made anew, so that watches do not
 * pile up: no entry needs the old ones, and a miss adds what it needs. */
static void drain(void)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd p[2] = { { .fd = mfd, .events = POLLPRI }, { .fd = ifd, .events = POLLIN } };
	int changed, n;
	ssize_t got;

	while ((n = poll(p, 2, 0)) < 0 && errno == EINTR)
		;
	if (n < 0) {
		disable("poll(mountinfo, inotify)");
		return;
	}
	changed = (p[0].revents & (POLLPRI | POLLERR)) != 0;
	while (ifd >= 0 && (p[1].revents & (POLLIN | POLLERR))) {
		got = read(ifd, ev, sizeof(ev));
		if (got > 0) {
			changed = 1;
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno != EAGAIN)
			disable("read(inotify)");
		break;
	}
	if (!changed || ifd < 0) {
		drained_since_input = 1;
		return;
	}
	clear_cache();
	if (close(ifd) < 0)
		DBG("close(inotify): %s", strerror(errno));
	if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		disable("inotify_init1");
	else
		drained_since_input = 1;
}

void path_input(void)
{
	drained_since_input = 0;
}

/* inotify sees only this kernel's changes, and only where this kernel
 * makes them: local file systems only (not NFS, SMB, Ceph, Lustre, GPFS,
 * FUSE, 9p, or a VM's shared folders, whose changes come from elsewhere). */
static int local_fs(const char *dir)
{
	struct statfs st;

	if (statfs(dir, &st) < 0) {
		DBG("statfs(%s): %s", dir, strerror(errno));
		return 0;
	}
	switch ((uint32_t)st.f_type) {
	case 0xEF53:            /* ext2/3/4 */
	case 0x58465342:        /* XFS */
	case 0x9123683E:        /* Btrfs */
	case 0x01021994:        /* tmpfs */
	case 0x858458F6:        /* ramfs */
	case 0x794C7630:        /* overlayfs */
	case 0x73717368:        /* squashfs */
	case 0xE0F5E1E2:        /* EROFS */
	case 0xF2F52010:        /* F2FS */
	case 0x2FC12FC1:        /* ZFS */
	case 0xCA451A4E:        /* bcachefs */
	case 0x3153464A:        /* JFS */
	case 0x52654973:        /* ReiserFS */
	case 0x4D44:            /* FAT */
	case 0x2011BAB0:        /* exFAT */
	case 0x7366746E:        /* NTFS */
	case 0x9660:            /* ISO 9660 */
	case 0x15013346:        /* UDF */
		return 1;
	default:
		return 0;
	}
}

static int add_watch(const char *path)
{
	if (!local_fs(path))
		return -1;
	if (inotify_add_watch(ifd, path, k_watch) < 0) {
		DBG("inotify_add_watch(%s): %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Watches the directory that holds path's last component. */
static int add_parent_watch(char *path)
{
	char *slash = strrchr(path, '/');
	int r;

	if (slash == path)
		return add_watch("/");
	*slash = '\0';
	r = add_watch(path);
	*slash = '/';
	return r;
}

/* Watches so that any change to what dir[0..len) names is an event: the
 * directory itself and the one holding it (its IN_DELETE_SELF waits until
 * nobody holds it open; its removal from the parent does not); for each
 * symlink on the way, the directory holding it (re-pointing it is an
 * event there); if part of it is missing, the directory its first missing
 * component would appear in. A dangling
 * symlink on the way (its target may appear anywhere) cannot be watched.
 * Nor can symlinks inside a symlink's target path: the kernel follows those
 * unseen (docs/protocol.md). 0, or -1 if it cannot be watched. */
static int watch_dir(const char *dir, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	size_t end = 1;

	if (len == 0 || dir[0] != '/' || len >= sizeof(path))
		return -1;              /* relative: depends on the cwd */
	memcpy(path, dir, len);
	path[len] = '\0';
	for (;;) {
		char saved;

		while (end < len && path[end] != '/')
			end++;
		saved = path[end];
		path[end] = '\0';
		if (lstat(path, &st) < 0) {
			int missing = errno == ENOENT || errno == ENOTDIR;

			return missing ? add_parent_watch(path) : -1;
		}
		if (S_ISLNK(st.st_mode) &&
		    (stat(path, &st) < 0 || add_parent_watch(path) < 0))
			return -1;
		path[end] = saved;
		if (end >= len)
			return add_watch(path) < 0 || (strcmp(path, "/") != 0 &&
						       add_parent_watch(path) < 0) ? -1 : 0;
		end++;
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

/* Watches every entry of path_env up to hit_end; 0, or -1 if one cannot be. */
static int watch_upto(const char *path_env, const char *hit_end)
{
	for (const char *p = path_env;; ) {
		const char *end = strchrnul(p, ':');

		if (watch_dir(p, (size_t)(end - p)) < 0)
			return -1;
		if (end >= hit_end)
			return 0;
		p = end + 1;
	}
}

/* Remembers `found` for (path_env, file); `uncacheable`: only that it
 * cannot be watched (until the next event), so as not to try again. */
static void remember(const char *path_env, const char *file, const char *found,
		     int uncacheable)
{
	size_t lp = strlen(path_env), lf = strlen(file), lr = strlen(found);
	struct entry *e = &cache[slot_of(path_env, file)];
	char *mem;

	if (!(mem = malloc(lp + lf + lr + 3)))
		return;
	free(e->path_env);
	e->path_env = memcpy(mem, path_env, lp + 1);
	e->file = memcpy(mem + lp + 1, file, lf + 1);
	e->found = memcpy(mem + lp + lf + 2, found, lr + 1);
	e->uncacheable = uncacheable;
}

void path_init(void)
{
	const char *opt = getenv("SPAWNPOOL_PATH_CACHE");

	if (opt && strcmp(opt, "0") == 0)
		return;                 /* asked for no cache (no inotify instance) */
	if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		disable("inotify_init1");
		return;
	}
	if ((mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)) < 0)
		disable("open(/proc/self/mountinfo)");
}

int path_search(const char *file, const char *path_env, const char *cwd,
		char *buf, char *scratch, size_t bufsz, const char **out)
{
	static char first[PATH_MAX];
	const char *hit_end;
	struct entry *e;
	int r, known, cacheable = 1;

	*out = file;
	if (strchr(file, '/'))
		return 0;
	if (!path_env)
		path_env = "/usr/bin:/bin";
	if (ifd < 0)
		return search(file, path_env, cwd, buf, scratch, bufsz, out,
			      &hit_end, &cacheable);
	if (!drained_since_input)
		drain();
	e = &cache[slot_of(path_env, file)];
	known = e->found && strcmp(e->file, file) == 0 &&
		strcmp(e->path_env, path_env) == 0;
	if (ifd < 0 || (known && e->uncacheable))
		return search(file, path_env, cwd, buf, scratch, bufsz, out,
			      &hit_end, &cacheable);
	if (known && strlen(e->found) < bufsz) {
		/* Still there and executable (a symlink's target can change
		 * unseen): else search again. */
		strcpy(buf, e->found);
		if (check(buf, &cacheable, 0) == 0) {
			*out = buf;
			return 0;
		}
	}
	cacheable = 1;
	r = search(file, path_env, cwd, buf, scratch, bufsz, out, &hit_end,
		   &cacheable);
	if (r < 0 || !cacheable || strlen(buf) >= sizeof(first))
		return r;
	if (watch_upto(path_env, hit_end) < 0) {
		remember(path_env, file, buf, 1);
		return r;
	}
	/* A change made between that search and the watches made no event:
	 * search again, now that any later change would; remember the answer
	 * only if it held. */
	strcpy(first, buf);
	r = search(file, path_env, cwd, buf, scratch, bufsz, out, &hit_end,
		   &cacheable);
	if (r == 0 && cacheable && strcmp(first, buf) == 0)
		remember(path_env, file, buf, 0);
	return r;
}
