/*
 * ref_attention.h - what the two attention references share (ref_attention.c, decoding, and
 * ref_attention_prefill.c): the chunked online softmax over a range of positions.
 */
#ifndef WSK_REF_ATTENTION_H
#define WSK_REF_ATTENTION_H

#include "wskernels.h"

/* Attends q over positions [p0, p1) of one KV row: the normalised output into out_row (head_dim
 * values), its log-sum-exp returned; an empty range gives zeros and -inf. */
float wsk_ref_attend_range(float *out_row, const float *q, const float *k_rows, const float *v_rows, uint32_t head_dim,
                           uint64_t p0, uint64_t p1);

static inline uint32_t wsk_ref_rounded_head(uint32_t head_dim)
{
    return (head_dim + WSK_FLASH_HEAD_ROUND - 1) / WSK_FLASH_HEAD_ROUND * WSK_FLASH_HEAD_ROUND;
}

#endif
