/* PATH search with execvp's rules, done in the server (path.c). */
#ifndef SPAWND_PATH_H
#define SPAWND_PATH_H

#include <stddef.h>

/* execvp's search, done in the server so one spawn is one exec.
 * Tries each entry of path_env ("/usr/bin:/bin" if NULL; an empty entry is
 * the child's cwd) and returns 0 with *out the path to exec, or -errno
 * (-EACCES if an entry had the file but it was not executable, -ENOENT).
 * `cwd` (NULL: the server's) resolves relative entries as the child will.
 * buf holds the result; both buffers are bufsz bytes. Programs found are
 * remembered, exactly: see path.c. */
/* Opens the inotify instance that keeps found programs exact (path.c);
 * without one, every lookup searches. */
void path_init(void);

/* Input from the client is about to be read (conn.c calls it before each
 * read): the next lookup drains the change events queued so far. A change
 * the client made before it wrote a SPAWN queued its event before we read
 * that SPAWN, so one drain per read of the socket keeps every hit exact
 * for the frames of that read; the other lookups of the read make none
 * (a poll(2) saved per spawn of a batch). */
void path_input(void);

int path_search(const char *file, const char *path_env, const char *cwd,
		char *buf, char *scratch, size_t bufsz, const char **out);

#endif
