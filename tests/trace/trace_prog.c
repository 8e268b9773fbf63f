/*
 * trace_prog: the program that test_trace runs under libwstrace.so, one mode per scenario
 * (argv[1]).  It is an ordinary CUDA program linked against the simulated device; kernels are
 * host functions void f(void **args).  It prints "key=value" lines that the tests compare with
 * the trace, so expected numbers come from what the program did, never from the tracer.
 *
 *   apis            every allocation and launch API once (or a known number of times)
 *   nvtx            nested NVTX ranges, domains, registered strings, start/end across threads
 *   explicit        wstrace.h nodes on several threads, runs, declarations, metadata
 *   errors          failing calls: prints every return code and errno (compare traced/untraced)
 *   stress T N      T threads x N cudaMalloc/cudaFree pairs, free-running (the simulated device's
 *                   peak is printed)
 *   waves T R K     T threads, R rounds: each allocates K blocks, all wait, each frees the blocks of
 *                   the next thread (a free on another thread than the allocation), all wait
 *   count N PATH    N cudaMalloc/cudaFree pairs (N = 0: until killed), sizes 64 + i % 4096; the
 *                   number of pairs completed is kept in the 8-byte file PATH after each one
 *   fork-exit N     N forked children, child i makes i + 1 allocations and leaves through _exit
 *   forkstorm D W   every process forks W children down to depth D; each makes 2 allocations
 *                   and frees one, then exits (through exit and _exit in turn)
 *   names           names that are not plain ASCII: long multibyte ones, invalid UTF-8, wide
 *                   strings with surrogates
 *   fsize B MODE..  sets the file size limit to B bytes, then execs itself as MODE...
 *   gated DIR MODE..  creates DIR/ready.<pid>, waits for DIR/go, then runs MODE...: processes
 *                   started together all pass their start-up before any of them goes on
 *   fork            allocations in the parent and in a forked child
 *   exec            allocations, then exec of itself ("exec-second") with more allocations
 *   spawn           fork, and the child execs this program as "exec-second"
 *   kill N          N allocations, then SIGKILL to itself
 *   nvcc            nvcc 13's launch path: __cudaGetKernel + __cudaLaunchKernel on registered stubs
 *   chdir           allocates, then changes its working folder to / and exits
 *   plain CODE      prints a few lines, allocates, exits with CODE
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <wchar.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "wssim.h"
#include "wssim_nvcc.h"
#include "wstrace.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "trace_prog: %s failed: %d at line %d\n", #call, (int)err_, __LINE__);                     \
            exit(70);                                                                                                  \
        }                                                                                                              \
    } while (0)

static unsigned long long tid(void) { return (unsigned long long)syscall(SYS_gettid); }

/* ---- kernels: exported (-rdynamic) so that the tracer names them from the symbol table ---- */

void trace_kernel_scale(void **args)
{
    int *counter = *(int **)args[0];
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

void trace_kernel_shift(void **args)
{
    int *counter = *(int **)args[0];
    __atomic_add_fetch(counter, 10, __ATOMIC_RELAXED);
}

void trace_kernel_coop(void **args)
{
    int *counter = *(int **)args[0];
    __atomic_add_fetch(counter, 100, __ATOMIC_RELAXED);
}

/* ---- nvcc's registration path, done from a constructor as nvcc-generated code does ---- */

#define NVCC_KERNEL_NAME "_Z12nvcc_scalerPfif"

/* The host stub of __global__ void nvcc_scaler(float *, int, float): exported, so that a
 * symbol-table name ("trace_nvcc_stub") exists and must lose against the registered one. */
void trace_nvcc_stub(void) {}

static void nvcc_scaler_host(void **args)
{
    float *data = *(float **)args[0];
    int n = *(int *)args[1];
    float factor = *(float *)args[2];
    for (int i = 0; i < n; i++)
        data[i] *= factor;
}

static char fake_fatbin[16];
static void **nvcc_module;

__attribute__((constructor)) static void register_nvcc_module(void)
{
    wssim_register_host_kernel(NVCC_KERNEL_NAME, nvcc_scaler_host);
    nvcc_module = __cudaRegisterFatBinary(fake_fatbin);
    __cudaRegisterFunction(nvcc_module, (const char *)trace_nvcc_stub, (char *)NVCC_KERNEL_NAME, NVCC_KERNEL_NAME, -1,
                           NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(nvcc_module);
}

/* ---- apis ----------------------------------------------------------------------------------- */

static int mode_apis(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    printf("stream=%llu\n", (unsigned long long)(uintptr_t)s);

    void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *h1 = NULL, *h2 = NULL, *leak = NULL;
    CHECK(cudaMalloc(&a, 1000));
    CHECK(cudaFree(a));
    CHECK(cudaMallocAsync(&b, 2000, s));
    CHECK(cudaFreeAsync(b, s));
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(cudaMallocFromPoolAsync(&c, 3000, pool, s));
    CHECK(cudaFreeAsync(c, s));
    CHECK(cudaMallocManaged(&d, 4000, cudaMemAttachGlobal));
    CHECK(cudaFree(d));
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&e, &pitch, 100, 7));
    printf("pitch=%zu\n", pitch);
    CHECK(cudaFree(e));
    CHECK(cudaMallocHost(&h1, 5000));
    CHECK(cudaFreeHost(h1));
    CHECK(cudaHostAlloc(&h2, 6000, cudaHostAllocDefault));
    CHECK(cudaFreeHost(h2));
    CHECK(cudaMalloc(&leak, 7000)); /* never freed */
    CHECK(cudaFree(NULL));          /* frees nothing */
    printf("bad_free=%d\n", (int)cudaFree((void *)(uintptr_t)0x10));
    printf("leak=%llu\n", (unsigned long long)(uintptr_t)leak);

    int *counter;
    CHECK(cudaMallocManaged((void **)&counter, sizeof *counter, cudaMemAttachGlobal));
    *counter = 0;
    void *args[] = {&counter};
    for (int i = 0; i < 3; i++)
        CHECK(cudaLaunchKernel((const void *)trace_kernel_scale, (dim3){2, 3, 4}, (dim3){32, 2, 1}, args, 128, s));
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){5, 1, 1};
    cfg.blockDim = (dim3){64, 1, 1};
    cfg.dynamicSmemBytes = 256;
    cfg.stream = s;
    CHECK(cudaLaunchKernelExC(&cfg, (const void *)trace_kernel_shift, args));
    CHECK(cudaLaunchCooperativeKernel((const void *)trace_kernel_coop, (dim3){7, 1, 1}, (dim3){16, 16, 1}, args, 0,
                                      NULL));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaGraphCreate(&graph, 0));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    printf("graph_exec=%llu\n", (unsigned long long)(uintptr_t)exec);
    CHECK(cudaStreamSynchronize(s));
    printf("counter=%d\n", *counter);
    CHECK(cudaFree(counter));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

/* ---- nvtx ------------------------------------------------------------------------------------ */

struct nvtx_worker {
    nvtxRangeId_t cross;
    void *mem;
    unsigned long long tid;
};

static void *nvtx_worker_main(void *arg)
{
    struct nvtx_worker *w = arg;
    w->tid = tid();
    nvtxNameOsThreadA((uint32_t)w->tid, "worker-thread");
    nvtxRangePushA("worker-range");
    CHECK(cudaMalloc(&w->mem, 500));
    nvtxRangePop();
    nvtxRangeEnd(w->cross); /* ends the range the main thread started */
    return NULL;
}

static int mode_nvtx(void)
{
    void *m[8];
    int *counter;
    CHECK(cudaMallocManaged((void **)&counter, sizeof *counter, cudaMemAttachGlobal)); /* unattributed */
    void *args[] = {&counter};
    printf("main_tid=%llu\n", tid());
    nvtxNameOsThreadA((uint32_t)tid(), "main-thread");

    nvtxRangePushA("outer");
    CHECK(cudaMalloc(&m[0], 100));
    nvtxRangePushA("middle");
    CHECK(cudaMalloc(&m[1], 200));
    nvtxRangePushA("inner");
    CHECK(cudaMalloc(&m[2], 300));
    nvtxMarkA("mark-inner");
    CHECK(cudaLaunchKernel((const void *)trace_kernel_scale, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
    CHECK(cudaFree(m[2])); /* freed inside inner */
    nvtxRangePop();
    nvtxRangePop();
    CHECK(cudaFree(m[1])); /* allocated in middle, freed in outer */
    nvtxRangePop();

    nvtxDomainHandle_t domain = nvtxDomainCreateA("my-domain");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(domain, "registered-node");
    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = reg;
    nvtxDomainRangePushEx(domain, &attr);
    CHECK(cudaMalloc(&m[3], 400));
    nvtxDomainMarkEx(domain, &attr);
    nvtxDomainRangePop(domain);

    nvtxEventAttributes_t ascii;
    memset(&ascii, 0, sizeof ascii);
    ascii.version = NVTX_VERSION;
    ascii.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    ascii.messageType = NVTX_MESSAGE_TYPE_ASCII;
    ascii.message.ascii = "ex-range";
    nvtxRangePushEx(&ascii);
    nvtxRangePushW(L"wide-\u00fc");
    CHECK(cudaMalloc(&m[4], 600));
    nvtxRangePop();
    nvtxRangePop();

    struct nvtx_worker w = {.cross = nvtxRangeStartA("cross-thread")};
    pthread_t t;
    if (pthread_create(&t, NULL, nvtx_worker_main, &w) != 0 || pthread_join(t, NULL) != 0)
        return 71;
    printf("worker_tid=%llu\n", w.tid);
    CHECK(cudaFree(w.mem));
    CHECK(cudaFree(m[0]));
    CHECK(cudaFree(m[3]));
    CHECK(cudaFree(m[4]));
    CHECK(cudaFree(counter));
    return 0;
}

/* ---- explicit API ---------------------------------------------------------------------------- */

enum { EXPLICIT_THREADS = 4, EXPLICIT_ALLOCS = 3 };
static pthread_barrier_t explicit_barrier;

static void *explicit_worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    char outer[64], inner[64];
    snprintf(outer, sizeof outer, "/worker/%d", i);
    snprintf(inner, sizeof inner, "/worker/%d/inner", i);
    void *m[EXPLICIT_ALLOCS + 1];
    pthread_barrier_wait(&explicit_barrier); /* all threads inside their nodes at once */
    wstrace_node_push(outer);
    for (int k = 0; k < EXPLICIT_ALLOCS; k++)
        CHECK(cudaMalloc(&m[k], (size_t)(1000 + i)));
    wstrace_node_push(inner);
    CHECK(cudaMalloc(&m[EXPLICIT_ALLOCS], (size_t)(10 + i)));
    pthread_barrier_wait(&explicit_barrier);
    wstrace_node_pop();
    wstrace_node_pop();
    for (int k = 0; k <= EXPLICIT_ALLOCS; k++)
        CHECK(cudaFree(m[k]));
    return NULL;
}

static int mode_explicit(void)
{
    printf("active=%d\n", wstrace_active());
    wstrace_metadata("model", "tiny-llm");
    wstrace_metadata("model", "tiny-llm-v2"); /* the last value wins */
    wstrace_metadata("batch", "4");
    wstrace_estimate_workspace("/model/matmul", 0, 1048576);
    static char long_name[5000 + 1]; /* longer than a string may be: truncated and counted */
    memset(long_name, 'n', sizeof long_name - 1);
    wstrace_node_push(long_name);
    wstrace_node_pop();

    static const char *const keys[] = {"batch=4,seq=128", "batch=4,seq=128", "batch=4,seq=256"};
    for (int run = 0; run < 3; run++) {
        void *act, *ws;
        wstrace_run_begin(keys[run]);
        wstrace_node_push("/model/layer0");
        CHECK(cudaMalloc(&act, (size_t)(1024 * (run + 1))));
        wstrace_node_push("/model/matmul");
        if (run == 0) {
            wstrace_declare_workspace("/model/matmul", 0, 786432, 256);
            wstrace_declare_workspace("/model/matmul", 1, 4096, 0);
        }
        CHECK(cudaMalloc(&ws, 64));
        CHECK(cudaFree(ws));
        wstrace_node_pop();
        wstrace_node_pop();
        CHECK(cudaFree(act));
        wstrace_run_end();
    }

    pthread_t t[EXPLICIT_THREADS];
    pthread_barrier_init(&explicit_barrier, NULL, EXPLICIT_THREADS);
    for (int i = 0; i < EXPLICIT_THREADS; i++)
        if (pthread_create(&t[i], NULL, explicit_worker, (void *)(intptr_t)i) != 0)
            return 71;
    for (int i = 0; i < EXPLICIT_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&explicit_barrier);
    return 0;
}

/* ---- errors: every result the program sees, printed so that runs can be compared ---------------- */

#define SEE(label, call)                                                                                               \
    do {                                                                                                               \
        errno = 4242;                                                                                                  \
        int rc_ = (int)(call);                                                                                         \
        int errno_ = errno;                                                                                            \
        printf("%s rc=%d errno=%d\n", label, rc_, errno_);                                                             \
    } while (0)

static int mode_errors(void)
{
    void *ok = NULL, *big = (void *)(uintptr_t)0x5a5a, *async_big = (void *)(uintptr_t)0x5a5a, *managed = NULL;
    cudaStream_t s;
    SEE("stream_create", cudaStreamCreate(&s));
    SEE("malloc_ok", cudaMalloc(&ok, 512 * 1024));
    SEE("malloc_too_big", cudaMalloc(&big, 2 * 1024 * 1024));
    printf("big_after=%llx\n", (unsigned long long)(uintptr_t)big);
    SEE("malloc_async_too_big", cudaMallocAsync(&async_big, 3 * 1024 * 1024, s));
    printf("async_big_after=%llx\n", (unsigned long long)(uintptr_t)async_big);
    SEE("managed_bad_flags", cudaMallocManaged(&managed, 100, 0x77));
    SEE("free_unknown", cudaFree((void *)(uintptr_t)0x20));
    SEE("free_ok", cudaFree(ok));
    SEE("free_twice", cudaFree(ok));
    int counter = 0, *pc = &counter;
    void *args[] = {&pc};
    SEE("launch_bad_grid",
        cudaLaunchKernel((const void *)trace_kernel_scale, (dim3){0, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
    SEE("last_error", cudaGetLastError());
    SEE("stream_destroy", cudaStreamDestroy(s));
    printf("ok_nonnull=%d\n", ok != NULL);
    return 0;
}

/* ---- stress ---------------------------------------------------------------------------------- */

static int stress_pairs;

static void *stress_worker(void *arg)
{
    size_t bytes = 256 + (size_t)(intptr_t)arg;
    for (int i = 0; i < stress_pairs; i++) {
        void *p;
        CHECK(cudaMalloc(&p, bytes));
        CHECK(cudaFree(p));
    }
    return NULL;
}

static int mode_stress(int threads, int pairs)
{
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        return 64;
    stress_pairs = pairs;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, stress_worker, (void *)(intptr_t)i) != 0)
            return 71;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    struct wssim_stats st;
    wssim_get_stats(&st);
    printf("alloc_calls=%llu\nfree_calls=%llu\npeak_bytes=%llu\n", (unsigned long long)st.alloc_calls,
           (unsigned long long)st.free_calls, (unsigned long long)st.peak_bytes);
    return 0;
}

/* ---- waves: all allocate, all wait, each frees its neighbour's blocks ------------------------- */

enum { WAVES_MAX_THREADS = 64, WAVES_MAX_BLOCKS = 16 };
static int waves_threads, waves_rounds, waves_blocks;
static void *waves_mem[WAVES_MAX_THREADS][WAVES_MAX_BLOCKS];
static pthread_barrier_t waves_barrier;

static void *waves_worker(void *arg)
{
    int me = (int)(intptr_t)arg, next = (me + 1) % waves_threads;
    for (int round = 0; round < waves_rounds; round++) {
        for (int k = 0; k < waves_blocks; k++)
            CHECK(cudaMalloc(&waves_mem[me][k], (size_t)(512 + 8 * (me * waves_blocks + k) + round)));
        pthread_barrier_wait(&waves_barrier);
        for (int k = 0; k < waves_blocks; k++)
            CHECK(cudaFree(waves_mem[next][k]));
        pthread_barrier_wait(&waves_barrier);
    }
    return NULL;
}

static int mode_waves(int threads, int rounds, int blocks)
{
    pthread_t t[WAVES_MAX_THREADS];
    if (threads < 2 || threads > WAVES_MAX_THREADS || blocks < 1 || blocks > WAVES_MAX_BLOCKS || rounds < 1)
        return 64;
    waves_threads = threads, waves_rounds = rounds, waves_blocks = blocks;
    pthread_barrier_init(&waves_barrier, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, waves_worker, (void *)(intptr_t)i) != 0)
            return 71;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&waves_barrier);
    struct wssim_stats st;
    wssim_get_stats(&st);
    printf("alloc_calls=%llu\nfree_calls=%llu\npeak_bytes=%llu\n", (unsigned long long)st.alloc_calls,
           (unsigned long long)st.free_calls, (unsigned long long)st.peak_bytes);
    return 0;
}

/* ---- count: a progress counter that survives a SIGKILL --------------------------------------- */

static int mode_count(long long n, const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 8) != 0)
        return 77;
    volatile uint64_t *done = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (done == MAP_FAILED)
        return 77;
    close(fd);
    for (long long i = 0; n == 0 || i < n; i++) {
        void *p;
        CHECK(cudaMalloc(&p, (size_t)(64 + i % 4096)));
        CHECK(cudaFree(p));
        *done = (uint64_t)(i + 1);
    }
    printf("pairs=%lld\n", n);
    return 0;
}

/* ---- children that leave through _exit, fork storms -------------------------------------------- */

static int mode_fork_exit(int n)
{
    pid_t child[64];
    if (n < 1 || n > 64)
        return 64;
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        child[i] = fork();
        if (child[i] < 0)
            return 72;
        if (child[i] == 0) {
            for (int k = 0; k <= i; k++) {
                void *p;
                CHECK(cudaMalloc(&p, (size_t)(300 + i)));
            }
            _exit(0);
        }
    }
    for (int i = 0; i < n; i++) {
        int status;
        if (waitpid(child[i], &status, 0) != child[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 73;
        printf("child%d=%ld\n", i, (long)child[i]);
    }
    return 0;
}

static int forkstorm(int depth, int width)
{
    void *p, *q;
    CHECK(cudaMalloc(&p, 1000));
    CHECK(cudaMalloc(&q, 2000));
    CHECK(cudaFree(p));
    int failed = 0;
    if (depth > 0) {
        pid_t child[16];
        int n = 0;
        fflush(stdout);
        for (int i = 0; i < width && i < 16; i++) {
            pid_t c = fork();
            if (c == 0) {
                int rc = forkstorm(depth - 1, width);
                fflush(stdout);
                if (i % 2)
                    _exit(rc);
                exit(rc);
            }
            if (c < 0)
                failed = 1;
            else
                child[n++] = c;
        }
        for (int i = 0; i < n; i++) {
            int status;
            if (waitpid(child[i], &status, 0) != child[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                failed = 1;
        }
    }
    return failed ? 73 : 0;
}

/* ---- names that are not plain ASCII -------------------------------------------------------------- */

static int mode_names(void)
{
    /* 5000 bytes of 'e' with an acute accent (two bytes each) after one ASCII byte: the limit of
     * 4096 bytes falls inside a character, so the stored name has 4095 bytes. */
    static char accents[1 + 5000 + 1];
    accents[0] = 'x';
    for (int i = 0; i < 2500; i++)
        memcpy(accents + 1 + 2 * i, "\xc3\xa9", 2);
    void *p;
    wstrace_run_begin("shape\xff|\r\nkey"); /* a shape key that is not UTF-8 either */
    wstrace_node_push(accents);
    CHECK(cudaMalloc(&p, 111));
    CHECK(cudaFree(p));
    wstrace_node_pop();
    /* Bytes that are not UTF-8, and a line break with a table separator (Markdown). */
    wstrace_node_push("/bad\xff\xfe|name\r\nnext");
    CHECK(cudaMalloc(&p, 222));
    CHECK(cudaFree(p));
    wstrace_node_pop();
    /* A lone surrogate, and a pair that stands for U+1F600. */
    static const wchar_t lone[] = {L'w', 0xD800, L'!', 0};
    static const wchar_t pair[] = {L'p', 0xD83D, 0xDE00, 0};
    nvtxRangePushW(lone);
    CHECK(cudaMalloc(&p, 333));
    CHECK(cudaFree(p));
    nvtxRangePop();
    nvtxRangePushW(pair);
    CHECK(cudaMalloc(&p, 444));
    CHECK(cudaFree(p));
    nvtxRangePop();
    /* 3000 wide characters of two UTF-8 bytes each: more than the limit once converted. */
    static wchar_t wide[3001];
    for (int i = 0; i < 3000; i++)
        wide[i] = 0xE9;
    nvtxRangePushW(wide);
    CHECK(cudaMalloc(&p, 555));
    CHECK(cudaFree(p));
    nvtxRangePop();
    wstrace_run_end();
    return 0;
}

/* ---- fsize: run a mode under a file size limit ----------------------------------------------------- */

static int mode_fsize(long long bytes, char **argv)
{
    struct rlimit rl = {(rlim_t)bytes, (rlim_t)bytes};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 78;
    fflush(stdout);
    execv("/proc/self/exe", argv);
    return 74;
}

/* ---- fork, exec, kill ------------------------------------------------------------------------- */

static int mode_fork(void)
{
    void *p[4];
    int counter = 0, *counter_ptr = &counter;
    void *args[] = {&counter_ptr};
    CHECK(cudaMalloc(&p[0], 111));
    CHECK(cudaMalloc(&p[1], 111));
    CHECK(cudaFree(p[1]));
    /* launched before the fork and again in the child: both traces must name it */
    CHECK(cudaLaunchKernel((const void *)trace_kernel_scale, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 72;
    if (child == 0) {
        void *q[3];
        for (int i = 0; i < 3; i++)
            CHECK(cudaMalloc(&q[i], 222));
        CHECK(cudaFree(q[0]));
        CHECK(cudaFree(p[0])); /* allocated by the parent before the fork: freed in the child */
        CHECK(cudaLaunchKernel((const void *)trace_kernel_scale, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
        exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 73;
    CHECK(cudaMalloc(&p[2], 333));
    CHECK(cudaFree(p[2]));
    printf("parent=%ld\nchild=%ld\n", (long)getpid(), (long)child);
    return 0;
}

static int mode_exec(void)
{
    const char *self = "/proc/self/exe";
    void *p;
    nvtxRangePushA("first-image");
    CHECK(cudaMalloc(&p, 1111));
    nvtxRangePop();
    printf("pid=%ld\n", (long)getpid());
    fflush(stdout);
    execl(self, self, "exec-second", (char *)NULL);
    return 74;
}

static int mode_exec_second(void)
{
    void *p, *q;
    nvtxRangePushA("second-image");
    CHECK(cudaMalloc(&p, 2222));
    CHECK(cudaMalloc(&q, 3333));
    CHECK(cudaFree(q));
    nvtxRangePop();
    printf("second_pid=%ld\n", (long)getpid());
    return 0;
}

/* fork + exec, as a program starts another program. */
static int mode_spawn(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 1111));
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 72;
    if (child == 0) {
        execl("/proc/self/exe", "trace_prog", "exec-second", (char *)NULL);
        _exit(74);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 73;
    CHECK(cudaFree(p));
    printf("child=%ld\n", (long)child);
    return 0;
}

static int mode_kill(int n)
{
    for (int i = 0; i < n; i++) {
        void *p;
        CHECK(cudaMalloc(&p, (size_t)(100 + i)));
    }
    printf("allocated=%d\n", n);
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 75;
}

/* ---- nvcc ---------------------------------------------------------------------------------- */

static int mode_nvcc(void)
{
    float *data;
    int n = 4;
    float factor = 3.0f;
    CHECK(cudaMallocManaged((void **)&data, (size_t)n * sizeof *data, cudaMemAttachGlobal));
    for (int i = 0; i < n; i++)
        data[i] = (float)(i + 1);
    /* What the host stub of nvcc_scaler<<<grid, block>>>(data, n, factor) does. */
    cudaKernel_t handle = NULL;
    CHECK(__cudaGetKernel(&handle, (const void *)trace_nvcc_stub));
    void *args[] = {&data, &n, &factor};
    for (int i = 0; i < 2; i++) {
        dim3 grid, block;
        size_t smem;
        cudaStream_t stream;
        __cudaPushCallConfiguration((dim3){3, 1, 1}, (dim3){128, 1, 1}, 64, NULL);
        CHECK(__cudaPopCallConfiguration(&grid, &block, &smem, &stream));
        CHECK(__cudaLaunchKernel(handle, grid, block, args, smem, stream));
    }
    /* An older toolkit's stub launches through cudaLaunchKernel with the stub itself. */
    CHECK(cudaLaunchKernel((const void *)trace_nvcc_stub, (dim3){1, 1, 1}, (dim3){4, 1, 1}, args, 0, NULL));
    CHECK(cudaDeviceSynchronize());
    printf("data=%g,%g,%g,%g\n", data[0], data[1], data[2], data[3]);
    CHECK(cudaFree(data));
    return 0;
}

/* ---- chdir: the working folder changes before the process exits ---- */

static int mode_chdir(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4321));
    CHECK(cudaFree(p));
    if (chdir("/") != 0)
        return 76;
    return 0;
}

/* ---- plain ----------------------------------------------------------------------------------- */

static int mode_plain(int code)
{
    void *p;
    printf("plain start\n");
    nvtxRangePushA("plain-node");
    cudaError_t rc = cudaMalloc(&p, 4096);
    printf("malloc rc=%d\n", (int)rc);
    if (rc == cudaSuccess)
        printf("free rc=%d\n", (int)cudaFree(p));
    nvtxRangePop();
    printf("plain end\n");
    return code;
}

static int run_mode(int argc, char **argv);

static int mode_gated(const char *dir, int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ready.%ld", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return 79;
    close(fd);
    snprintf(path, sizeof path, "%s/go", dir);
    for (int i = 0; access(path, F_OK) != 0; i++) {
        if (i == 600000)
            return 79; /* ten minutes without the go */
        usleep(1000);
    }
    return run_mode(argc, argv);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    return run_mode(argc, argv);
}

static int run_mode(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(mode, "apis"))
        rc = mode_apis();
    else if (!strcmp(mode, "nvtx"))
        rc = mode_nvtx();
    else if (!strcmp(mode, "explicit"))
        rc = mode_explicit();
    else if (!strcmp(mode, "errors"))
        rc = mode_errors();
    else if (!strcmp(mode, "stress") && argc == 4)
        rc = mode_stress(atoi(argv[2]), atoi(argv[3]));
    else if (!strcmp(mode, "fork"))
        rc = mode_fork();
    else if (!strcmp(mode, "exec"))
        rc = mode_exec();
    else if (!strcmp(mode, "exec-second"))
        rc = mode_exec_second();
    else if (!strcmp(mode, "spawn"))
        rc = mode_spawn();
    else if (!strcmp(mode, "kill") && argc == 3)
        rc = mode_kill(atoi(argv[2]));
    else if (!strcmp(mode, "nvcc"))
        rc = mode_nvcc();
    else if (!strcmp(mode, "chdir"))
        rc = mode_chdir();
    else if (!strcmp(mode, "plain") && argc == 3)
        rc = mode_plain(atoi(argv[2]));
    else if (!strcmp(mode, "waves") && argc == 5)
        rc = mode_waves(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    else if (!strcmp(mode, "count") && argc == 4)
        rc = mode_count(atoll(argv[2]), argv[3]);
    else if (!strcmp(mode, "fork-exit") && argc == 3)
        rc = mode_fork_exit(atoi(argv[2]));
    else if (!strcmp(mode, "forkstorm") && argc == 4)
        rc = forkstorm(atoi(argv[2]), atoi(argv[3]));
    else if (!strcmp(mode, "names"))
        rc = mode_names();
    else if (!strcmp(mode, "fsize") && argc >= 4)
        rc = mode_fsize(atoll(argv[2]), argv + 2);
    else if (!strcmp(mode, "gated") && argc >= 4)
        rc = mode_gated(argv[2], argc - 2, argv + 2);
    else {
        fprintf(stderr, "usage: trace_prog MODE [ARGS]\n");
        rc = 64;
    }
    return rc;
}
