/* elementwise.cu - embedding gather, rmsnorm (of every row, or of each sequence's last), silu_mul and
 * residual add on the GPU. */
#include "wsk_cuda.cuh"

/* grid (ceil(H/WSK_THREADS), M) */
extern "C" __global__ void wsk_embed(float *y, const int32_t *ids, const float *table, uint32_t M, uint32_t H)
{
    uint32_t m = blockIdx.y, h = blockIdx.x * blockDim.x + threadIdx.x;
    if (m < M && h < H)
        y[(uint64_t)m * H + h] = table[(uint64_t)ids[m] * H + h];
}

/* grid (M), block WSK_THREADS: one row per block, tree reduction of the squares. */
extern "C" __global__ void wsk_rmsnorm(float *y, const float *x, const float *gamma, uint32_t M, uint32_t H, float eps)
{
    __shared__ float partial[WSK_THREADS];
    uint32_t m = blockIdx.x;
    if (m >= M)
        return;
    const float *row = x + (uint64_t)m * H;
    float sum = 0.0f;
    for (uint32_t h = threadIdx.x; h < H; h += blockDim.x)
        sum += row[h] * row[h];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (uint32_t stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    float inv = 1.0f / sqrtf(partial[0] / (float)(H ? H : 1) + eps);
    for (uint32_t h = threadIdx.x; h < H; h += blockDim.x)
        y[(uint64_t)m * H + h] = row[h] * inv * gamma[h];
}

/* grid (batch), block WSK_THREADS: the last position of each sequence, normalised. */
extern "C" __global__ void wsk_rmsnorm_last(float *y, const float *x, const float *gamma, uint32_t batch, uint32_t seq,
                                            uint32_t H, float eps)
{
    __shared__ float partial[WSK_THREADS];
    uint32_t b = blockIdx.x;
    if (b >= batch || seq == 0)
        return;
    const float *row = x + ((uint64_t)b * seq + seq - 1) * H;
    float sum = 0.0f;
    for (uint32_t h = threadIdx.x; h < H; h += blockDim.x)
        sum += row[h] * row[h];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (uint32_t stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    float inv = 1.0f / sqrtf(partial[0] / (float)(H ? H : 1) + eps);
    for (uint32_t h = threadIdx.x; h < H; h += blockDim.x)
        y[(uint64_t)b * H + h] = row[h] * inv * gamma[h];
}

/* Grid-stride loops: any grid covers any n. */
extern "C" __global__ void wsk_silu_mul(float *y, const float *gate, const float *up, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

extern "C" __global__ void wsk_add(float *y, const float *a, const float *b, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        y[i] = a[i] + b[i];
}
