/* A runtime program (the toolkit's libcudart.so, and the driver through the libcuda.so stub) run on
 * the simulated device, for the tracer's record path.  One scenario per argv[1]:
 *   handoff N SEED  thread A makes N cudaMallocs of the sizes record_next_size gives from SEED and
 *                   hands each pointer through a mutex-protected queue to thread B, which frees it;
 *                   prints mallocs=, frees=, sum=
 *   loop FD         cudaMalloc and cudaFree of record_loop_size(k) bytes for k = 0, 1, ... without
 *                   end; writes one byte to FD after the first 100 pairs (the test then kills it)
 *   errno           sets errno to a sentinel before each of cudaMalloc (one that succeeds, one
 *                   that fails), cudaFree, cudaLaunchKernel, cuMemAlloc_v2, cuMemFree_v2 and
 *                   cuLaunchKernel, and checks it is unchanged after; prints how many of each it
 *                   made and exits 3 when errno changed
 * Any call that fails unexpectedly exits 1. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "record_sizes.h"

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "record_prog: %s\n", what);
        failures++;
    }
}

#define CHECK(call) check((call) == 0, #call)

/* ---- handoff ---------------------------------------------------------------------------------- */

#define QUEUE_CAP 256

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    void *items[QUEUE_CAP];
    unsigned head, count, done;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0};

static void queue_put(void *p)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.count == QUEUE_CAP)
        pthread_cond_wait(&queue.changed, &queue.lock);
    queue.items[(queue.head + queue.count++) % QUEUE_CAP] = p;
    pthread_cond_broadcast(&queue.changed);
    pthread_mutex_unlock(&queue.lock);
}

/* The next pointer, or 0 (and *p untouched) once the producer is done and the queue is empty. */
static int queue_get(void **p)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.count == 0 && !queue.done)
        pthread_cond_wait(&queue.changed, &queue.lock);
    int got = queue.count > 0;
    if (got) {
        *p = queue.items[queue.head];
        queue.head = (queue.head + 1) % QUEUE_CAP;
        queue.count--;
        pthread_cond_broadcast(&queue.changed);
    }
    pthread_mutex_unlock(&queue.lock);
    return got;
}

static unsigned long frees;

static void *freer(void *arg)
{
    (void)arg;
    void *p;
    while (queue_get(&p)) {
        CHECK(cudaFree(p));
        frees++;
    }
    return NULL;
}

static void handoff(unsigned long n, uint64_t seed)
{
    CHECK(cudaFree(NULL)); /* the context, before either thread allocates */
    pthread_t b;
    if (pthread_create(&b, NULL, freer, NULL) != 0) {
        fprintf(stderr, "record_prog: pthread_create failed\n");
        exit(1);
    }
    uint64_t state = seed;
    unsigned long long sum = 0;
    unsigned long mallocs = 0;
    for (unsigned long k = 0; k < n; k++) {
        size_t size = record_next_size(&state);
        void *p = NULL;
        if (cudaMalloc(&p, size) != cudaSuccess || !p) {
            check(0, "cudaMalloc");
            break;
        }
        mallocs++;
        sum += size;
        queue_put(p);
    }
    pthread_mutex_lock(&queue.lock);
    queue.done = 1;
    pthread_cond_broadcast(&queue.changed);
    pthread_mutex_unlock(&queue.lock);
    pthread_join(b, NULL);
    printf("mallocs=%lu\nfrees=%lu\nsum=%llu\n", mallocs, frees, sum);
}

/* ---- loop ------------------------------------------------------------------------------------- */

static void loop(int fd)
{
    for (uint64_t k = 0;; k++) {
        void *p = NULL;
        if (cudaMalloc(&p, record_loop_size(k)) != cudaSuccess || cudaFree(p) != cudaSuccess) {
            fprintf(stderr, "record_prog: allocation %llu failed\n", (unsigned long long)k);
            exit(1);
        }
        if (k == 99) {
            char c = 'g';
            if (write(fd, &c, 1) != 1) {
                fprintf(stderr, "record_prog: cannot write to fd %d\n", fd);
                exit(1);
            }
        }
    }
}

/* ---- errno ------------------------------------------------------------------------------------ */

#define SENTINEL 4242

static int errno_changed;

/* Runs `call` with errno at the sentinel; counts a change. */
#define KEEPS_ERRNO(call)                                                                                              \
    do {                                                                                                               \
        errno = SENTINEL;                                                                                              \
        call;                                                                                                          \
        if (errno != SENTINEL) {                                                                                       \
            fprintf(stderr, "record_prog: errno %d after %s\n", errno, #call);                                         \
            errno_changed++;                                                                                           \
        }                                                                                                              \
    } while (0)

static void add_one(void **args)
{
    unsigned char *p = *(unsigned char **)args[0];
    p[0]++;
}

static void touch(void **args)
{
    unsigned char *p = (unsigned char *)*(CUdeviceptr *)args[0];
    p[0]++;
}

#define ROUNDS 3

static void keeps_errno(void)
{
    unsigned mallocs = 0, failed = 0, cfrees = 0, launches = 0, allocs = 0, dfrees = 0, dlaunches = 0;
    cudaError_t rc = cudaSuccess;
    CUresult cr = CUDA_SUCCESS;
    CHECK(cudaFree(NULL)); /* the context */
    /* the driver's kernel, as driver_prog makes it */
    int (*reg)(const char *, void (*)(void **), unsigned, const size_t *) =
        (int (*)(const char *, void (*)(void **), unsigned, const size_t *))dlsym(RTLD_DEFAULT,
                                                                                  "wssim_register_host_kernel_params");
    static const size_t sizes[] = {sizeof(CUdeviceptr)};
    check(reg && reg("touch_kernel", touch, 1, sizes) == 0, "register touch_kernel");
    CUcontext ctx;
    CUmodule mod;
    CUfunction f = NULL;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, "a module image"));
    CHECK(cuModuleGetFunction(&f, mod, "touch_kernel"));
    dim3 one = {1, 1, 1};
    for (int i = 0; i < ROUNDS; i++) {
        void *p = NULL, *big = NULL;
        KEEPS_ERRNO(rc = cudaMalloc(&p, 4096 + (size_t)i));
        CHECK(rc), mallocs++;
        KEEPS_ERRNO(rc = cudaMalloc(&big, (size_t)1 << 62)); /* more than any device has */
        check(rc != cudaSuccess, "a cudaMalloc of 2^62 bytes succeeded"), failed++;
        void *args[] = {&p};
        KEEPS_ERRNO(rc = cudaLaunchKernel((const void *)add_one, one, one, args, 0, NULL));
        CHECK(rc), launches++;
        CHECK(cudaDeviceSynchronize());
        KEEPS_ERRNO(rc = cudaFree(p));
        CHECK(rc), cfrees++;
        CUdeviceptr d = 0;
        KEEPS_ERRNO(cr = cuMemAlloc(&d, 8192 + (size_t)i));
        CHECK(cr), allocs++;
        void *params[] = {&d};
        KEEPS_ERRNO(cr = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CHECK(cr), dlaunches++;
        CHECK(cuCtxSynchronize());
        KEEPS_ERRNO(cr = cuMemFree(d));
        CHECK(cr), dfrees++;
    }
    printf("cudaMalloc=%u\nfailed=%u\ncudaFree=%u\ncudaLaunchKernel=%u\ncuMemAlloc_v2=%u\ncuMemFree_v2=%u\n"
           "cuLaunchKernel=%u\nerrno_changed=%d\n",
           mallocs, failed, cfrees, launches, allocs, dfrees, dlaunches, errno_changed);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "handoff") == 0)
        handoff(strtoul(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    else if (argc == 3 && strcmp(argv[1], "loop") == 0)
        loop(atoi(argv[2]));
    else if (argc == 2 && strcmp(argv[1], "errno") == 0)
        keeps_errno();
    else {
        fprintf(stderr, "usage: record_prog handoff N SEED | loop FD | errno\n");
        return 2;
    }
    if (failures)
        return 1;
    return errno_changed ? 3 : 0;
}
