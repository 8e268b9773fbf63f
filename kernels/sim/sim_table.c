/* Handle table: every pointer or handle the simulated device gave out, keyed by its address.
 * Open addressing with linear probing and backward-shift deletion (no tombstones), so lookups of
 * unknown pointers — invalid or double frees — stay cheap and never touch the pointer itself. */
#include <stdlib.h>

#include "sim_internal.h"

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sim_entry *slots;
static size_t slot_count; /* a power of two, or 0 before the first insert */
static size_t used;

static size_t home_slot(uintptr_t key)
{
    uint64_t h = (uint64_t)key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (slot_count - 1);
}

static size_t find_slot(uintptr_t key)
{
    size_t i = home_slot(key);
    while (slots[i].key != 0 && slots[i].key != key)
        i = (i + 1) & (slot_count - 1);
    return i;
}

static int grow(void)
{
    size_t old_count = slot_count;
    struct sim_entry *old = slots;
    size_t new_count = old_count ? old_count * 2 : 64;
    struct sim_entry *fresh = calloc(new_count, sizeof *fresh);
    if (!fresh)
        return -1;
    slots = fresh;
    slot_count = new_count;
    for (size_t i = 0; i < old_count; i++)
        if (old[i].key != 0)
            slots[find_slot(old[i].key)] = old[i];
    free(old);
    return 0;
}

int sim_table_put(const void *key, enum sim_kind kind, size_t size, void *data)
{
    uintptr_t k = (uintptr_t)key;
    if (k == 0)
        return -1;
    /* Keep the load at most one half so probe sequences stay short. */
    if ((used + 1) * 2 > slot_count && grow() != 0)
        return -1;
    size_t i = find_slot(k);
    if (slots[i].key == 0)
        used++;
    slots[i] = (struct sim_entry){.key = k, .kind = kind, .size = size, .data = data};
    return 0;
}

struct sim_entry *sim_table_get(const void *key)
{
    uintptr_t k = (uintptr_t)key;
    if (k == 0 || slot_count == 0)
        return NULL;
    size_t i = find_slot(k);
    return slots[i].key == k ? &slots[i] : NULL;
}

int sim_table_has(const void *key, enum sim_kind kind)
{
    const struct sim_entry *e = sim_table_get(key);
    return e && e->kind == kind;
}

void sim_table_del(const void *key)
{
    struct sim_entry *e = sim_table_get(key);
    if (!e)
        return;
    size_t mask = slot_count - 1;
    size_t hole = (size_t)(e - slots);
    /* Shift later members of the probe run back into the hole when the hole lies between their
     * home slot and their current slot, so that no lookup stops early at an empty slot. */
    for (size_t j = (hole + 1) & mask; slots[j].key != 0; j = (j + 1) & mask) {
        size_t home = home_slot(slots[j].key);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            slots[hole] = slots[j];
            hole = j;
        }
    }
    slots[hole].key = 0;
    used--;
}

const struct sim_entry *sim_table_containing(const void *p)
{
    const struct sim_entry *exact = sim_table_get(p);
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; !exact && i < slot_count; i++) {
        const struct sim_entry *e = &slots[i];
        if (e->key == 0 || a < e->key || a - e->key >= e->size)
            continue;
        switch (e->kind) {
        case SIM_DEVICE_MEM:
        case SIM_MANAGED_MEM:
        case SIM_HOST_MEM:
        case SIM_GRAPH_MEM:
        case SIM_IPC_MAPPING:
        case SIM_HOST_REGISTERED: return e;
        default: break;
        }
    }
    if (exact && exact->kind != SIM_DEVICE_MEM && exact->kind != SIM_MANAGED_MEM && exact->kind != SIM_HOST_MEM &&
        exact->kind != SIM_GRAPH_MEM && exact->kind != SIM_IPC_MAPPING && exact->kind != SIM_HOST_REGISTERED)
        return NULL;
    return exact;
}
