/* PATH search with execvp's rules, using the PATH of the child's env.
 * Checking in the server costs one stat(2) per entry tried, cheaper than
 * one failed execve(2) per entry in the child. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"

/* 0 if execve(path) would be worth trying, else -errno as execve reports. */
static int check(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	/* Executable by everyone: skip access(2), the common case. */
	if ((st.st_mode & 0111) == 0111)
		return 0;
	return access(path, X_OK) < 0 ? -errno : 0;
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

int path_search(const char *file, const char *path_env, const char *cwd,
		char *buf, char *scratch, size_t bufsz, const char **out)
{
	size_t flen = strlen(file);
	const char *p = path_env ? path_env : "/usr/bin:/bin";
	int eacces = 0, r;

	*out = file;
	if (strchr(file, '/'))
		return 0;
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
			r = check(probe);
			if (r == 0) {
				*out = buf;
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
