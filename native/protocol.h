/* Wire codec of docs/protocol.md (version 5). Pure: no I/O, no allocation.
 * Decoding validates a whole frame and points into the caller's buffer;
 * encoding writes into caller-provided space of sp_encoded_size() bytes. */
#ifndef SPAWND_PROTOCOL_H
#define SPAWND_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

enum {
	SP_VERSION = 5,
	SP_HDR = 9,                    /* len + type + id */
	SP_MAX_FRAME = 16 * 1024 * 1024,
	SP_STDIN_WINDOW = 256 * 1024,  /* the client's, for reference (lib/protocol.js) */
	SP_DATA_HDR = SP_HDR + 1,      /* DATA: header + fd byte */
};

enum sp_type {
	/* client -> server */
	SP_HELLO = 0x01, SP_SPAWN = 0x02, SP_STDIN = 0x03, SP_STDIN_END = 0x04,
	SP_KILL = 0x05, SP_CREDIT = 0x06, SP_CLOSE = 0x07, SP_REAP = 0x08,
	/* server -> client */
	SP_S_HELLO = 0x41, SP_SPAWNED = 0x42, SP_SPAWN_ERROR = 0x43,
	SP_DATA = 0x44, SP_END = 0x45, SP_WROTE = 0x46, SP_EXIT = 0x47,
	SP_KILL_ERROR = 0x48, SP_HANDED = 0x49, SP_REAPED = 0x4A, SP_FATAL = 0x4F,
};

enum { SP_F_DETACHED = 1, SP_F_SET_UID = 2, SP_F_SET_GID = 4, SP_F_HANDOVER = 8, SP_F_SAME_ENV = 16 };
enum { SP_IO_PIPE = 0, SP_IO_IGNORE = 1, SP_IO_FD0 = 2, SP_IO_FD1 = 3, SP_IO_FD2 = 4 };

/* Bytes inside a frame; a `str` is one of these (no terminator). */
struct sp_bytes {
	const uint8_t *p;
	uint32_t n;
};

/* A list of `str` in wire form (u32 length + bytes, repeated `count` times). */
struct sp_list {
	uint32_t count;
	const uint8_t *raw;
	size_t raw_len;
};

/* One decoded message. Only the fields of `type` are meaningful; a zeroed
 * field means "absent". Byte fields point into the decoded buffer. */
struct sp_msg {
	uint8_t type;
	uint32_t id;
	uint32_t version, parked;       /* HELLO, S_HELLO */
	uint32_t pid;                   /* S_HELLO, SPAWNED; SPAWN: parked child or 0 */
	uint32_t signal;                /* KILL */
	uint32_t bytes;                 /* CREDIT, WROTE */
	uint8_t fd;                     /* CREDIT, CLOSE, DATA, END, HANDED */
	int32_t err;                    /* SPAWN_ERROR, END, KILL_ERROR: errno */
	int32_t code, sig;              /* EXIT */
	struct sp_bytes data;           /* STDIN, DATA; syscall; FATAL message */
	uint32_t flags, uid, gid, window;       /* SPAWN */
	uint8_t stdio[3];
	struct sp_bytes file, cwd;
	struct sp_list argv, env;
};

enum { SP_NEED = 0, SP_OK = 1, SP_BAD = -1 };

/* Decodes the frame at the start of buf[0..avail). SP_OK: *m filled and
 * *used = frame size. SP_NEED: incomplete, read more (*used = bytes the
 * whole frame needs once its length is known, else 4). SP_BAD: *why set. */
int sp_decode(const uint8_t *buf, size_t avail, struct sp_msg *m,
	      size_t *used, const char **why);

/* Next `str` of a validated list: fills *s, returns the position after it. */
const uint8_t *sp_list_next(const uint8_t *at, struct sp_bytes *s);

/* Frame size of m once encoded (0 if the type is unknown). */
size_t sp_encoded_size(const struct sp_msg *m);

/* Encodes m into dst (sp_encoded_size(m) bytes); returns that size. */
size_t sp_encode(uint8_t *dst, const struct sp_msg *m);

/* Writes a DATA header for n bytes already placed at dst + SP_DATA_HDR. */
void sp_put_data_hdr(uint8_t *dst, uint32_t id, uint8_t fd, uint32_t n);

/* Type name from the protocol tables ("SPAWN", "HELLO"...), NULL if unknown. */
const char *sp_type_name(uint8_t type);

#endif
