/* cublas_gemm — GEMMs through cuBLAS and cuBLASLt with workspaces, for scripts/gpu-check.sh.
 *
 * cuBLAS and cuBLASLt carry their own runtime: they reach the driver through cuGetProcAddress,
 * so their kernels (and the workspace cuBLAS allocates for itself) are seen only by a tracer that
 * wraps the driver.  This program runs, on a GPU:
 *   1. cublasSgemm with a workspace the program allocated and handed over (cublasSetWorkspace);
 *   2. cublasLtMatmul with a workspace of its own, sized by the program (the heuristic's limit);
 *   3. cublasSgemm on a second handle given no workspace: cuBLAS allocates one itself.
 * Each result is checked against a host reference (small integers: exact in fp32).  It prints
 * what it allocated and launched, as key=value lines, for the trace to be checked against:
 *   alloc_bytes=<n> (one line per cudaMalloc, in order), gemms=3, workspace_bytes, lt_workspace_bytes.
 * Usage: cublas_gemm [M N K]   (default 256 192 128).  Exits 0 when every result is right.
 * Needs a GPU: cuBLAS does not run on the simulated device (it needs the real driver's private
 * interfaces). */
#include <stdio.h>
#include <stdlib.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

static int failures;

#define CUDA(call)                                                                                                     \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "cublas_gemm: %s: %s\n", #call, cudaGetErrorString(err_));                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define BLAS(call)                                                                                                     \
    do {                                                                                                               \
        cublasStatus_t st_ = (call);                                                                                   \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                            \
            fprintf(stderr, "cublas_gemm: %s: status %d\n", #call, (int)st_);                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA(cudaMalloc(&p, bytes));
    printf("alloc_bytes=%zu\n", bytes);
    return p;
}

/* C = A * B, column-major, M x K times K x N. */
static void reference(const float *a, const float *b, float *c, int m, int n, int k)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0;
            for (int p = 0; p < k; p++)
                s += a[i + (size_t)p * m] * b[p + (size_t)j * k];
            c[i + (size_t)j * m] = s;
        }
}

static void check_result(const char *what, const float *dev, const float *want, int m, int n)
{
    size_t count = (size_t)m * n;
    float *got = malloc(count * sizeof *got);
    CUDA(cudaMemcpy(got, dev, count * sizeof *got, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += got[i] != want[i];
    if (bad) {
        fprintf(stderr, "cublas_gemm: %s: %zu of %zu values wrong\n", what, bad, count);
        failures++;
    }
    free(got);
}

int main(int argc, char **argv)
{
    int m = 256, n = 192, k = 128;
    if (argc == 4) {
        m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: cublas_gemm [M N K]\n");
        return 2;
    }
    if (m <= 0 || n <= 0 || k <= 0 || m > 8192 || n > 8192 || k > 8192) {
        fprintf(stderr, "cublas_gemm: M, N and K must be 1..8192\n");
        return 2;
    }
    size_t a_count = (size_t)m * k, b_count = (size_t)k * n, c_count = (size_t)m * n;
    float *ha = malloc(a_count * sizeof *ha), *hb = malloc(b_count * sizeof *hb), *hc = malloc(c_count * sizeof *hc);
    for (size_t i = 0; i < a_count; i++)
        ha[i] = (float)((int)(i % 7) - 3);
    for (size_t i = 0; i < b_count; i++)
        hb[i] = (float)((int)(i % 5) - 2);
    reference(ha, hb, hc, m, n, k);

    float *a = device_alloc(a_count * sizeof *a);
    float *b = device_alloc(b_count * sizeof *b);
    float *c = device_alloc(c_count * sizeof *c);
    CUDA(cudaMemcpy(a, ha, a_count * sizeof *a, cudaMemcpyHostToDevice));
    CUDA(cudaMemcpy(b, hb, b_count * sizeof *b, cudaMemcpyHostToDevice));
    const float alpha = 1.0f, beta = 0.0f;

    /* 1. cuBLAS with the program's workspace. */
    const size_t workspace_bytes = (size_t)32 << 20;
    void *workspace = device_alloc(workspace_bytes);
    printf("workspace_bytes=%zu\n", workspace_bytes);
    cublasHandle_t handle;
    BLAS(cublasCreate(&handle));
    BLAS(cublasSetWorkspace(handle, workspace, workspace_bytes));
    CUDA(cudaMemset(c, 0, c_count * sizeof *c));
    BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m));
    CUDA(cudaDeviceSynchronize());
    check_result("cublasSgemm with a workspace", c, hc, m, n);

    /* 2. cuBLASLt with a workspace sized by the program. */
    const size_t lt_workspace_bytes = (size_t)8 << 20;
    void *lt_workspace = device_alloc(lt_workspace_bytes);
    printf("lt_workspace_bytes=%zu\n", lt_workspace_bytes);
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    BLAS(cublasLtCreate(&lt));
    BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, (uint64_t)m, (uint64_t)k, m));
    BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, (uint64_t)k, (uint64_t)n, k));
    BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, (uint64_t)m, (uint64_t)n, m));
    BLAS(cublasLtMatmulPreferenceCreate(&pref));
    BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt_workspace_bytes,
                                              sizeof lt_workspace_bytes));
    BLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &result, &found));
    if (found < 1) {
        fprintf(stderr, "cublas_gemm: cublasLt found no algorithm\n");
        return 1;
    }
    printf("lt_algorithm_workspace_bytes=%zu\n", result.workspaceSize);
    CUDA(cudaMemset(c, 0, c_count * sizeof *c));
    BLAS(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &result.algo, lt_workspace,
                        lt_workspace_bytes, NULL));
    CUDA(cudaDeviceSynchronize());
    check_result("cublasLtMatmul with a workspace", c, hc, m, n);

    /* 3. cuBLAS on a handle of its own, without a workspace: it allocates one itself. */
    cublasHandle_t own;
    BLAS(cublasCreate(&own));
    CUDA(cudaMemset(c, 0, c_count * sizeof *c));
    BLAS(cublasSgemm(own, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m));
    CUDA(cudaDeviceSynchronize());
    check_result("cublasSgemm allocating its own workspace", c, hc, m, n);
    printf("gemms=3\n");

    BLAS(cublasDestroy(own));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    BLAS(cublasLtDestroy(lt));
    BLAS(cublasDestroy(handle));
    CUDA(cudaFree(lt_workspace));
    CUDA(cudaFree(workspace));
    CUDA(cudaFree(c));
    CUDA(cudaFree(b));
    CUDA(cudaFree(a));
    free(ha), free(hb), free(hc);
    return failures ? 1 : 0;
}
