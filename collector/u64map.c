#include "u64map.h"

#include <stdlib.h>

static size_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

int ws_u64map_init(struct ws_u64map *m, size_t expected)
{
    size_t cap = 64;
    while (cap < expected * 2)
        cap *= 2;
    m->keys = malloc(cap * sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->state = calloc(cap, 1);
    m->cap = cap;
    m->len = m->used = 0;
    if (!m->keys || !m->vals || !m->state) {
        ws_u64map_free(m);
        return -1;
    }
    return 0;
}

void ws_u64map_free(struct ws_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->state);
    m->keys = m->vals = NULL;
    m->state = NULL;
    m->cap = m->len = m->used = 0;
}

static size_t find_slot(const struct ws_u64map *m, uint64_t key, int *found)
{
    size_t mask = m->cap - 1, i = hash64(key) & mask, first_free = (size_t)-1;
    for (;;) {
        if (m->state[i] == 0) {
            *found = 0;
            return first_free != (size_t)-1 ? first_free : i;
        }
        if (m->state[i] == 1 && m->keys[i] == key) {
            *found = 1;
            return i;
        }
        if (m->state[i] == 2 && first_free == (size_t)-1)
            first_free = i;
        i = (i + 1) & mask;
    }
}

int ws_u64map_get(const struct ws_u64map *m, uint64_t key, uint64_t *val)
{
    int found;
    size_t i = find_slot(m, key, &found);
    if (found && val)
        *val = m->vals[i];
    return found;
}

static int grow(struct ws_u64map *m)
{
    struct ws_u64map bigger;
    if (ws_u64map_init(&bigger, m->len * 2 + 32) != 0)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1)
            ws_u64map_put(&bigger, m->keys[i], m->vals[i]);
    ws_u64map_free(m);
    *m = bigger;
    return 0;
}

int ws_u64map_put(struct ws_u64map *m, uint64_t key, uint64_t val)
{
    if ((m->used + 1) * 4 >= m->cap * 3 && grow(m) != 0)
        return -1;
    int found;
    size_t i = find_slot(m, key, &found);
    if (!found) {
        if (m->state[i] == 0)
            m->used++;
        m->state[i] = 1;
        m->keys[i] = key;
        m->len++;
    }
    m->vals[i] = val;
    return 0;
}

int ws_u64map_del(struct ws_u64map *m, uint64_t key)
{
    int found;
    size_t i = find_slot(m, key, &found);
    if (!found)
        return 0;
    m->state[i] = 2;
    m->len--;
    return 1;
}
