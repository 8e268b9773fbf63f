/* Streams and events. Work runs synchronously on the calling thread, so a stream is only a handle
 * to validate, synchronisation is immediate, and an event is a timestamp.  While a stream captures
 * (sim_capture.c), recording and waiting on events make it fork and join instead. */
#include <stdlib.h>
#include <time.h>

#include "sim_internal.h"

struct sim_stream {
    unsigned flags;
    int priority;
};

struct sim_event {
    unsigned flags;
    int recorded;
    struct timespec when;
};

/* Takes its own lock: callers validate before doing their work. */
int sim_stream_valid(cudaStream_t stream)
{
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return 1;
    pthread_mutex_lock(&sim_lock);
    int ok = sim_table_has(stream, SIM_STREAM);
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

/* Registers a freshly allocated handle; frees it and reports out-of-memory when that fails. */
static cudaError_t register_handle(void *handle, enum sim_kind kind)
{
    if (!handle)
        return sim_result(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(handle, kind, 0, handle);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(handle);
        return sim_result(cudaErrorMemoryAllocation);
    }
    return cudaSuccess;
}

/* Unregisters and frees a handle of the given kind; an unknown handle fails with unknown_err. */
static cudaError_t destroy_handle(void *handle, enum sim_kind kind, cudaError_t unknown_err)
{
    pthread_mutex_lock(&sim_lock);
    int known = handle && sim_table_has(handle, kind);
    if (known)
        sim_table_del(handle);
    pthread_mutex_unlock(&sim_lock);
    if (!known)
        return sim_result(unknown_err);
    free(handle);
    return cudaSuccess;
}

/* Priorities: 0 (lowest, the default) to -5 (highest); others are clamped, as on a GPU. */
enum { LEAST_PRIORITY = 0, GREATEST_PRIORITY = -5 };

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
        return sim_result(cudaErrorInvalidValue);
    struct sim_stream *s = malloc(sizeof *s);
    if (s) {
        s->flags = flags;
        s->priority = priority > LEAST_PRIORITY      ? LEAST_PRIORITY
                      : priority < GREATEST_PRIORITY ? GREATEST_PRIORITY
                                                     : priority;
    }
    cudaError_t err = register_handle(s, SIM_STREAM);
    if (err == cudaSuccess)
        *pStream = (cudaStream_t)s;
    return err;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, LEAST_PRIORITY);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return cudaStreamCreateWithFlags(pStream, cudaStreamDefault); }

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = LEAST_PRIORITY;
    if (greatestPriority)
        *greatestPriority = GREATEST_PRIORITY;
    return cudaSuccess;
}

/* The flags and the priority a stream was made with; the default streams have neither. */
static cudaError_t stream_info(cudaStream_t stream, unsigned *flags, int *priority)
{
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
        *flags = cudaStreamDefault;
        *priority = LEAST_PRIORITY;
        return cudaSuccess;
    }
    pthread_mutex_lock(&sim_lock);
    int ok = sim_table_has(stream, SIM_STREAM);
    if (ok) {
        *flags = ((struct sim_stream *)stream)->flags;
        *priority = ((struct sim_stream *)stream)->priority;
    }
    pthread_mutex_unlock(&sim_lock);
    return ok ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    int priority;
    if (!flags)
        return sim_result(cudaErrorInvalidValue);
    return stream_info(hStream, flags, &priority);
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    unsigned flags;
    if (!priority)
        return sim_result(cudaErrorInvalidValue);
    return stream_info(hStream, &flags, priority);
}

/* The callback runs at once, on the calling thread, with the stream's status (always success:
 * every earlier call on the stream has completed).  Callbacks cannot be captured. */
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags)
{
    if (!callback || flags != 0)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_CHECK(sim_capture_refuse(stream));
    callback(stream, cudaSuccess, userData);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    cudaError_t err = destroy_handle(stream, SIM_STREAM, cudaErrorInvalidResourceHandle);
    if (err == cudaSuccess && __atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE))
        sim_capture_forget_stream(stream);
    return err;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_SYNC(stream);
    sim_pools_synchronized();
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_SYNC(stream);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    SIM_CAPTURE_UNSAFE();
    sim_pools_synchronized();
    return cudaSuccess;
}

static cudaError_t check_event(cudaEvent_t event)
{
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(event, SIM_EVENT);
    pthread_mutex_unlock(&sim_lock);
    return known ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (!event || (flags & ~known) != 0)
        return sim_result(cudaErrorInvalidValue);
    struct sim_event *e = calloc(1, sizeof *e);
    if (e)
        e->flags = flags;
    cudaError_t err = register_handle(e, SIM_EVENT);
    if (err == cudaSuccess)
        *event = (cudaEvent_t)e;
    return err;
}

int sim_event_flags(cudaEvent_t event, unsigned *flags)
{
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(event, SIM_EVENT);
    if (known)
        *flags = ((struct sim_event *)event)->flags;
    pthread_mutex_unlock(&sim_lock);
    return known;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    cudaError_t err = destroy_handle(event, SIM_EVENT, cudaErrorInvalidResourceHandle);
    if (err == cudaSuccess && __atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE))
        sim_capture_forget_event(event);
    return err;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    if (check_event(event) != cudaSuccess)
        return cudaErrorInvalidResourceHandle;
    int captured = 0;
    cudaError_t err = cudaSuccess;
    if (__atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE))
        sim_capture_event_recorded(event, stream, &captured, &err);
    if (captured)
        return err == cudaSuccess ? cudaSuccess : sim_result(err);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(event, SIM_EVENT);
    if (known) {
        struct sim_event *e = (struct sim_event *)event;
        e->recorded = 1;
        e->when = now;
    }
    pthread_mutex_unlock(&sim_lock);
    return known ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    cudaError_t err = check_event(event);
    if (err == cudaSuccess)
        sim_pools_synchronized();
    return err;
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return check_event(event); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)flags;
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    cudaError_t err = check_event(event);
    if (err != cudaSuccess)
        return err;
    int captured = 0;
    if (__atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE))
        sim_capture_event_waited(stream, event, &captured, &err);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

/* Both events must exist, be recorded and keep timing data, as cudaEventElapsedTime documents. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(start, SIM_EVENT) && sim_table_has(end, SIM_EVENT);
    struct sim_event a = known ? *(struct sim_event *)start : (struct sim_event){0};
    struct sim_event b = known ? *(struct sim_event *)end : (struct sim_event){0};
    pthread_mutex_unlock(&sim_lock);
    if (!known || !a.recorded || !b.recorded)
        return sim_result(cudaErrorInvalidResourceHandle);
    if ((a.flags | b.flags) & cudaEventDisableTiming)
        return sim_result(cudaErrorInvalidResourceHandle);
    double delta = (double)(b.when.tv_sec - a.when.tv_sec) * 1e3 + (double)(b.when.tv_nsec - a.when.tv_nsec) / 1e6;
    *ms = (float)delta;
    return cudaSuccess;
}

SIM_ALIAS(cudaStreamSynchronize_ptsz, cudaStreamSynchronize);
SIM_ALIAS(cudaStreamGetFlags_ptsz, cudaStreamGetFlags);
SIM_ALIAS(cudaStreamGetPriority_ptsz, cudaStreamGetPriority);
SIM_ALIAS(cudaStreamAddCallback_ptsz, cudaStreamAddCallback);
SIM_ALIAS(cudaStreamQuery_ptsz, cudaStreamQuery);
SIM_ALIAS(cudaEventRecord_ptsz, cudaEventRecord);
SIM_ALIAS(cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent);
