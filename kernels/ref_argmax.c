/*
 * ref_argmax.c - host reference of the two-pass argmax: pass one reduces blocks of
 * WSK_ARGMAX_BLOCK logits into (value, index) pairs in the workspace, pass two reduces the pairs
 * of each row.  Ties go to the lower index and NaN never wins, so both passes (and the CUDA tree
 * reduction) pick the same token.
 */
#include "wskernels.h"

#include <math.h>

static bool better(float v, int32_t i, float best, int32_t best_i)
{
    if (isnan(v))
        return false;
    if (isnan(best))
        return true;
    return v > best || (v == best && i < best_i);
}

static void argmax_blocks(struct wsk_argmax_pair *ws, const float *logits, uint32_t batch, uint32_t vocab)
{
    uint32_t nblk = (uint32_t)wsk_argmax_nblocks(vocab);
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t blk = 0; blk < nblk; blk++) {
            uint32_t i0 = blk * WSK_ARGMAX_BLOCK;
            uint32_t i1 = vocab - i0 < WSK_ARGMAX_BLOCK ? vocab : i0 + WSK_ARGMAX_BLOCK;
            struct wsk_argmax_pair best = {NAN, (int32_t)i0};
            for (uint32_t i = i0; i < i1; i++) {
                float v = logits[(uint64_t)b * vocab + i];
                if (better(v, (int32_t)i, best.value, best.index))
                    best = (struct wsk_argmax_pair){v, (int32_t)i};
            }
            ws[(uint64_t)b * nblk + blk] = best;
        }
}

static void argmax_final(int32_t *tokens, const struct wsk_argmax_pair *ws, uint32_t batch, uint32_t nblk)
{
    for (uint32_t b = 0; b < batch; b++) {
        struct wsk_argmax_pair best = {NAN, 0};
        for (uint32_t blk = 0; blk < nblk; blk++) {
            struct wsk_argmax_pair p = ws[(uint64_t)b * nblk + blk];
            if (better(p.value, p.index, best.value, best.index))
                best = p;
        }
        tokens[b] = best.index;
    }
}

void wsk_ref_argmax(int32_t *tokens, const float *logits, uint32_t batch, uint32_t vocab,
                    struct wsk_argmax_pair *workspace)
{
    argmax_blocks(workspace, logits, batch, vocab);
    argmax_final(tokens, workspace, batch, (uint32_t)wsk_argmax_nblocks(vocab));
}

#define ARG(type, i) (*(type *)args[i])

void wsk_host_argmax_blocks(void **args)
{
    argmax_blocks(ARG(struct wsk_argmax_pair *, 0), ARG(const float *, 1), ARG(uint32_t, 2), ARG(uint32_t, 3));
}

void wsk_host_argmax_final(void **args)
{
    argmax_final(ARG(int32_t *, 0), ARG(const struct wsk_argmax_pair *, 1), ARG(uint32_t, 2), ARG(uint32_t, 3));
}
