/* A runtime program linked against the toolkit's libcudart.so, run on the simulated cudart: the
 * stream patterns of programs that overlap work on several streams.  It prints what it did as
 * "key=value" lines and exits 0 only when every call succeeded.
 *   First cudaSetDevice, which since CUDA 12.0 leaves the primary context current: a driver
 *   call right after it (cuCtxGetCurrent, fetched with cudaGetDriverEntryPointByVersion) finds it.
 *   Then WORKERS threads each create a stream, allocate, launch LAUNCHES kernels on it, set and read
 *   back an access policy window, reset the persisting L2 lines and destroy the stream, one after
 *   the other (a destroyed stream's handle may be given out again by a careless device; here
 *   each worker's stream must stay its own); then two streams of the lowest and highest
 *   priority launch one kernel each. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

enum { WORKERS = 6, LAUNCHES = 3, BYTES = 4096 };

static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *what)
{
    if (!ok) {
        pthread_mutex_lock(&lock);
        fprintf(stderr, "streams_prog: %s\n", what);
        failures++;
        pthread_mutex_unlock(&lock);
    }
}

#define CHECK(call) check((call) == 0, #call)

static void touch(void **args) { (void)args; }

struct worker {
    pthread_t thread;
    uintptr_t stream; /* the handle it had, printed */
};

static void *work(void *arg)
{
    struct worker *w = arg;
    cudaStream_t s;
    void *p = NULL;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    w->stream = (uintptr_t)s;
    CHECK(cudaMalloc(&p, BYTES));
    cudaStreamAttrValue v, got;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.base_ptr = p;
    v.accessPolicyWindow.num_bytes = BYTES;
    v.accessPolicyWindow.hitRatio = 0.5f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    memset(&got, 0, sizeof got);
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
    check(got.accessPolicyWindow.base_ptr == p && got.accessPolicyWindow.num_bytes == BYTES,
          "the access policy window reads back");
    void *args[] = {&p};
    dim3 one = {1, 1, 1};
    for (int i = 0; i < LAUNCHES; i++)
        CHECK(cudaLaunchKernel((const void *)touch, one, one, args, 0, s));
    CHECK(cudaStreamSynchronize(s));
    v.accessPolicyWindow.num_bytes = 0; /* the window off again, its lines back to normal */
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    CHECK(cudaCtxResetPersistingL2Cache());
    CHECK(cudaFree(p));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(void)
{
    CHECK(cudaSetDevice(0));
    CUresult (*get_current)(CUcontext *) = NULL;
    enum cudaDriverEntryPointQueryResult found;
    CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", (void **)&get_current, 4000, cudaEnableDefault, &found));
    CUcontext ctx = NULL;
    check(get_current && get_current(&ctx) == CUDA_SUCCESS && ctx != NULL, "a context is current after cudaSetDevice");
    struct worker w[WORKERS];
    for (int i = 0; i < WORKERS; i++) { /* one after the other: each destroys before the next creates */
        check(pthread_create(&w[i].thread, NULL, work, &w[i]) == 0, "pthread_create");
        pthread_join(w[i].thread, NULL);
    }
    int least = 0, greatest = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t low, high;
    CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
    CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
    cudaStreamAttrValue prio;
    CHECK(cudaStreamGetAttribute(high, cudaStreamAttributePriority, &prio));
    check(prio.priority == greatest, "the priority attribute is the stream's priority");
    void *p = NULL;
    CHECK(cudaMalloc(&p, BYTES));
    void *args[] = {&p};
    dim3 one = {1, 1, 1};
    CHECK(cudaLaunchKernel((const void *)touch, one, one, args, 0, low));
    CHECK(cudaLaunchKernel((const void *)touch, one, one, args, 0, high));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(p));
    CHECK(cudaStreamDestroy(low));
    CHECK(cudaStreamDestroy(high));
    printf("context_after_set_device=%d\n", ctx != NULL);
    printf("workers=%d\nlaunches_per_worker=%d\nmallocs=%d\npriority_launches=2\n", WORKERS, LAUNCHES, WORKERS + 1);
    for (int i = 0; i < WORKERS; i++)
        printf("stream%d=%llu\n", i, (unsigned long long)w[i].stream);
    return failures ? 1 : 0;
}
