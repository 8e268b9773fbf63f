/*
 * murmur.c - MurmurHash3 x86_128 (Austin Appleby's public-domain algorithm), the hash ONNX
 * Runtime's IResourceAccountant::MakeUniqueNodeName uses (partition.h).  Blocks are read as
 * little-endian words, as ORT reads them on every platform.
 */
#include "partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t fmix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static uint32_t word_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The lane constants: lane i multiplies by c[i], rotates by r[i], multiplies by c[i + 1]. */
static const uint32_t c[5] = {0x239b961bu, 0xab0e9789u, 0x38b34ae5u, 0xa1e38b93u, 0x239b961bu};
static const int r_key[4] = {15, 16, 17, 18};

static uint32_t mix_key(uint32_t k, int lane)
{
    k *= c[lane];
    k = rotl(k, r_key[lane]);
    return k * c[lane + 1];
}

static void body(uint32_t h[4], const uint8_t *block)
{
    static const int r_h[4] = {19, 17, 15, 13};
    static const uint32_t add[4] = {0x561ccd1bu, 0x0bcaa747u, 0x96cd1c35u, 0x32ac3b17u};
    for (int lane = 0; lane < 4; lane++) {
        h[lane] ^= mix_key(word_at(block + 4 * lane), lane);
        h[lane] = rotl(h[lane], r_h[lane]);
        h[lane] += h[(lane + 1) % 4];
        h[lane] = h[lane] * 5 + add[lane];
    }
}

/* The last len % 16 bytes: lane i takes bytes 4i..4i+3 of the tail, when present. */
static void tail(uint32_t h[4], const uint8_t *t, size_t n)
{
    for (int lane = 3; lane >= 0; lane--) {
        uint32_t k = 0;
        size_t from = (size_t)lane * 4;
        if (n <= from)
            continue;
        for (size_t b = n - from < 4 ? n - from : 4; b-- > 0;)
            k ^= (uint32_t)t[from + b] << (8 * b);
        h[lane] ^= mix_key(k, lane);
    }
}

void ws_murmur3_x86_128(const void *key, size_t len, uint32_t seed, uint32_t out[4])
{
    const uint8_t *data = key;
    uint32_t h[4] = {seed, seed, seed, seed};
    size_t blocks = len / 16;
    for (size_t i = 0; i < blocks; i++)
        body(h, data + 16 * i);
    tail(h, data + 16 * blocks, len % 16);
    for (int i = 0; i < 4; i++)
        h[i] ^= (uint32_t)len;
    h[0] += h[1] + h[2] + h[3];
    h[1] += h[0], h[2] += h[0], h[3] += h[0];
    for (int i = 0; i < 4; i++)
        h[i] = fmix(h[i]);
    h[0] += h[1] + h[2] + h[3];
    h[1] += h[0], h[2] += h[0], h[3] += h[0];
    memcpy(out, h, sizeof h);
}

char *ws_ort_unique_name(const struct ws_part_graph_node *n)
{
    uint32_t hash[4] = {0, 0, 0, 0};
    const char *name = n->name && n->name[0] ? n->name : n->op_type ? n->op_type : "";
    for (size_t i = 0; i < n->ninputs; i++)
        ws_murmur3_x86_128(n->inputs[i], strlen(n->inputs[i]), hash[0], hash);
    for (size_t i = 0; i < n->noutputs; i++)
        ws_murmur3_x86_128(n->outputs[i], strlen(n->outputs[i]), hash[0], hash);
    unsigned long long v = (unsigned long long)hash[0] | (unsigned long long)hash[1] << 32;
    size_t len = strlen(name) + 22;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s_%llu", name, v);
    return out;
}
