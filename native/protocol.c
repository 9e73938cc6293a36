/* Wire codec of docs/protocol.md: frame validation, decode, encode. */
#include "protocol.h"

#include <string.h>

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Payload reader: the first misfit sets `why` and every later read is a no-op. */
struct rd {
	const uint8_t *p, *end;
	const char *why;
};

static int rd_need(struct rd *r, size_t n)
{
	if (r->why)
		return 0;
	if ((size_t)(r->end - r->p) < n) {
		r->why = "truncated payload";
		return 0;
	}
	return 1;
}

static uint8_t rd_u8(struct rd *r)
{
	return rd_need(r, 1) ? *r->p++ : 0;
}

static uint32_t rd_u32(struct rd *r)
{
	uint32_t v;

	if (!rd_need(r, 4))
		return 0;
	v = get_u32(r->p);
	r->p += 4;
	return v;
}

static struct sp_bytes rd_str(struct rd *r)
{
	struct sp_bytes s = { NULL, 0 };
	uint32_t n = rd_u32(r);

	if (!rd_need(r, n))
		return s;
	if (memchr(r->p, 0, n)) {
		r->why = "NUL byte in string";
		return s;
	}
	s.p = r->p;
	s.n = n;
	r->p += n;
	return s;
}

static void rd_list(struct rd *r, struct sp_list *l)
{
	l->count = rd_u32(r);
	l->raw = r->p;
	for (uint32_t i = 0; i < l->count && !r->why; i++)
		rd_str(r);
	l->raw_len = (size_t)(r->p - l->raw);
}

/* The rest of the payload, which must not be empty. */
static struct sp_bytes rd_rest(struct rd *r)
{
	struct sp_bytes s = { r->p, (uint32_t)(r->end - r->p) };

	if (!r->why && s.n == 0)
		r->why = "empty data";
	r->p = r->end;
	return s;
}

static uint8_t rd_fd(struct rd *r, uint8_t max, uint8_t min)
{
	uint8_t fd = rd_u8(r);

	if (!r->why && (fd < min || fd > max))
		r->why = "bad fd";
	return fd;
}

static void rd_spawn(struct rd *r, struct sp_msg *m)
{
	m->pid = rd_u32(r);
	m->flags = rd_u32(r);
	m->uid = rd_u32(r);
	m->gid = rd_u32(r);
	m->window = rd_u32(r);
	for (int i = 0; i < 3; i++)
		m->stdio[i] = rd_u8(r);
	m->file = rd_str(r);
	m->cwd = rd_str(r);
	rd_list(r, &m->argv);
	if (!r->why && m->argv.count == 0)
		r->why = "argc must be at least 1";
	rd_list(r, &m->env);
	if (r->why)
		return;
	if (m->flags & ~(uint32_t)(SP_F_DETACHED | SP_F_SET_UID | SP_F_SET_GID | SP_F_HANDOVER |
				   SP_F_SAME_ENV))
		r->why = "unknown SPAWN flags";
	else if ((m->flags & SP_F_SAME_ENV) && m->env.count != 0)
		r->why = "SPAWN with SAME_ENV carries environment strings";
	else if (m->window == 0)
		r->why = "SPAWN window must be > 0";
	else if (m->stdio[0] > SP_IO_FD2 || m->stdio[1] > SP_IO_FD2 ||
		 m->stdio[2] > SP_IO_FD2)
		r->why = "bad stdio mode";
}

/* Decodes the payload of m->type; 0 if the type is unknown. */
static int rd_payload(struct rd *r, struct sp_msg *m)
{
	switch (m->type) {
	case SP_HELLO:
		/* Another version's HELLO may be shorter or longer: the version
		 * is read, the rest only if it is ours (the answer says). */
		m->version = rd_u32(r);
		if (m->version == SP_VERSION)
			m->parked = rd_u32(r);
		else if (!r->why)
			r->p = r->end;
		break;
	case SP_SPAWN: rd_spawn(r, m); break;
	case SP_STDIN: m->data = rd_rest(r); break;
	case SP_STDIN_END: case SP_REAP: case SP_REAPED: break;
	case SP_KILL: m->signal = rd_u32(r); break;
	case SP_CREDIT:
		m->fd = rd_fd(r, 2, 1);
		m->bytes = rd_u32(r);
		if (!r->why && m->bytes == 0)
			r->why = "zero credit";
		break;
	case SP_CLOSE: m->fd = rd_fd(r, 2, 0); break;
	case SP_S_HELLO:
		m->version = rd_u32(r);
		m->pid = rd_u32(r);
		m->parked = rd_u32(r);
		break;
	case SP_SPAWNED: m->pid = rd_u32(r); break;
	case SP_SPAWN_ERROR: m->err = (int32_t)rd_u32(r); m->data = rd_str(r); break;
	case SP_DATA: m->fd = rd_fd(r, 2, 1); m->data = rd_rest(r); break;
	case SP_END: m->fd = rd_fd(r, 2, 0); m->err = (int32_t)rd_u32(r); break;
	case SP_WROTE: m->bytes = rd_u32(r); break;
	case SP_EXIT: m->code = (int32_t)rd_u32(r); m->sig = (int32_t)rd_u32(r); break;
	case SP_KILL_ERROR: m->err = (int32_t)rd_u32(r); break;
	case SP_HANDED: m->fd = rd_fd(r, 2, 1); break;
	case SP_FATAL: m->data = rd_str(r); break;
	default: return 0;
	}
	return 1;
}

int sp_decode(const uint8_t *buf, size_t avail, struct sp_msg *m,
	      size_t *used, const char **why)
{
	struct rd r;
	uint32_t len;

	*used = 4;
	if (avail < 4)
		return SP_NEED;
	len = get_u32(buf);
	if (len < 5 || len > SP_MAX_FRAME) {
		*why = "bad frame length";
		return SP_BAD;
	}
	*used = 4 + (size_t)len;
	if (avail < *used)
		return SP_NEED;
	memset(m, 0, sizeof(*m));
	m->type = buf[4];
	m->id = get_u32(buf + 5);
	r.p = buf + SP_HDR;
	r.end = buf + *used;
	r.why = NULL;
	if (!rd_payload(&r, m))
		r.why = "unknown frame type";
	else if (!r.why && r.p != r.end)
		r.why = "trailing bytes in payload";
	*why = r.why;
	return r.why ? SP_BAD : SP_OK;
}

const uint8_t *sp_list_next(const uint8_t *at, struct sp_bytes *s)
{
	s->n = get_u32(at);
	s->p = at + 4;
	return s->p + s->n;
}

static size_t payload_size(const struct sp_msg *m)
{
	switch (m->type) {
	case SP_KILL: case SP_SPAWNED: case SP_WROTE: case SP_KILL_ERROR:
		return 4;
	case SP_HELLO: return 8;
	case SP_SPAWN:
		return 20 + 3 + 4 + m->file.n + 4 + m->cwd.n + 4 +
		       m->argv.raw_len + 4 + m->env.raw_len;
	case SP_STDIN: return m->data.n;
	case SP_STDIN_END: case SP_REAP: case SP_REAPED: return 0;
	case SP_CREDIT: case SP_END: return 5;
	case SP_CLOSE: case SP_HANDED: return 1;
	case SP_EXIT: return 8;
	case SP_S_HELLO: return 12;
	case SP_SPAWN_ERROR: return 8 + (size_t)m->data.n;
	case SP_DATA: return 1 + (size_t)m->data.n;
	case SP_FATAL: return 4 + (size_t)m->data.n;
	default: return (size_t)-1;
	}
}

size_t sp_encoded_size(const struct sp_msg *m)
{
	size_t n = payload_size(m);

	return n == (size_t)-1 ? 0 : SP_HDR + n;
}

static uint8_t *wr_u32(uint8_t *p, uint32_t v)
{
	put_u32(p, v);
	return p + 4;
}

static uint8_t *wr_bytes(uint8_t *p, struct sp_bytes b)
{
	if (b.n)
		memcpy(p, b.p, b.n);
	return p + b.n;
}

static uint8_t *wr_str(uint8_t *p, struct sp_bytes b)
{
	return wr_bytes(wr_u32(p, b.n), b);
}

static uint8_t *wr_list(uint8_t *p, const struct sp_list *l)
{
	struct sp_bytes raw = { l->raw, (uint32_t)l->raw_len };

	return wr_bytes(wr_u32(p, l->count), raw);
}

static uint8_t *wr_spawn(uint8_t *p, const struct sp_msg *m)
{
	p = wr_u32(p, m->pid);
	p = wr_u32(p, m->flags);
	p = wr_u32(p, m->uid);
	p = wr_u32(p, m->gid);
	p = wr_u32(p, m->window);
	for (int i = 0; i < 3; i++)
		*p++ = m->stdio[i];
	p = wr_str(p, m->file);
	p = wr_str(p, m->cwd);
	p = wr_list(p, &m->argv);
	return wr_list(p, &m->env);
}

static void wr_payload(uint8_t *p, const struct sp_msg *m)
{
	switch (m->type) {
	case SP_HELLO: wr_u32(wr_u32(p, m->version), m->parked); break;
	case SP_SPAWN: wr_spawn(p, m); break;
	case SP_STDIN: wr_bytes(p, m->data); break;
	case SP_KILL: wr_u32(p, m->signal); break;
	case SP_CREDIT: *p = m->fd; wr_u32(p + 1, m->bytes); break;
	case SP_CLOSE: *p = m->fd; break;
	case SP_S_HELLO: wr_u32(wr_u32(wr_u32(p, m->version), m->pid), m->parked); break;
	case SP_SPAWNED: wr_u32(p, m->pid); break;
	case SP_SPAWN_ERROR: wr_str(wr_u32(p, (uint32_t)m->err), m->data); break;
	case SP_DATA: *p = m->fd; wr_bytes(p + 1, m->data); break;
	case SP_END: *p = m->fd; wr_u32(p + 1, (uint32_t)m->err); break;
	case SP_WROTE: wr_u32(p, m->bytes); break;
	case SP_EXIT: wr_u32(wr_u32(p, (uint32_t)m->code), (uint32_t)m->sig); break;
	case SP_KILL_ERROR: wr_u32(p, (uint32_t)m->err); break;
	case SP_HANDED: *p = m->fd; break;
	case SP_FATAL: wr_str(p, m->data); break;
	default: break;
	}
}

size_t sp_encode(uint8_t *dst, const struct sp_msg *m)
{
	size_t size = sp_encoded_size(m);

	if (size == 0)
		return 0;
	put_u32(dst, (uint32_t)(size - 4));
	dst[4] = m->type;
	put_u32(dst + 5, m->id);
	wr_payload(dst + SP_HDR, m);
	return size;
}

void sp_put_data_hdr(uint8_t *dst, uint32_t id, uint8_t fd, uint32_t n)
{
	put_u32(dst, 5 + 1 + n);
	dst[4] = SP_DATA;
	put_u32(dst + 5, id);
	dst[9] = fd;
}

const char *sp_type_name(uint8_t type)
{
	switch (type) {
	case SP_HELLO: case SP_S_HELLO: return "HELLO";
	case SP_SPAWN: return "SPAWN";
	case SP_STDIN: return "STDIN";
	case SP_STDIN_END: return "STDIN_END";
	case SP_KILL: return "KILL";
	case SP_CREDIT: return "CREDIT";
	case SP_CLOSE: return "CLOSE";
	case SP_REAP: return "REAP";
	case SP_SPAWNED: return "SPAWNED";
	case SP_SPAWN_ERROR: return "SPAWN_ERROR";
	case SP_DATA: return "DATA";
	case SP_END: return "END";
	case SP_WROTE: return "WROTE";
	case SP_EXIT: return "EXIT";
	case SP_KILL_ERROR: return "KILL_ERROR";
	case SP_HANDED: return "HANDED";
	case SP_REAPED: return "REAPED";
	case SP_FATAL: return "FATAL";
	default: return NULL;
	}
}
