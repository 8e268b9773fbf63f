/* table.cu - the CUDA kernel stubs, handed to cudaLaunchKernel by wsk --device cuda. */
#include "wsk_cuda.cuh"

extern "C" const struct wsk_kernel_table *wsk_cuda_kernels(void)
{
    static const struct wsk_kernel_table table = {
        (const void *)wsk_embed,
        (const void *)wsk_rmsnorm,
        (const void *)wsk_silu_mul,
        (const void *)wsk_add,
        (const void *)wsk_matmul_gemv,
        (const void *)wsk_matmul_splitk,
        (const void *)wsk_matmul_reduce,
        (const void *)wsk_kv_append,
        (const void *)wsk_attn_split,
        (const void *)wsk_attn_combine,
        (const void *)wsk_argmax_blocks,
        (const void *)wsk_argmax_final,
        /* prefill */
        (const void *)wsk_matmul_gemm,
        (const void *)wsk_rmsnorm_last,
        (const void *)wsk_attn_seqlens,
        (const void *)wsk_kv_append_seq,
        (const void *)wsk_attn_prefill_split,
        (const void *)wsk_attn_prefill_combine,
    };
    return &table;
}
