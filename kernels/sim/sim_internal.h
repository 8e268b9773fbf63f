/* Shared state of the simulated device. Everything here is internal to libwssim.so. */
#ifndef WSSIM_INTERNAL_H
#define WSSIM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The library is built with -fvisibility=hidden; what the public headers declare is the API and
 * must be exported, everything declared below them stays hidden. */
#pragma GCC visibility push(default)
#include <cuda_runtime_api.h>
#include "wssim.h"
#include "wssim_nvcc.h"
#pragma GCC visibility pop

/* Exports a second name for an API function: the per-thread-default-stream variants (_ptsz,
 * _ptds) behave the same on a device where every call completes before it returns. */
#define SIM_ALIAS(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("default")))

enum { SIM_DEVICE_ALIGN = 256, SIM_DEFAULT_CAPACITY_SHIFT = 34 /* 16 GiB */ };

/* What a key of the handle table stands for. */
enum sim_kind {
    SIM_DEVICE_MEM = 1, /* cudaMalloc & co., counted against capacity */
    SIM_MANAGED_MEM,    /* cudaMallocManaged, counted too */
    SIM_HOST_MEM,       /* cudaMallocHost / cudaHostAlloc, not counted */
    SIM_STREAM,
    SIM_EVENT,
    SIM_POOL,
    SIM_GRAPH,
    SIM_GRAPH_EXEC,
    SIM_MODULE, /* handle returned by __cudaRegisterFatBinary */
    SIM_STUB,   /* nvcc host stub -> struct sim_function */
    SIM_KERNEL, /* cudaKernel_t handle (a struct sim_function) */
};

struct sim_entry {
    uintptr_t key; /* 0 marks an empty slot */
    enum sim_kind kind;
    size_t size;
    void *data;
};

/* One lock guards the handle table, the counters and the registries: none of this is on the
 * tracer's hot path, and one lock keeps every invariant (live bytes vs. table) trivially true. */
extern pthread_mutex_t sim_lock;
extern struct wssim_stats sim_stats;

/* Handle table (sim_table.c), all with sim_lock held. sim_table_get's result is valid until the
 * next sim_table_put or sim_table_del. */
int sim_table_put(const void *key, enum sim_kind kind, size_t size, void *data);
struct sim_entry *sim_table_get(const void *key);
int sim_table_has(const void *key, enum sim_kind kind);
void sim_table_del(const void *key);

/* Configuration and errors (sim_errors.c, sim_memory.c). */
uint64_t sim_capacity(void);
cudaError_t sim_result(cudaError_t err);

/* Validation shared by several files, all taking sim_lock themselves. */
int sim_stream_valid(cudaStream_t stream);
void sim_fill_properties(struct cudaDeviceProp *prop);

#endif
