// graph_gpu: CUDA graphs with memory nodes in an ordinary nvcc-built program (shared cudart).
// On a GPU it runs its device kernels; with LD_LIBRARY_PATH=<build>/lib/sim it runs on the
// simulated device, where it registers host implementations of the same kernels.  gpu-check.sh
// runs it both ways under libwstrace.so and compares the outputs and the traces.
//
//   graph_gpu N M   an explicit graph (memory allocation node, fill kernel, sum kernel, free node)
//                   launched N times, and the same work captured from a stream (cudaMallocAsync,
//                   <<<>>> launches, cudaFreeAsync) launched M times
// Prints "key=value" lines: the sums each launch computed, the launches, the kernels.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            std::fprintf(stderr, "graph_gpu: %s: %s (line %d)\n", #call, cudaGetErrorString(err_), __LINE__);          \
            std::exit(70);                                                                                             \
        }                                                                                                              \
    } while (0)

enum { ELEMENTS = 1 << 18, THREADS = 256 };

extern "C" __global__ void graph_gpu_fill(unsigned *a, unsigned n, unsigned seed)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = i * 3u + seed;
}

extern "C" __global__ void graph_gpu_sum(const unsigned *a, unsigned n, unsigned long long *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(out, (unsigned long long)a[i]);
}

// The same kernels on the host, for the simulated device.
static void fill_on_host(void **args)
{
    unsigned *a = *(unsigned **)args[0], n = *(unsigned *)args[1], seed = *(unsigned *)args[2];
    for (unsigned i = 0; i < n; i++)
        a[i] = i * 3u + seed;
}

static void sum_on_host(void **args)
{
    const unsigned *a = *(const unsigned **)args[0];
    unsigned n = *(unsigned *)args[1];
    unsigned long long *out = *(unsigned long long **)args[2];
    for (unsigned i = 0; i < n; i++)
        *out += a[i];
}

static void use_host_kernels_on_the_simulated_device()
{
    typedef int (*register_fn)(const char *, void (*)(void **), unsigned, const size_t *);
    register_fn reg = (register_fn)dlsym(RTLD_DEFAULT, "wssim_register_host_kernel_params");
    static const size_t fill_params[] = {sizeof(unsigned *), sizeof(unsigned), sizeof(unsigned)};
    static const size_t sum_params[] = {sizeof(unsigned *), sizeof(unsigned), sizeof(unsigned long long *)};
    if (reg && (reg("graph_gpu_fill", fill_on_host, 3, fill_params) != 0 ||
                reg("graph_gpu_sum", sum_on_host, 3, sum_params) != 0)) {
        std::fprintf(stderr, "graph_gpu: cannot register the host kernels\n");
        std::exit(70);
    }
    std::printf("device=%s\n", reg ? "sim" : "gpu");
}

static void add_kernel(cudaGraph_t g, cudaGraphNode_t *node, const cudaGraphNode_t *dep, void *fn, void **args)
{
    cudaKernelNodeParams k = {};
    k.func = fn;
    k.gridDim = dim3(ELEMENTS / THREADS);
    k.blockDim = dim3(THREADS);
    k.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(node, g, dep, 1, &k));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: graph_gpu N M\n");
        return 2;
    }
    int n = std::atoi(argv[1]), m = std::atoi(argv[2]);
    use_host_kernels_on_the_simulated_device();
    unsigned long long *sum = nullptr, host_sum = 0;
    cudaStream_t s;
    CHECK(cudaMalloc(&sum, sizeof *sum));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned count = ELEMENTS, seed = 7;

    // explicit: alloc -> fill -> sum -> free
    cudaGraph_t g;
    cudaGraphNode_t alloc, fill, add, freed;
    CHECK(cudaGraphCreate(&g, 0));
    cudaMemAllocNodeParams p = {};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.bytesize = ELEMENTS * sizeof(unsigned);
    CHECK(cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &p));
    unsigned *a = (unsigned *)p.dptr;
    void *fill_args[] = {&a, &count, &seed}, *sum_args[] = {&a, &count, &sum};
    add_kernel(g, &fill, &alloc, (void *)graph_gpu_fill, fill_args);
    add_kernel(g, &add, &fill, (void *)graph_gpu_sum, sum_args);
    CHECK(cudaGraphAddMemFreeNode(&freed, g, &add, 1, p.dptr));
    cudaGraphExec_t xe;
    CHECK(cudaGraphInstantiate(&xe, g, 0));
    CHECK(cudaGraphDestroy(g));

    // captured: the same work as stream-ordered calls
    unsigned *b = nullptr;
    seed = 11;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&b, ELEMENTS * sizeof(unsigned), s));
    graph_gpu_fill<<<ELEMENTS / THREADS, THREADS, 0, s>>>(b, count, seed);
    graph_gpu_sum<<<ELEMENTS / THREADS, THREADS, 0, s>>>(b, count, sum);
    CHECK(cudaFreeAsync(b, s));
    cudaGraph_t cg;
    CHECK(cudaStreamEndCapture(s, &cg));
    cudaGraphExec_t xc;
    CHECK(cudaGraphInstantiate(&xc, cg, 0));
    CHECK(cudaGraphDestroy(cg));

    for (int i = 0; i < n + m; i++) {
        CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, s));
        CHECK(cudaGraphLaunch(i < n ? xe : xc, s));
        CHECK(cudaMemcpyAsync(&host_sum, sum, sizeof host_sum, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        std::printf("sum_%d=%llu\n", i, host_sum);
    }
    unsigned long long footprint = 0;
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &footprint));
    std::printf("explicit_launches=%d\ncaptured_launches=%d\nkernels=%d\ngraph_bytes=%zu\nfootprint_high=%llu\n", n, m,
                2 * (n + m), p.bytesize, footprint);
    CHECK(cudaGraphExecDestroy(xe));
    CHECK(cudaGraphExecDestroy(xc));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(sum));
    return 0;
}
