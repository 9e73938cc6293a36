/* Request id -> child: open addressing, linear probing, no tombstones. */
#ifndef SPAWND_IDMAP_H
#define SPAWND_IDMAP_H

#include <stdint.h>

struct child;

/* The child with this id (ids are >= 1), or NULL. */
struct child *idmap_get(uint32_t id);

/* Makes sure one more insert cannot fail. 0 or -ENOMEM. */
int idmap_reserve(void);

/* Inserts c under c->id (after idmap_reserve; the id must be absent). */
void idmap_put(struct child *c);

/* Removes id if present. */
void idmap_del(uint32_t id);

#endif
