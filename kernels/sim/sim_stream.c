/* Streams and events. Work runs synchronously on the calling thread, so a stream is only a handle
 * to validate, synchronisation is immediate, and an event is a timestamp.  While a stream captures
 * (sim_capture.c), recording and waiting on events make it fork and join instead. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "sim_internal.h"

/* The attributes a stream keeps (cudaStreamSetAttribute: the launch attributes "valid for
 * streams"); the priority is the stream's own. */
static const cudaStreamAttrID stream_attrs[] = {cudaLaunchAttributeAccessPolicyWindow,
                                                cudaLaunchAttributeSynchronizationPolicy,
                                                cudaLaunchAttributeMemSyncDomainMap, cudaLaunchAttributeMemSyncDomain,
                                                cudaLaunchAttributeNvlinkUtilCentricScheduling};
enum { STREAM_ATTRS = sizeof stream_attrs / sizeof stream_attrs[0] };

struct sim_stream {
    unsigned flags;
    int priority;
    cudaStreamAttrValue attrs[STREAM_ATTRS]; /* zero until set: the defaults */
};

/* The default streams (legacy and per-thread) share one set of attributes. */
static struct sim_stream default_stream;

struct sim_event {
    unsigned flags;
    int recorded;
    struct timespec when;
};

/*
 * Handles of streams and events are not the addresses of their state, which malloc hands out
 * again once freed: they are tokens in an address range reserved for them (never readable, as
 * opaque as a driver's), given out in order and not reused while the range lasts (2^26 of them),
 * so a stream created after another was destroyed never has its handle.  A trace names streams
 * by handle (allocations.stream, launches.stream), so reusing one would make two streams one.
 * After the range wraps, tokens still in use are skipped.  Without the range (mmap failed) the
 * state's address is the handle, as before.  Called with sim_lock held.
 */
enum { TOKEN_RANGE = 1 << 30, TOKEN_STEP = 16 };
static char *token_base;
static uintptr_t token_next;
static int token_tried;

static void *new_token(void *state)
{
    if (!token_tried) {
        token_tried = 1;
        void *p = mmap(NULL, TOKEN_RANGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        token_base = p == MAP_FAILED ? NULL : p;
    }
    if (!token_base)
        return state;
    for (uintptr_t tries = 0; tries < TOKEN_RANGE / TOKEN_STEP; tries++) {
        void *t = token_base + token_next;
        token_next = (token_next + TOKEN_STEP) % TOKEN_RANGE;
        if (!sim_table_get(t))
            return t;
    }
    return state; /* 2^26 live handles: not reached */
}

/* The state behind a handle of a kind, or NULL; called with sim_lock held. */
static void *state_of(const void *handle, enum sim_kind kind)
{
    struct sim_entry *e = handle ? sim_table_get(handle) : NULL;
    return e && e->kind == kind ? e->data : NULL;
}

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

/* Registers freshly allocated state under a new handle; frees it and reports out-of-memory
 * when that fails. */
static cudaError_t register_handle(void *state, enum sim_kind kind, void **handle)
{
    if (!state)
        return sim_result(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&sim_lock);
    void *h = new_token(state);
    int rc = sim_table_put(h, kind, 0, state);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(state);
        return sim_result(cudaErrorMemoryAllocation);
    }
    *handle = h;
    return cudaSuccess;
}

/* Unregisters a handle of the given kind and frees its state; an unknown handle fails with
 * unknown_err. */
static cudaError_t destroy_handle(void *handle, enum sim_kind kind, cudaError_t unknown_err)
{
    pthread_mutex_lock(&sim_lock);
    void *state = state_of(handle, kind);
    if (state)
        sim_table_del(handle);
    pthread_mutex_unlock(&sim_lock);
    if (!state)
        return sim_result(unknown_err);
    free(state);
    return cudaSuccess;
}

/* Priorities: 0 (lowest, the default) to -5 (highest); others are clamped, as on a GPU. */
enum { LEAST_PRIORITY = 0, GREATEST_PRIORITY = -5 };

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
        return sim_result(cudaErrorInvalidValue);
    struct sim_stream *s = calloc(1, sizeof *s);
    if (s) {
        s->flags = flags;
        s->priority = priority > LEAST_PRIORITY      ? LEAST_PRIORITY
                      : priority < GREATEST_PRIORITY ? GREATEST_PRIORITY
                                                     : priority;
    }
    void *handle = NULL;
    cudaError_t err = register_handle(s, SIM_STREAM, &handle);
    if (err == cudaSuccess)
        *pStream = (cudaStream_t)handle;
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
    struct sim_stream *s = state_of(stream, SIM_STREAM);
    if (s) {
        *flags = s->flags;
        *priority = s->priority;
    }
    pthread_mutex_unlock(&sim_lock);
    return s ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

/* The state of a stream, the default streams' shared one included; called with sim_lock held. */
static struct sim_stream *stream_state(cudaStream_t stream)
{
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return &default_stream;
    return state_of(stream, SIM_STREAM);
}

static int attr_slot(cudaStreamAttrID attr)
{
    for (int i = 0; i < STREAM_ATTRS; i++)
        if (stream_attrs[i] == attr)
            return i;
    return -1;
}

/* The launch attributes valid for streams: kept as set (they change nothing here, work runs at
 * once) and read back; the priority is the stream's, clamped as at its creation.  Any other
 * attribute is cudaErrorInvalidValue, as on a GPU. */
cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, const cudaStreamAttrValue *value)
{
    int slot = attr_slot(attr);
    if (!value || (slot < 0 && attr != cudaLaunchAttributePriority))
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_stream *s = stream_state(hStream);
    if (s && slot >= 0)
        s->attrs[slot] = *value;
    else if (s)
        s->priority = value->priority > LEAST_PRIORITY      ? LEAST_PRIORITY
                      : value->priority < GREATEST_PRIORITY ? GREATEST_PRIORITY
                                                            : value->priority;
    pthread_mutex_unlock(&sim_lock);
    return s ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, cudaStreamAttrValue *value)
{
    int slot = attr_slot(attr);
    if (!value || (slot < 0 && attr != cudaLaunchAttributePriority))
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_stream *s = stream_state(hStream);
    if (s && slot >= 0) {
        *value = s->attrs[slot];
    } else if (s) {
        memset(value, 0, sizeof *value);
        value->priority = s->priority;
    }
    pthread_mutex_unlock(&sim_lock);
    return s ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

/* cudaStreamCopyAttributes: the attributes of src (its priority included) onto dst. */
cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_stream *d = stream_state(dst), *s = stream_state(src);
    if (d && s && d != s) {
        memcpy(d->attrs, s->attrs, sizeof d->attrs);
        d->priority = s->priority;
    }
    pthread_mutex_unlock(&sim_lock);
    return d && s ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
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
    void *handle = NULL;
    cudaError_t err = register_handle(e, SIM_EVENT, &handle);
    if (err == cudaSuccess)
        *event = (cudaEvent_t)handle;
    return err;
}

int sim_event_flags(cudaEvent_t event, unsigned *flags)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_event *e = state_of(event, SIM_EVENT);
    if (e)
        *flags = e->flags;
    pthread_mutex_unlock(&sim_lock);
    return e != NULL;
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
    struct sim_event *e = state_of(event, SIM_EVENT);
    if (e) {
        e->recorded = 1;
        e->when = now;
    }
    pthread_mutex_unlock(&sim_lock);
    return e ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
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
    const struct sim_event *sa = state_of(start, SIM_EVENT), *sb = state_of(end, SIM_EVENT);
    int known = sa && sb;
    struct sim_event a = known ? *sa : (struct sim_event){0};
    struct sim_event b = known ? *sb : (struct sim_event){0};
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
SIM_ALIAS(cudaStreamSetAttribute_ptsz, cudaStreamSetAttribute);
SIM_ALIAS(cudaStreamGetAttribute_ptsz, cudaStreamGetAttribute);
SIM_ALIAS(cudaStreamCopyAttributes_ptsz, cudaStreamCopyAttributes);
SIM_ALIAS(cudaStreamAddCallback_ptsz, cudaStreamAddCallback);
SIM_ALIAS(cudaStreamQuery_ptsz, cudaStreamQuery);
SIM_ALIAS(cudaEventRecord_ptsz, cudaEventRecord);
SIM_ALIAS(cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent);
