/* A small open-addressing hash map from uint64 keys to uint64 values (linear probing,
 * tombstones on delete).  Used by the collector for addresses, symbols and handles. */
#ifndef WS_U64MAP_H
#define WS_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct ws_u64map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *state; /* 0 empty, 1 full, 2 deleted */
    size_t cap, len, used;
};

int ws_u64map_init(struct ws_u64map *m, size_t expected);
void ws_u64map_free(struct ws_u64map *m);
/* 1 and *val when present, 0 when absent. */
int ws_u64map_get(const struct ws_u64map *m, uint64_t key, uint64_t *val);
/* Insert or replace; 0 or -1 (out of memory). */
int ws_u64map_put(struct ws_u64map *m, uint64_t key, uint64_t val);
/* Remove; 1 when it was present. */
int ws_u64map_del(struct ws_u64map *m, uint64_t key);

#endif
