/*
 * tactics.c - the tactic cache of the quantized matmuls.  ONNX Runtime's fpA_intB GEMM profiles
 * its tactics once per GEMM shape and reuses the choice; wsk does the same: the tactic chosen for
 * (K, N, zero points, M) serves every later kernel of that shape.  A kernel created for a shape the
 * cache does not hold yet cannot know its tactic, declares the conservative size and fills the
 * cache (graph.c).
 */
#include <stdlib.h>

#include "wsk.h"

static bool same_shape(const struct wsk_tactic_entry *e, const struct wsk_matmul_attrs *a, uint64_t M)
{
    return e->attrs.K == a->K && e->attrs.N == a->N && e->attrs.has_zero_point == a->has_zero_point && e->M == M;
}

bool wsk_tactics_find(const struct wsk_tactics *t, const struct wsk_matmul_attrs *a, uint64_t M,
                      struct wsk_matmul_kernel *out)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (same_shape(&t->v[i], a, M)) {
            *out = t->v[i].kernel;
            return true;
        }
    return false;
}

int wsk_tactics_add(struct wsk_tactics *t, const struct wsk_matmul_attrs *a, uint64_t M,
                    const struct wsk_matmul_kernel *k)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 16;
        struct wsk_tactic_entry *grown = realloc(t->v, cap * sizeof *grown);
        if (!grown)
            return -1;
        t->v = grown;
        t->cap = cap;
    }
    t->v[t->n++] = (struct wsk_tactic_entry){*a, M, *k};
    return 0;
}

void wsk_tactics_free(struct wsk_tactics *t)
{
    free(t->v);
    *t = (struct wsk_tactics){0};
}
