/* Stream capture on the simulated device.
 *
 * While a stream captures, the stream-ordered calls made on it become nodes of the capture's
 * graph instead of running: each new node depends on the stream's current dependency set (the
 * nodes its last call made), which it then replaces.  Other streams join a capture by waiting on
 * an event recorded in a capturing stream, taking the event's dependency set; before the capture
 * ends they must be joined back into the origin stream (their last nodes must be ancestors of the
 * origin's), else cudaStreamEndCapture fails with cudaErrorStreamCaptureUnjoined.
 *
 * Capture modes decide which threads may make calls that synchronise implicitly (cudaMalloc,
 * cudaMemcpy, cudaDeviceSynchronize, ...) while a capture is under way: a thread whose own
 * interaction mode (cudaThreadExchangeStreamCaptureMode, global by default) forbids it gets
 * cudaErrorStreamCaptureUnsupported, and the captures that forbade it are invalidated.  A call
 * that fails inside a capture invalidates it too.  Not simulated: the implicit synchronisation of
 * the legacy stream with blocking capturing streams (cudaErrorStreamCaptureImplicit).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct capture {
    struct capture *next;
    unsigned long long id;
    enum cudaStreamCaptureMode mode;
    pthread_t thread; /* the thread that began it */
    struct sim_graph *graph;
    int invalidated;
    int into_user_graph; /* cudaStreamBeginCaptureToGraph: the graph is the program's */
};

/* A stream taking part in a capture.  cudaStreamPerThread is a different stream on every thread. */
struct member {
    struct member *next;
    cudaStream_t stream;
    pthread_t thread;
    struct capture *cap;
    int origin;
    struct sim_gnode **deps;
    size_t ndeps, depcap;
    cudaGraphEdgeData *edges; /* as many default edges as deps, for cudaStreamGetCaptureInfo */
};

/* An event recorded in a capturing stream: the dependency set a stream waiting on it joins with. */
struct recorded {
    struct recorded *next;
    cudaEvent_t event;
    struct capture *cap;
    struct sim_gnode **deps;
    size_t ndeps;
};

int sim_captures_active;
static struct capture *captures;
static struct member *members;
static struct recorded *recorded;
static unsigned long long last_id;
static _Thread_local enum cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

static int is_legacy(cudaStream_t stream) { return stream == NULL || stream == cudaStreamLegacy; }

static struct member *member_of(cudaStream_t stream)
{
    for (struct member *m = members; m; m = m->next)
        if (m->stream == stream && (stream != cudaStreamPerThread || pthread_equal(m->thread, pthread_self())))
            return m;
    return NULL;
}

static struct recorded *recorded_of(cudaEvent_t event)
{
    for (struct recorded *r = recorded; r; r = r->next)
        if (r->event == event)
            return r;
    return NULL;
}

static int set_deps(struct member *m, struct sim_gnode *const *deps, size_t n)
{
    if (n > m->depcap) {
        struct sim_gnode **d = realloc(m->deps, n * sizeof *d);
        cudaGraphEdgeData *e = d ? realloc(m->edges, n * sizeof *e) : NULL;
        if (d)
            m->deps = d;
        if (!e)
            return -1;
        m->edges = e;
        m->depcap = n;
        memset(m->edges, 0, n * sizeof *m->edges);
    }
    if (n)
        memmove(m->deps, deps, n * sizeof *deps);
    m->ndeps = n;
    return 0;
}

/* m's dependency set becomes its union with deps. */
static int add_deps(struct member *m, struct sim_gnode *const *deps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int have = 0;
        for (size_t k = 0; k < m->ndeps; k++)
            have |= m->deps[k] == deps[i];
        if (have)
            continue;
        if (m->ndeps == m->depcap) {
            size_t cap = m->depcap ? m->depcap * 2 : 4;
            struct sim_gnode **d = realloc(m->deps, cap * sizeof *d);
            cudaGraphEdgeData *e = d ? realloc(m->edges, cap * sizeof *e) : NULL;
            if (d)
                m->deps = d;
            if (!e)
                return -1;
            m->edges = e;
            memset(m->edges, 0, cap * sizeof *m->edges);
            m->depcap = cap;
        }
        m->deps[m->ndeps++] = deps[i];
    }
    return 0;
}

static struct member *member_new(cudaStream_t stream, struct capture *cap, int origin)
{
    struct member *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->stream = stream;
    m->thread = pthread_self();
    m->cap = cap;
    m->origin = origin;
    m->next = members;
    members = m;
    return m;
}

static void member_free(struct member *m)
{
    free(m->deps);
    free(m->edges);
    free(m);
}

static void forget_recorded(struct recorded *r)
{
    for (struct recorded **link = &recorded; *link; link = &(*link)->next)
        if (*link == r) {
            *link = r->next;
            break;
        }
    free(r->deps);
    free(r);
}

/* The capture ends: its streams leave it, its events no longer join anything. */
static void capture_end(struct capture *c)
{
    for (struct member **link = &members; *link;) {
        struct member *m = *link;
        if (m->cap == c) {
            *link = m->next;
            member_free(m);
        } else {
            link = &m->next;
        }
    }
    for (struct recorded *r = recorded, *next; r; r = next) {
        next = r->next;
        if (r->cap == c)
            forget_recorded(r);
    }
    for (struct capture **link = &captures; *link; link = &(*link)->next)
        if (*link == c) {
            *link = c->next;
            break;
        }
    free(c);
    __atomic_sub_fetch(&sim_captures_active, 1, __ATOMIC_RELEASE);
}

/* ---- what captures see ---- */

cudaError_t sim_capture_op(cudaStream_t stream, const struct sim_op *op, int *captured)
{
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    cudaError_t err = cudaSuccess;
    *captured = m != NULL;
    if (!m)
        goto out;
    if (m->cap->invalidated) {
        err = cudaErrorStreamCaptureInvalidated;
        goto out;
    }
    struct sim_gnode *node = NULL;
    err = sim_graph_add_op_locked(m->cap->graph, op, m->deps, m->ndeps, &node);
    if (err == cudaSuccess && set_deps(m, &node, 1) != 0)
        err = cudaErrorMemoryAllocation;
    if (err != cudaSuccess)
        m->cap->invalidated = 1; /* a call that fails inside a capture spoils it */
out:
    pthread_mutex_unlock(&sim_lock);
    return err;
}

cudaError_t sim_capture_unsafe(void)
{
    pthread_t self = pthread_self();
    int forbidden = 0;
    pthread_mutex_lock(&sim_lock);
    if (thread_mode != cudaStreamCaptureModeRelaxed)
        for (struct capture *c = captures; c; c = c->next) {
            int own = pthread_equal(c->thread, self);
            if ((own && c->mode != cudaStreamCaptureModeRelaxed) ||
                (!own && thread_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal)) {
                c->invalidated = 1;
                forbidden = 1;
            }
        }
    pthread_mutex_unlock(&sim_lock);
    return forbidden ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t sim_capture_sync(cudaStream_t stream)
{
    if (is_legacy(stream)) /* synchronising the legacy stream is an implicit synchronisation */
        return sim_capture_unsafe();
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    if (m)
        m->cap->invalidated = 1;
    pthread_mutex_unlock(&sim_lock);
    return m ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t sim_capture_refuse(cudaStream_t stream)
{
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    if (m)
        m->cap->invalidated = 1;
    pthread_mutex_unlock(&sim_lock);
    return m ? cudaErrorNotSupported : cudaSuccess;
}

void sim_capture_forget_stream(cudaStream_t stream)
{
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    if (m && m->origin) {
        struct capture *c = m->cap;
        if (!c->into_user_graph)
            sim_graph_destroy_locked(c->graph);
        capture_end(c);
    } else if (m) {
        for (struct member **link = &members; *link; link = &(*link)->next)
            if (*link == m) {
                *link = m->next;
                break;
            }
        member_free(m);
    }
    pthread_mutex_unlock(&sim_lock);
}

void sim_capture_event_recorded(cudaEvent_t event, cudaStream_t stream, int *captured, cudaError_t *err)
{
    *captured = 0;
    *err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    struct recorded *r = recorded_of(event);
    if (r)
        forget_recorded(r); /* recorded again: only the latest record counts */
    if (m) {
        *captured = 1;
        r = calloc(1, sizeof *r);
        if (r && m->ndeps && !(r->deps = malloc(m->ndeps * sizeof *r->deps))) {
            free(r);
            r = NULL;
        }
        if (!r) {
            *err = cudaErrorMemoryAllocation;
            m->cap->invalidated = 1;
        } else {
            if (m->ndeps)
                memcpy(r->deps, m->deps, m->ndeps * sizeof *r->deps);
            r->ndeps = m->ndeps;
            r->event = event;
            r->cap = m->cap;
            r->next = recorded;
            recorded = r;
        }
    }
    pthread_mutex_unlock(&sim_lock);
}

void sim_capture_event_waited(cudaStream_t stream, cudaEvent_t event, int *captured, cudaError_t *err)
{
    *captured = 0;
    *err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct member *m = member_of(stream);
    struct recorded *r = recorded_of(event);
    if (r && is_legacy(stream)) {
        *captured = 1; /* the legacy stream cannot join a capture */
        *err = cudaErrorStreamCaptureImplicit;
        r->cap->invalidated = 1;
    } else if (r && !m) {
        *captured = 1; /* the stream joins the capture */
        m = member_new(stream, r->cap, 0);
        if (!m || set_deps(m, r->deps, r->ndeps) != 0) {
            *err = cudaErrorMemoryAllocation;
            r->cap->invalidated = 1;
        }
    } else if (r && m->cap == r->cap) {
        *captured = 1;
        if (add_deps(m, r->deps, r->ndeps) != 0) {
            *err = cudaErrorMemoryAllocation;
            m->cap->invalidated = 1;
        }
    } else if (m) {
        *captured = 1; /* an event of another capture, or of work that was not captured */
        *err = r ? cudaErrorStreamCaptureMerge : cudaErrorStreamCaptureIsolation;
        m->cap->invalidated = 1;
    }
    pthread_mutex_unlock(&sim_lock);
}

void sim_capture_forget_event(cudaEvent_t event)
{
    pthread_mutex_lock(&sim_lock);
    struct recorded *r = recorded_of(event);
    if (r)
        forget_recorded(r);
    pthread_mutex_unlock(&sim_lock);
}

/* ---- the capture API ---- */

static cudaError_t begin(cudaStream_t stream, struct sim_graph *into, struct sim_gnode *const *deps, size_t ndeps,
                         enum cudaStreamCaptureMode mode)
{
    if (is_legacy(stream))
        return cudaErrorStreamCaptureUnsupported;
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    if (!sim_stream_valid(stream))
        return cudaErrorInvalidResourceHandle;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct capture *c = NULL;
    struct member *m = NULL;
    if (member_of(stream)) {
        err = cudaErrorIllegalState; /* capturing already */
        goto out;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        err = cudaErrorMemoryAllocation;
        goto out;
    }
    c->graph = into ? into : sim_graph_create_locked(&err);
    c->into_user_graph = into != NULL;
    if (!c->graph || !(m = member_new(stream, c, 1)) || set_deps(m, deps, ndeps) != 0) {
        if (m) {
            members = m->next;
            member_free(m);
        }
        if (c->graph && !into)
            sim_graph_destroy_locked(c->graph);
        free(c);
        err = cudaErrorMemoryAllocation;
        goto out;
    }
    c->id = ++last_id;
    c->mode = mode;
    c->thread = pthread_self();
    c->next = captures;
    captures = c;
    __atomic_add_fetch(&sim_captures_active, 1, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&sim_lock);
    return err;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    cudaError_t err = begin(stream, NULL, NULL, 0, mode);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                          const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                          enum cudaStreamCaptureMode mode)
{
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (dependencyData[i].from_port || dependencyData[i].to_port || dependencyData[i].type)
            return sim_result(cudaErrorNotSupported);
    if (numDependencies && !dependencies)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(graph);
    struct sim_graph *g = e && e->kind == SIM_GRAPH ? e->data : NULL;
    int ok = g != NULL;
    for (size_t i = 0; ok && i < numDependencies; i++)
        ok = sim_node_graph_locked(dependencies[i]) == g;
    pthread_mutex_unlock(&sim_lock);
    if (!ok)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = begin(stream, g, (struct sim_gnode *const *)dependencies, numDependencies, mode);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    if (!pGraph)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct member *m = is_legacy(stream) ? NULL : member_of(stream);
    struct capture *c = m ? m->cap : NULL;
    if (!m) {
        err = cudaErrorIllegalState; /* not capturing */
        goto out;
    }
    if (!m->origin) {
        err = cudaErrorStreamCaptureUnmatched; /* only the stream that began a capture ends it */
        c->invalidated = 1;
        goto out;
    }
    if (c->mode != cudaStreamCaptureModeRelaxed && !pthread_equal(c->thread, pthread_self())) {
        err = cudaErrorStreamCaptureWrongThread;
        goto out;
    }
    for (struct member *o = members; o && !c->invalidated && err == cudaSuccess; o = o->next) {
        if (o->cap != c || o == m)
            continue;
        int r = sim_graph_reaches_locked(c->graph, m->deps, m->ndeps, o->deps, o->ndeps);
        if (r < 0)
            err = cudaErrorMemoryAllocation;
        else if (r == 0)
            err = cudaErrorStreamCaptureUnjoined;
    }
    if (err == cudaSuccess && c->invalidated)
        err = cudaErrorStreamCaptureInvalidated;
    if (err == cudaSuccess) {
        *pGraph = (cudaGraph_t)c->graph;
    } else {
        *pGraph = NULL;
        if (!c->into_user_graph)
            sim_graph_destroy_locked(c->graph);
    }
    capture_end(c);
out:
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    if (!pCaptureStatus)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&sim_lock);
    struct member *m = is_legacy(stream) ? NULL : member_of(stream);
    *pCaptureStatus = !m                    ? cudaStreamCaptureStatusNone
                      : m->cap->invalidated ? cudaStreamCaptureStatusInvalidated
                                            : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&sim_lock);
    return cudaSuccess;
}

/* The dependency set it hands out stays valid until the next call on the stream (as documented). */
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
                                     size_t *numDependencies_out)
{
    if (!captureStatus_out)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&sim_lock);
    struct member *m = is_legacy(stream) ? NULL : member_of(stream);
    if (!m) {
        *captureStatus_out = cudaStreamCaptureStatusNone;
    } else {
        *captureStatus_out = m->cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
        if (id_out)
            *id_out = m->cap->id;
        if (graph_out)
            *graph_out = (cudaGraph_t)m->cap->graph;
        if (dependencies_out)
            *dependencies_out = (const cudaGraphNode_t *)m->deps;
        if (edgeData_out)
            *edgeData_out = m->edges;
        if (numDependencies_out)
            *numDependencies_out = m->ndeps;
    }
    pthread_mutex_unlock(&sim_lock);
    return cudaSuccess;
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                unsigned int flags)
{
    if ((numDependencies && !dependencies) ||
        (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies))
        return sim_result(cudaErrorInvalidValue);
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (dependencyData[i].from_port || dependencyData[i].to_port || dependencyData[i].type)
            return sim_result(cudaErrorNotSupported);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct member *m = is_legacy(stream) ? NULL : member_of(stream);
    if (!m)
        err = cudaErrorIllegalState;
    for (size_t i = 0; m && i < numDependencies; i++)
        if (sim_node_graph_locked(dependencies[i]) != m->cap->graph)
            err = cudaErrorInvalidValue;
    if (err == cudaSuccess) {
        int rc = flags == cudaStreamSetCaptureDependencies
                     ? set_deps(m, (struct sim_gnode *const *)dependencies, numDependencies)
                     : add_deps(m, (struct sim_gnode *const *)dependencies, numDependencies);
        if (rc != 0)
            err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                  *mode != cudaStreamCaptureModeRelaxed))
        return sim_result(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

SIM_ALIAS(cudaStreamBeginCapture_ptsz, cudaStreamBeginCapture);
SIM_ALIAS(cudaStreamBeginCaptureToGraph_ptsz, cudaStreamBeginCaptureToGraph);
SIM_ALIAS(cudaStreamEndCapture_ptsz, cudaStreamEndCapture);
SIM_ALIAS(cudaStreamIsCapturing_ptsz, cudaStreamIsCapturing);
SIM_ALIAS(cudaStreamGetCaptureInfo_ptsz, cudaStreamGetCaptureInfo);
SIM_ALIAS(cudaStreamUpdateCaptureDependencies_ptsz, cudaStreamUpdateCaptureDependencies);
