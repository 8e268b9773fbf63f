/*
 * argmax.cu - two-pass argmax over the vocabulary.  Ties go to the lower index and NaN never
 * wins, as in the host reference, so the token does not depend on the reduction order.
 */
#include "wsk_cuda.cuh"

__device__ static bool better(float v, int32_t i, float best, int32_t best_i)
{
    if (isnan(v))
        return false;
    if (isnan(best))
        return true;
    return v > best || (v == best && i < best_i);
}

/* Tree reduction of one pair per thread; thread 0 ends with the block's best. */
__device__ static struct wsk_argmax_pair block_best(struct wsk_argmax_pair mine)
{
    __shared__ struct wsk_argmax_pair pairs[WSK_THREADS];
    pairs[threadIdx.x] = mine;
    __syncthreads();
    for (uint32_t stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            struct wsk_argmax_pair o = pairs[threadIdx.x + stride];
            if (better(o.value, o.index, pairs[threadIdx.x].value, pairs[threadIdx.x].index))
                pairs[threadIdx.x] = o;
        }
        __syncthreads();
    }
    return pairs[0];
}

/* grid (ceil(vocab/WSK_ARGMAX_BLOCK), batch), block WSK_THREADS */
extern "C" __global__ void wsk_argmax_blocks(struct wsk_argmax_pair *ws, const float *logits, uint32_t batch,
                                             uint32_t vocab)
{
    uint32_t blk = blockIdx.x, b = blockIdx.y;
    uint32_t nblk = (vocab + WSK_ARGMAX_BLOCK - 1) / WSK_ARGMAX_BLOCK;
    if (b >= batch || blk >= nblk)
        return;
    uint32_t i0 = blk * WSK_ARGMAX_BLOCK;
    uint32_t i1 = vocab - i0 < WSK_ARGMAX_BLOCK ? vocab : i0 + WSK_ARGMAX_BLOCK;
    struct wsk_argmax_pair best = {NAN, (int32_t)i0};
    for (uint32_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        float v = logits[(uint64_t)b * vocab + i];
        if (better(v, (int32_t)i, best.value, best.index))
            best = {v, (int32_t)i};
    }
    best = block_best(best);
    if (threadIdx.x == 0)
        ws[(uint64_t)b * nblk + blk] = best;
}

/* grid (batch), block WSK_THREADS */
extern "C" __global__ void wsk_argmax_final(int32_t *tokens, const struct wsk_argmax_pair *ws, uint32_t batch,
                                            uint32_t nblocks)
{
    uint32_t b = blockIdx.x;
    if (b >= batch)
        return;
    struct wsk_argmax_pair best = {NAN, 0};
    for (uint32_t i = threadIdx.x; i < nblocks; i += blockDim.x) {
        struct wsk_argmax_pair p = ws[(uint64_t)b * nblocks + i];
        if (better(p.value, p.index, best.value, best.index))
            best = p;
    }
    best = block_best(best);
    if (threadIdx.x == 0)
        tokens[b] = best.index;
}
