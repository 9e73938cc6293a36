/* Request id -> opaque pointer: open addressing, linear probing, no
 * tombstones. It knows nothing of what the pointers are. */
#ifndef SPAWND_IDMAP_H
#define SPAWND_IDMAP_H

#include <stdint.h>

/* The pointer stored under id (ids are >= 1), or NULL. */
void *idmap_get(uint32_t id);

/* Makes sure one more insert cannot fail. 0 or -ENOMEM. */
int idmap_reserve(void);

/* Stores p (not NULL) under id (after idmap_reserve; id must be absent). */
void idmap_put(uint32_t id, void *p);

/* Removes id if present. */
void idmap_del(uint32_t id);

#endif
