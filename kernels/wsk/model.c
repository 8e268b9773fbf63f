/*
 * model.c - the persistent part of the workload: quantized weights, norms, embedding table and
 * KV cache, generated on the host from the seed (splitmix64) and uploaded once before the runs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExtMem.h>

#include "wsk.h"

uint64_t wsk_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rand_unit(uint64_t *state) /* [0, 1) */ { return (float)(wsk_rand(state) >> 40) / (float)(1u << 24); }

/* One independent stream per tensor, so that adding a tensor does not shift the others. */
static uint64_t tensor_stream(uint64_t seed, uint64_t tensor)
{
    uint64_t s = seed ^ (tensor * 0xd1b54a32d192ed03ull);
    return wsk_rand(&s);
}

static int track(struct wsk_model *m, void *p, uint64_t bytes)
{
    m->persistent_bytes += bytes;
    if (m->npersistent == m->cap_persistent) {
        uint32_t cap = m->cap_persistent ? 2 * m->cap_persistent : 64;
        void **grown = realloc(m->persistent, cap * sizeof *grown);
        if (!grown)
            return -1;
        m->persistent = grown;
        m->cap_persistent = cap;
    }
    m->persistent[m->npersistent++] = p;
    return 0;
}

struct builder {
    struct wsk_model *m;
    struct ws_allocator *a;
    uint64_t seed, tensor; /* next tensor's number */
    nvtxDomainHandle_t names;
};

/* Each persistent buffer carries the name of the node that reads it (NVTX memory naming): the
 * buffers are allocated at session start, outside every node, and a tool sees whose weights and
 * cache they are.  Without a tool attached NVTX makes this a no-op. */
static void name_buffer(struct builder *b, const char *node, const void *dev)
{
    nvtxMemRegionNameDesc_t name = {.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER,
                                    .nameType = NVTX_MESSAGE_TYPE_ASCII,
                                    .region.pointer = dev,
                                    .name.ascii = node};
    nvtxMemRegionsNameBatch_t batch = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                       .structSize = sizeof batch,
                                       .regionCount = 1,
                                       .regionElementSize = sizeof name,
                                       .regionElements = &name};
    nvtxMemRegionsName(b->names, &batch);
}

static int upload(struct builder *b, const char *node, const char *what, const void *host, uint64_t bytes, void **dev)
{
    if (ws_alloc_persistent(b->a, node, what, bytes, dev) != 0)
        return -1;
    name_buffer(b, node, *dev);
    if (track(b->m, *dev, bytes) != 0) {
        cudaFree(*dev);
        return wsk_fail(b->a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    }
    cudaError_t rc = host ? cudaMemcpy(*dev, host, bytes, cudaMemcpyHostToDevice) : cudaSuccess;
    return rc == cudaSuccess
               ? 0
               : wsk_fail(b->a->err, WSK_EXIT_FAIL, "wsk: upload of %s failed: %s", node, cudaGetErrorString(rc));
}

/* count floats uniform in [center - spread, center + spread). */
static int make_floats(struct builder *b, const char *node, const char *what, uint64_t count, float center,
                       float spread, float **dev)
{
    float *host = malloc(count ? count * sizeof *host : 1); /* an empty batch has empty tensors */
    if (!host)
        return wsk_fail(b->a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    uint64_t st = tensor_stream(b->seed, b->tensor++);
    for (uint64_t i = 0; i < count; i++)
        host[i] = center + spread * (2.0f * rand_unit(&st) - 1.0f);
    int rc = upload(b, node, what, host, count * sizeof *host, (void **)dev);
    free(host);
    return rc;
}

static int make_bytes(struct builder *b, const char *node, const char *what, uint64_t count, uint8_t lo_nibble_min,
                      uint8_t nibble_range, uint8_t **dev)
{
    uint8_t *host = malloc(count ? count : 1);
    if (!host)
        return wsk_fail(b->a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    uint64_t st = tensor_stream(b->seed, b->tensor++);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t r = wsk_rand(&st);
        uint8_t lo = (uint8_t)(lo_nibble_min + r % nibble_range);
        uint8_t hi = (uint8_t)(lo_nibble_min + (r >> 8) % nibble_range);
        host[i] = (uint8_t)(lo | hi << 4);
    }
    int rc = upload(b, node, what, host, count, (void **)dev);
    free(host);
    return rc;
}

/* Scales keep a dot product of K unit-size inputs with 4-bit weights near unit size. */
static int make_qmatrix(struct builder *b, const char *node, uint64_t K, uint64_t N, bool zp, struct wsk_qmatrix *q)
{
    uint64_t wbytes, nscales, zbytes;
    q->attrs = (struct wsk_matmul_attrs){K, N, zp};
    q->zp = NULL;
    if (wsk_nbits_sizes(K, N, &wbytes, &nscales, &zbytes) != WSK_OK)
        return wsk_fail(b->a->err, WSK_EXIT_USAGE, "wsk: sizes too large for %s", node);
    float scale = 1.0f / (4.6f * sqrtf((float)K));
    if (make_bytes(b, node, "weights", wbytes, 0, 16, &q->w) != 0 ||
        make_floats(b, node, "scales", nscales, scale, 0.5f * scale, &q->scales) != 0)
        return -1;
    return zp ? make_bytes(b, node, "zero points", zbytes, 6, 4, &q->zp) : 0;
}

static int make_layer(struct builder *b, const struct wsk_config *c, uint32_t l, struct wsk_layer *L)
{
    char n[WSK_NODE_NAME];
    uint64_t attn = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim;
    uint64_t cache = (uint64_t)wsk_max_batch(c) * kv * c->max_kv_len;
    const struct {
        enum wsk_layer_node node;
        uint64_t K, N;
        bool zp;
        struct wsk_qmatrix *q;
    } mats[] = {
        {WSK_NODE_Q_PROJ, c->hidden, attn, false, &L->q},
        {WSK_NODE_K_PROJ, c->hidden, kv, false, &L->k},
        {WSK_NODE_V_PROJ, c->hidden, kv, false, &L->v},
        {WSK_NODE_O_PROJ, attn, c->hidden, false, &L->o},
        {WSK_NODE_GATE_PROJ, c->hidden, c->intermediate, true, &L->gate},
        {WSK_NODE_UP_PROJ, c->hidden, c->intermediate, true, &L->up},
        {WSK_NODE_DOWN_PROJ, c->intermediate, c->hidden, true, &L->down},
    };
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        if (make_qmatrix(b, wsk_layer_node_name(n, l, mats[i].node), mats[i].K, mats[i].N, mats[i].zp, mats[i].q) != 0)
            return -1;
    if (make_floats(b, wsk_layer_node_name(n, l, WSK_NODE_LN1), "gamma", c->hidden, 1.0f, 0.1f, &L->ln1) != 0 ||
        make_floats(b, wsk_layer_node_name(n, l, WSK_NODE_LN2), "gamma", c->hidden, 1.0f, 0.1f, &L->ln2) != 0)
        return -1;
    wsk_layer_node_name(n, l, WSK_NODE_ATTENTION);
    return make_floats(b, n, "key cache", cache, 0.0f, 1.0f, &L->k_cache) ||
           make_floats(b, n, "value cache", cache, 0.0f, 1.0f, &L->v_cache);
}

int wsk_model_create(struct wsk_model *m, const struct wsk_config *c, struct ws_allocator *a)
{
    memset(m, 0, sizeof *m);
    struct builder b = {m, a, c->seed, 1, nvtxDomainCreateA("wsk.model")};
    uint64_t maxb = wsk_max_batch(c);
    m->layers = calloc(c->layers, sizeof *m->layers);
    if (!m->layers)
        return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    if (make_floats(&b, WSK_NODE_EMBED_NAME, "embedding table", (uint64_t)c->vocab * c->hidden, 0.0f, 1.0f,
                    &m->embed) != 0 ||
        upload(&b, WSK_NODE_EMBED_NAME, "input ids", NULL, maxb * wsk_max_seq(c) * sizeof(int32_t), (void **)&m->ids) !=
            0)
        return -1;
    for (uint32_t l = 0; l < c->layers; l++)
        if (make_layer(&b, c, l, &m->layers[l]) != 0)
            return -1;
    if (make_floats(&b, WSK_NODE_NORM_NAME, "gamma", c->hidden, 1.0f, 0.1f, &m->norm) != 0 ||
        make_qmatrix(&b, WSK_NODE_LM_HEAD_NAME, c->hidden, c->vocab, true, &m->lm_head) != 0)
        return -1;
    return upload(&b, WSK_NODE_ARGMAX_NAME, "output tokens", NULL, maxb * sizeof(int32_t), (void **)&m->tokens);
}

void wsk_model_destroy(struct wsk_model *m)
{
    for (uint32_t i = 0; i < m->npersistent; i++)
        cudaFree(m->persistent[i]);
    free(m->persistent);
    free(m->layers);
    memset(m, 0, sizeof *m);
}
