/* Request id -> pointer map. Ids are chosen by the client (usually
 * counting up), so a multiplicative hash spreads them; deletion shifts
 * entries back instead of leaving tombstones. */
#include "idmap.h"

#include <errno.h>
#include <stdlib.h>

struct slot {
	uint32_t id;
	void *p;                /* NULL: empty */
};

static struct slot *slots;
static uint32_t mask;           /* capacity - 1 (capacity a power of two) */
static uint32_t used;

static uint32_t home(uint32_t id)
{
	return (id * 0x9E3779B1u) & mask;
}

void *idmap_get(uint32_t id)
{
	if (!slots)
		return NULL;
	for (uint32_t i = home(id);; i = (i + 1) & mask) {
		if (!slots[i].p)
			return NULL;
		if (slots[i].id == id)
			return slots[i].p;
	}
}

static void insert(uint32_t id, void *p)
{
	uint32_t i = home(id);

	while (slots[i].p)
		i = (i + 1) & mask;
	slots[i].id = id;
	slots[i].p = p;
	used++;
}

int idmap_reserve(void)
{
	struct slot *old = slots;
	uint32_t cap = slots ? (mask + 1) * 2 : 64;

	if (slots && (used + 1) * 2 <= mask + 1)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots) {
		slots = old;
		return -ENOMEM;
	}
	mask = cap - 1;
	used = 0;
	for (uint32_t i = 0; old && i <= (cap / 2 - 1); i++)
		if (old[i].p)
			insert(old[i].id, old[i].p);
	free(old);
	return 0;
}

void idmap_put(uint32_t id, void *p)
{
	insert(id, p);
}

void idmap_del(uint32_t id)
{
	uint32_t i, j;

	if (!slots)
		return;
	for (i = home(id); slots[i].p && slots[i].id != id; i = (i + 1) & mask)
		;
	if (!slots[i].p)
		return;
	slots[i].p = NULL;
	used--;
	/* Shift back later entries whose probe path crossed the hole. */
	for (j = (i + 1) & mask; slots[j].p; j = (j + 1) & mask) {
		uint32_t h = home(slots[j].id);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			slots[i] = slots[j];
			slots[j].p = NULL;
			i = j;
		}
	}
}
