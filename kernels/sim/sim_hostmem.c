/* Host memory registration and interprocess memory handles.
 *
 * cudaHostRegister pins a range of the program's own memory: on this device that only records
 * the range (registered memory is not device memory and is not counted against the capacity).
 *
 * IPC: a handle names a cudaMalloc allocation of the exporting process (its pid, address, size
 * and a serial).  Another process opens it into memory of that size; opening it again returns the
 * same pointer and counts a reference, and the mapping goes away at the last close.  The contents
 * are NOT shared between the processes (each sees its own host memory), and the mapping is not
 * counted against the capacity: the memory belongs to the exporter.  Opening a handle in the
 * process that exported it fails as on a GPU (cudaErrorDeviceUninitialized: an invalid context).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_internal.h"

struct registration {
    struct registration *next;
    unsigned char *start;
    size_t size;
    unsigned flags;
};

static struct registration *registrations; /* guarded by sim_lock */

static const unsigned known_register_flags =
    cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;

static struct registration *registration_containing(const void *p)
{
    const unsigned char *c = p;
    for (struct registration *r = registrations; r; r = r->next)
        if (c >= r->start && (size_t)(c - r->start) < r->size)
            return r;
    return NULL;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    SIM_CAPTURE_UNSAFE();
    if (!ptr || size == 0 || (flags & ~known_register_flags) || (uintptr_t)ptr > UINTPTR_MAX - size)
        return sim_result(cudaErrorInvalidValue);
    struct registration *r = calloc(1, sizeof *r);
    if (!r)
        return sim_result(cudaErrorMemoryAllocation);
    *r = (struct registration){NULL, ptr, size, flags};
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    for (struct registration *o = registrations; o; o = o->next)
        if (r->start < o->start + o->size && o->start < r->start + size)
            err = cudaErrorHostMemoryAlreadyRegistered; /* part of the range is registered */
    if (err == cudaSuccess && sim_table_put(ptr, SIM_HOST_REGISTERED, size, r) != 0)
        err = cudaErrorMemoryAllocation;
    if (err == cudaSuccess) {
        r->next = registrations;
        registrations = r;
    }
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess) {
        free(r);
        return sim_result(err);
    }
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr)
{
    SIM_CAPTURE_UNSAFE();
    pthread_mutex_lock(&sim_lock);
    struct registration *found = NULL;
    for (struct registration **link = &registrations; *link; link = &(*link)->next)
        if ((*link)->start == ptr) {
            found = *link;
            *link = found->next;
            sim_table_del(ptr);
            break;
        }
    pthread_mutex_unlock(&sim_lock);
    if (!found) /* only the start of a registered range unregisters it */
        return sim_result(cudaErrorHostMemoryNotRegistered);
    free(found);
    return cudaSuccess;
}

/* Pinned memory (cudaHostAlloc's, or registered) is its own device pointer here. */
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    if (!pDevice || flags != 0)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    int pinned = sim_table_has(pHost, SIM_HOST_MEM) || registration_containing(pHost) != NULL;
    pthread_mutex_unlock(&sim_lock);
    if (!pinned)
        return sim_result(cudaErrorInvalidValue);
    *pDevice = pHost;
    return cudaSuccess;
}

cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    if (!pFlags)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    int pinned = sim_table_has(pHost, SIM_HOST_MEM);
    const struct registration *r = pinned ? NULL : registration_containing(pHost);
    if (pinned || r)
        *pFlags = r ? r->flags : cudaHostAllocDefault;
    pthread_mutex_unlock(&sim_lock);
    return pinned || r ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* ---- IPC ---- */

struct ipc_handle {
    char magic[8];
    uint64_t pid, address, size, serial;
    char pad[CUDA_IPC_HANDLE_SIZE - 40];
};
_Static_assert(sizeof(struct ipc_handle) == sizeof(cudaIpcMemHandle_t), "IPC handle size");

struct ipc_mapping {
    struct ipc_handle from;
    unsigned opens;
};

static const char ipc_magic[8] = "WSSIMIPC";
static uint64_t ipc_serial;

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    if (!handle)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(devPtr);
    int ok = e && e->kind == SIM_DEVICE_MEM && !e->data; /* the base of a cudaMalloc allocation */
    struct ipc_handle h;
    memset(&h, 0, sizeof h);
    if (ok) {
        memcpy(h.magic, ipc_magic, sizeof h.magic);
        h.pid = (uint64_t)getpid();
        h.address = (uint64_t)(uintptr_t)devPtr;
        h.size = e->size;
        h.serial = ++ipc_serial;
    }
    pthread_mutex_unlock(&sim_lock);
    if (!ok)
        return sim_result(cudaErrorInvalidValue);
    memcpy(handle, &h, sizeof h);
    return cudaSuccess;
}

static int same_allocation(const struct ipc_handle *a, const struct ipc_handle *b)
{
    return a->pid == b->pid && a->address == b->address && a->size == b->size;
}

/* The table has no iteration: open mappings are also kept on a short list. */
struct open_mapping {
    struct open_mapping *next;
    void *ptr;
    struct ipc_mapping *m;
};
static struct open_mapping *open_mappings;

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    struct ipc_handle h;
    memcpy(&h, &handle, sizeof h);
    if (!devPtr || (flags & ~(unsigned)cudaIpcMemLazyEnablePeerAccess) || memcmp(h.magic, ipc_magic, 8) != 0 ||
        h.size == 0)
        return sim_result(cudaErrorInvalidValue);
    if (h.pid == (uint64_t)getpid())
        return sim_result(cudaErrorDeviceUninitialized); /* a process cannot open its own handle */
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    for (struct open_mapping *o = open_mappings; o; o = o->next)
        if (same_allocation(&o->m->from, &h)) {
            o->m->opens++;
            *devPtr = o->ptr;
            pthread_mutex_unlock(&sim_lock);
            return cudaSuccess;
        }
    struct ipc_mapping *m = calloc(1, sizeof *m);
    struct open_mapping *o = calloc(1, sizeof *o);
    void *p = NULL;
    if (!m || !o || h.size > SIZE_MAX - SIM_DEVICE_ALIGN ||
        posix_memalign(&p, SIM_DEVICE_ALIGN, (h.size + SIM_DEVICE_ALIGN - 1) & ~(size_t)(SIM_DEVICE_ALIGN - 1)) != 0 ||
        sim_table_put(p, SIM_IPC_MAPPING, h.size, m) != 0) {
        free(p);
        free(m);
        free(o);
        err = cudaErrorMapBufferObjectFailed;
    } else {
        memset(p, 0, h.size);
        m->from = h;
        m->opens = 1;
        o->ptr = p;
        o->m = m;
        o->next = open_mappings;
        open_mappings = o;
        *devPtr = p;
    }
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    struct open_mapping *gone = NULL;
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(devPtr);
    struct ipc_mapping *m = e && e->kind == SIM_IPC_MAPPING ? e->data : NULL;
    if (m && --m->opens == 0) {
        sim_table_del(devPtr);
        for (struct open_mapping **link = &open_mappings; *link; link = &(*link)->next)
            if ((*link)->ptr == devPtr) {
                gone = *link;
                *link = gone->next;
                break;
            }
    }
    pthread_mutex_unlock(&sim_lock);
    if (!m)
        return sim_result(cudaErrorInvalidValue);
    if (gone) {
        free(gone->m);
        free(gone->ptr);
        free(gone);
    }
    return cudaSuccess;
}

/* ---- IPC of events: a handle names an interprocess event of the exporting process; another
 * process opens it into an event of its own with the same flags (events complete at once here,
 * so there is nothing to wait for across processes) ---- */

struct ipc_event_handle {
    char magic[8];
    uint64_t pid, event;
    char pad[CUDA_IPC_HANDLE_SIZE - 24];
};
_Static_assert(sizeof(struct ipc_event_handle) == sizeof(cudaIpcEventHandle_t), "IPC event handle size");

static const char ipc_event_magic[8] = "WSSIMEVT";

cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    unsigned flags = 0;
    if (!handle)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_event_flags(event, &flags))
        return sim_result(cudaErrorInvalidResourceHandle);
    if (!(flags & cudaEventInterprocess) || !(flags & cudaEventDisableTiming))
        return sim_result(cudaErrorInvalidValue); /* only interprocess events without timing */
    struct ipc_event_handle h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ipc_event_magic, sizeof h.magic);
    h.pid = (uint64_t)getpid();
    h.event = (uint64_t)(uintptr_t)event;
    memcpy(handle, &h, sizeof h);
    return cudaSuccess;
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    struct ipc_event_handle h;
    memcpy(&h, &handle, sizeof h);
    if (!event || memcmp(h.magic, ipc_event_magic, sizeof h.magic) != 0)
        return sim_result(cudaErrorInvalidValue);
    if (h.pid == (uint64_t)getpid())
        return sim_result(cudaErrorDeviceUninitialized);
    return cudaEventCreateWithFlags(event, cudaEventInterprocess | cudaEventDisableTiming);
}
