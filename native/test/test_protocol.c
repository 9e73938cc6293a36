/* Golden-frame test of the codec (docs/protocol.md, "Test vectors").
 *
 *   test_protocol [dir]      (default: test/fixtures/frames)
 *
 * Each NAME.hex is decoded and compared with NAME.fields; the fields are
 * encoded again and must give the same bytes; every proper prefix must
 * decode as "need more". bad-*.hex must be rejected. Exit 1 on failure. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol.h"

#define MAX_FILE (1 << 20)

static int failures;
static uint8_t type_seen[256];  /* good vectors per type code */

static void fail(const char *name, const char *what)
{
	fprintf(stderr, "FAIL %s: %s\n", name, what);
	failures++;
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return (size_t)-1;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex text (whitespace and '#' lines ignored) to bytes; -1 if malformed. */
static long parse_hex(char *text, uint8_t *out)
{
	long n = 0;
	int hi = -1;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		line += strspn(line, " \t\r");
		if (*line == '#')
			continue;
		for (; *line; line++) {
			int v = hexval((unsigned char)*line);

			if (strchr(" \t\r", *line))
				continue;
			if (v < 0)
				return -1;
			if (hi < 0) {
				hi = v;
			} else {
				out[n++] = (uint8_t)(hi << 4 | v);
				hi = -1;
			}
		}
	}
	return hi < 0 ? n : -1;
}

/* Storage for the message built from a .fields file. */
struct expect {
	struct sp_msg m;
	unsigned keys;          /* bit per key seen */
	uint8_t strs[MAX_FILE]; /* unquoted strings and lists in wire form */
	size_t used;
	uint8_t argv[MAX_FILE / 4], env[MAX_FILE / 4];
	char error[256];
};

static const char *const key_names[] = {
	"type", "id", "version", "pid", "signal", "bytes", "fd", "errno",
	"code", "data", "syscall", "message", "flags", "uid", "gid",
	"window", "stdio", "file", "cwd", "argv", "env", "error", "parked",
};
enum { K_TYPE, K_ID, K_VERSION, K_PID, K_SIGNAL, K_BYTES, K_FD, K_ERRNO,
       K_CODE, K_DATA, K_SYSCALL, K_MESSAGE, K_FLAGS, K_UID, K_GID,
       K_WINDOW, K_STDIO, K_FILE, K_CWD, K_ARGV, K_ENV, K_ERROR, K_PARKED,
       K_COUNT };
#define B(k) (1u << (k))

/* The keys a message of this type must list (lists may be absent). */
static unsigned required_keys(uint8_t type)
{
	unsigned base = B(K_TYPE) | B(K_ID);

	switch (type) {
	case SP_HELLO: return base | B(K_VERSION) | B(K_PARKED);
	case SP_S_HELLO: return base | B(K_VERSION) | B(K_PID) | B(K_PARKED);
	case SP_SPAWN:
		return base | B(K_PID) | B(K_FLAGS) | B(K_UID) | B(K_GID) | B(K_WINDOW) |
		       B(K_STDIO) | B(K_FILE) | B(K_CWD);
	case SP_STDIN: return base | B(K_DATA);
	case SP_STDIN_END: case SP_REAP: case SP_REAPED: return base;
	case SP_KILL: return base | B(K_SIGNAL);
	case SP_CREDIT: return base | B(K_FD) | B(K_BYTES);
	case SP_CLOSE: case SP_HANDED: return base | B(K_FD);
	case SP_SPAWNED: return base | B(K_PID);
	case SP_SPAWN_ERROR: return base | B(K_ERRNO) | B(K_SYSCALL);
	case SP_DATA: return base | B(K_FD) | B(K_DATA);
	case SP_END: return base | B(K_FD) | B(K_ERRNO);
	case SP_WROTE: return base | B(K_BYTES);
	case SP_EXIT: return base | B(K_CODE) | B(K_SIGNAL);
	case SP_KILL_ERROR: return base | B(K_ERRNO);
	case SP_FATAL: return base | B(K_MESSAGE);
	default: return 0;
	}
}

static int type_code(const char *name)
{
	for (int t = 1; t < 0x50; t++) {
		const char *n = sp_type_name((uint8_t)t);

		if (n && strcmp(n, name) == 0)
			return t;
	}
	return -1;
}

/* "..." with \xHH escapes into e->strs; the bytes, or n == UINT32_MAX. */
static struct sp_bytes unquote(struct expect *e, const char *v)
{
	struct sp_bytes b = { e->strs + e->used, 0 };
	size_t len = strlen(v);

	if (len < 2 || v[0] != '"' || v[len - 1] != '"') {
		b.n = UINT32_MAX;
		return b;
	}
	for (size_t i = 1; i + 1 < len; i++) {
		uint8_t c = (uint8_t)v[i];

		if (c == '\\') {
			int hi = hexval(v[i + 2]), lo = hi < 0 ? -1 : hexval(v[i + 3]);

			if (v[i + 1] != 'x' || hi < 0 || lo < 0 || i + 4 >= len) {
				b.n = UINT32_MAX;
				return b;
			}
			c = (uint8_t)(hi << 4 | lo);
			i += 3;
		}
		e->strs[e->used + b.n++] = c;
	}
	e->used += b.n;
	return b;
}

static void list_add(struct sp_list *l, uint8_t *store, struct sp_bytes s)
{
	uint8_t *at = store + l->raw_len;

	at[0] = (uint8_t)s.n;
	at[1] = (uint8_t)(s.n >> 8);
	at[2] = (uint8_t)(s.n >> 16);
	at[3] = (uint8_t)(s.n >> 24);
	memcpy(at + 4, s.p, s.n);
	l->raw = store;
	l->raw_len += 4 + s.n;
	l->count++;
}

static int is_str_key(int key)
{
	return key == K_DATA || key == K_SYSCALL || key == K_MESSAGE ||
	       key == K_FILE || key == K_CWD || key == K_ARGV || key == K_ENV;
}

/* Applies one `key value` line; 0, or -1 if the value does not parse. */
static int apply(struct expect *e, int key, const char *v)
{
	struct sp_msg *m = &e->m;
	long n = strtol(v, NULL, 10);
	unsigned s0, s1, s2;
	struct sp_bytes b = { NULL, 0 };

	if (is_str_key(key)) {
		b = unquote(e, v);
		if (b.n == UINT32_MAX)
			return -1;
	}
	switch (key) {
	case K_TYPE: m->type = (uint8_t)type_code(v); return type_code(v) < 0 ? -1 : 0;
	case K_ID: m->id = (uint32_t)strtoul(v, NULL, 10); break;
	case K_VERSION: m->version = (uint32_t)n; break;
	case K_PID: m->pid = (uint32_t)n; break;
	case K_PARKED: m->parked = (uint32_t)n; break;
	case K_SIGNAL: m->signal = (uint32_t)n; m->sig = (int32_t)n; break;
	case K_BYTES: m->bytes = (uint32_t)strtoul(v, NULL, 10); break;
	case K_FD: m->fd = (uint8_t)n; break;
	case K_ERRNO: m->err = (int32_t)n; break;
	case K_CODE: m->code = (int32_t)n; break;
	case K_DATA: case K_SYSCALL: case K_MESSAGE: m->data = b; break;
	case K_FLAGS: m->flags = (uint32_t)strtoul(v, NULL, 10); break;
	case K_UID: m->uid = (uint32_t)strtoul(v, NULL, 10); break;
	case K_GID: m->gid = (uint32_t)strtoul(v, NULL, 10); break;
	case K_WINDOW: m->window = (uint32_t)strtoul(v, NULL, 10); break;
	case K_STDIO:
		if (sscanf(v, "%u %u %u", &s0, &s1, &s2) != 3)
			return -1;
		m->stdio[0] = (uint8_t)s0, m->stdio[1] = (uint8_t)s1, m->stdio[2] = (uint8_t)s2;
		break;
	case K_FILE: m->file = b; break;
	case K_CWD: m->cwd = b; break;
	case K_ARGV: list_add(&m->argv, e->argv, b); break;
	case K_ENV: list_add(&m->env, e->env, b); break;
	case K_ERROR: snprintf(e->error, sizeof(e->error), "%s", v); break;
	default: return -1;
	}
	return 0;
}

/* Parses a .fields file into e; NULL, or what is wrong with it. */
static const char *parse_fields(char *text, struct expect *e)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *v;
		int key = -1;

		line += strspn(line, " \t\r");
		line[strcspn(line, "\r")] = '\0';
		if (!*line || *line == '#')
			continue;
		v = line + strcspn(line, " ");
		if (*v)
			*v++ = '\0';
		for (int k = 0; k < K_COUNT; k++)
			if (strcmp(line, key_names[k]) == 0)
				key = k;
		if (key < 0 || apply(e, key, v) < 0)
			return "bad line in .fields";
		e->keys |= B(key);
	}
	if (e->m.type == SP_HELLO && (e->keys & B(K_PID)))
		e->m.type = SP_S_HELLO;
	return NULL;
}

static int same_bytes(struct sp_bytes a, struct sp_bytes b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static int same_list(const struct sp_list *a, const struct sp_list *b)
{
	return a->count == b->count && a->raw_len == b->raw_len &&
	       (a->raw_len == 0 || memcmp(a->raw, b->raw, a->raw_len) == 0);
}

/* Field-by-field comparison of two messages of the same type. */
static int same_msg(const struct sp_msg *a, const struct sp_msg *b)
{
	int sig_is_kill = a->type == SP_KILL;

	return a->type == b->type && a->id == b->id && a->version == b->version &&
	       a->parked == b->parked &&
	       a->pid == b->pid && (sig_is_kill ? a->signal == b->signal : a->sig == b->sig) &&
	       a->bytes == b->bytes && a->fd == b->fd && a->err == b->err &&
	       a->code == b->code && same_bytes(a->data, b->data) &&
	       a->flags == b->flags && a->uid == b->uid && a->gid == b->gid &&
	       a->window == b->window && memcmp(a->stdio, b->stdio, 3) == 0 &&
	       same_bytes(a->file, b->file) && same_bytes(a->cwd, b->cwd) &&
	       same_list(&a->argv, &b->argv) && same_list(&a->env, &b->env);
}

static void check_good(const char *name, const uint8_t *buf, size_t n,
		       struct expect *e)
{
	static uint8_t again[MAX_FILE];
	struct sp_msg m;
	const char *why = NULL;
	size_t used;
	unsigned need = required_keys(e->m.type);

	if (sp_decode(buf, n, &m, &used, &why) != SP_OK || used != n)
		return fail(name, why ? why : "not exactly one frame");
	if (!need || (e->keys & need) != need ||
	    (e->keys & ~(need | B(K_ARGV) | B(K_ENV))))
		return fail(name, ".fields does not list exactly the fields of its type");
	if (!same_msg(&m, &e->m))
		return fail(name, "decoded fields differ from .fields");
	type_seen[m.type] = 1;
	if (sp_encoded_size(&e->m) != n || sp_encode(again, &e->m) != n ||
	    memcmp(again, buf, n) != 0)
		return fail(name, "re-encoding the fields gives other bytes");
	for (size_t k = 0; k < n; k++)
		if (sp_decode(buf, k, &m, &used, &why) != SP_NEED)
			return fail(name, "a prefix does not decode as 'need more'");
}

static void check_bad(const char *name, const uint8_t *buf, size_t n,
		      const struct expect *e)
{
	struct sp_msg m;
	const char *why = NULL;
	size_t used;

	if (!e->error[0])
		return fail(name, ".fields of a bad-* vector needs `error <reason>`");
	if (sp_decode(buf, n, &m, &used, &why) != SP_BAD)
		fail(name, "accepted (or waiting for more bytes)");
}

static void check_vector(const char *dir, const char *name)
{
	static char text[MAX_FILE], path[4096];
	static uint8_t bytes[MAX_FILE];
	static struct expect e;
	const char *err;
	long n;

	snprintf(path, sizeof(path), "%s/%s.hex", dir, name);
	if (read_file(path, text, sizeof(text)) == (size_t)-1 || (n = parse_hex(text, bytes)) < 0)
		return fail(name, "cannot read the .hex file");
	snprintf(path, sizeof(path), "%s/%s.fields", dir, name);
	memset(&e, 0, sizeof(e));
	if (read_file(path, text, sizeof(text)) == (size_t)-1)
		return fail(name, "cannot read the .fields file");
	if ((err = parse_fields(text, &e)))
		return fail(name, err);
	if (strncmp(name, "bad-", 4) == 0)
		check_bad(name, bytes, (size_t)n, &e);
	else
		check_good(name, bytes, (size_t)n, &e);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "test/fixtures/frames";
	DIR *d = opendir(dir);
	struct dirent *de;
	int count = 0;

	if (!d) {
		perror(dir);
		return 1;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char name[256];

		if (len < 5 || len >= sizeof(name) || strcmp(de->d_name + len - 4, ".hex"))
			continue;
		memcpy(name, de->d_name, len - 4);
		name[len - 4] = '\0';
		check_vector(dir, name);
		count++;
	}
	closedir(d);
	if (count == 0)
		fail(dir, "no vectors");
	for (int t = 0; t < 256; t++)
		if (sp_type_name((uint8_t)t) && !type_seen[t])
			fail(sp_type_name((uint8_t)t), "no golden vector of this type");
	printf("test_protocol: %d vectors, %d failures\n", count, failures);
	return failures ? 1 : 0;
}
