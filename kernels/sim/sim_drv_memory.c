/* The driver's memory entry points: allocation and free of every kind, copies and fills, host
 * registration, IPC, pools, and virtual memory management (VMM).
 *
 * Everything but VMM is the runtime's memory under its driver name: a CUdeviceptr is the address
 * cudaMalloc would return, and the same capacity, counters and pools apply.
 *
 * VMM: cuMemCreate makes physical memory (counted against the capacity like any device memory,
 * in multiples of the 2 MiB granularity), backed by an anonymous shared file so that every
 * mapping of it sees the same bytes.  cuMemAddressReserve reserves address space (nothing is
 * counted), cuMemMap maps physical memory into it, inaccessible until cuMemSetAccess grants
 * access (an access before that faults, as on a GPU), and cuMemUnmap takes it out again.
 * Physical memory is given back when it has been released (cuMemRelease, once per handle held)
 * and is no longer mapped anywhere. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim_driver.h"

/* ---- allocation ---- */

/* The driver refuses zero-byte requests (the runtime answers them itself). */
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaMalloc((void **)dptr, bytesize));
}

CUresult cuMemFree(CUdeviceptr dptr) { return DRV(cudaFree(drv_ptr(dptr))); }

CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                         unsigned int ElementSizeBytes)
{
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaMallocPitch((void **)dptr, pPitch, WidthInBytes, Height));
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaMallocManaged((void **)dptr, bytesize, flags)); /* CU_MEM_ATTACH_* = cudaMemAttach* */
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaMallocHost(pp, bytesize));
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaHostAlloc(pp, bytesize, Flags)); /* CU_MEMHOSTALLOC_* = cudaHostAlloc* */
}

CUresult cuMemFreeHost(void *p) { return DRV(cudaFreeHost(p)); }

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return DRV(cudaMallocAsync((void **)dptr, bytesize, hStream));
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    return DRV(cudaMallocFromPoolAsync((void **)dptr, bytesize, (cudaMemPool_t)pool, hStream));
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return DRV(cudaFreeAsync(drv_ptr(dptr), hStream)); }

DRV_ALIAS(cuMemAllocAsync_ptsz, cuMemAllocAsync);
DRV_ALIAS(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync);
DRV_ALIAS(cuMemFreeAsync_ptsz, cuMemFreeAsync);

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total_bytes) { return DRV(cudaMemGetInfo(free_bytes, total_bytes)); }

/* ---- copies and fills ---- */

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return DRV(cudaMemcpy(drv_ptr(dst), drv_ptr(src), ByteCount, cudaMemcpyDefault));
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return DRV(cudaMemcpyAsync(drv_ptr(dst), drv_ptr(src), ByteCount, cudaMemcpyDefault, hStream));
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return DRV(cudaMemcpy(drv_ptr(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice));
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return DRV(cudaMemcpy(dstHost, drv_ptr(srcDevice), ByteCount, cudaMemcpyDeviceToHost));
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return DRV(cudaMemcpy(drv_ptr(dstDevice), drv_ptr(srcDevice), ByteCount, cudaMemcpyDeviceToDevice));
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return DRV(cudaMemcpyAsync(drv_ptr(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, hStream));
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return DRV(cudaMemcpyAsync(dstHost, drv_ptr(srcDevice), ByteCount, cudaMemcpyDeviceToHost, hStream));
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return DRV(cudaMemcpyAsync(drv_ptr(dstDevice), drv_ptr(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, hStream));
}

/* Linear memory only (host, device or unified on either side); arrays: cudaMemcpy2D*Array. */
static cudaError_t copy2d(const CUDA_MEMCPY2D *p, cudaStream_t stream, int async)
{
    if (!p || p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return p ? cudaErrorNotSupported : cudaErrorInvalidValue;
    const unsigned char *src = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : drv_ptr(p->srcDevice);
    unsigned char *dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : drv_ptr(p->dstDevice);
    if (!src || !dst)
        return cudaErrorInvalidValue;
    src += p->srcY * p->srcPitch + p->srcXInBytes;
    dst += p->dstY * p->dstPitch + p->dstXInBytes;
    if (async)
        return cudaMemcpy2DAsync(dst, p->dstPitch, src, p->srcPitch, p->WidthInBytes, p->Height, cudaMemcpyDefault,
                                 stream);
    return cudaMemcpy2D(dst, p->dstPitch, src, p->srcPitch, p->WidthInBytes, p->Height, cudaMemcpyDefault);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy) { return DRV(copy2d(pCopy, NULL, 0)); }
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy) { return DRV(copy2d(pCopy, NULL, 0)); }
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream) { return DRV(copy2d(pCopy, hStream, 1)); }

DRV_ALIAS(cuMemcpy_ptds, cuMemcpy);
DRV_ALIAS(cuMemcpyAsync_ptsz, cuMemcpyAsync);
DRV_ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2);
DRV_ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2);
DRV_ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2);
DRV_ALIAS(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2);
DRV_ALIAS(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2);
DRV_ALIAS(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2);
DRV_ALIAS(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2);
DRV_ALIAS(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned_v2);
DRV_ALIAS(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2);

static cudaError_t fill(void *dst, size_t pitch, unsigned value, unsigned size, size_t width, size_t height)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(sim_fill(dst, pitch, value, size, width, height));
}

static cudaError_t fill_async(void *dst, size_t pitch, unsigned value, unsigned size, size_t width, size_t height,
                              cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMSET, .dst = dst, .value = value, .element_size = size, .width = width,
                   .height = height, .pitch = pitch);
    return sim_result(sim_fill(dst, pitch, value, size, width, height));
}

CUresult cuMemsetD8(CUdeviceptr d, unsigned char uc, size_t N) { return DRV(fill(drv_ptr(d), N, uc, 1, N, 1)); }
CUresult cuMemsetD16(CUdeviceptr d, unsigned short us, size_t N) { return DRV(fill(drv_ptr(d), 2 * N, us, 2, N, 1)); }
CUresult cuMemsetD32(CUdeviceptr d, unsigned int ui, size_t N) { return DRV(fill(drv_ptr(d), 4 * N, ui, 4, N, 1)); }
CUresult cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char uc, size_t w, size_t h)
{
    return DRV(fill(drv_ptr(d), pitch, uc, 1, w, h));
}
CUresult cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short us, size_t w, size_t h)
{
    return DRV(fill(drv_ptr(d), pitch, us, 2, w, h));
}
CUresult cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int ui, size_t w, size_t h)
{
    return DRV(fill(drv_ptr(d), pitch, ui, 4, w, h));
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char uc, size_t N, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), N, uc, 1, N, 1, s));
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short us, size_t N, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), 2 * N, us, 2, N, 1, s));
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int ui, size_t N, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), 4 * N, ui, 4, N, 1, s));
}
CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char uc, size_t w, size_t h, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), pitch, uc, 1, w, h, s));
}
CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short us, size_t w, size_t h, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), pitch, us, 2, w, h, s));
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int ui, size_t w, size_t h, CUstream s)
{
    return DRV(fill_async(drv_ptr(d), pitch, ui, 4, w, h, s));
}

DRV_ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2);
DRV_ALIAS(cuMemsetD16_v2_ptds, cuMemsetD16_v2);
DRV_ALIAS(cuMemsetD32_v2_ptds, cuMemsetD32_v2);
DRV_ALIAS(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2);
DRV_ALIAS(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2);
DRV_ALIAS(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2);
DRV_ALIAS(cuMemsetD8Async_ptsz, cuMemsetD8Async);
DRV_ALIAS(cuMemsetD16Async_ptsz, cuMemsetD16Async);
DRV_ALIAS(cuMemsetD32Async_ptsz, cuMemsetD32Async);
DRV_ALIAS(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async);
DRV_ALIAS(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async);
DRV_ALIAS(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async);

/* ---- host memory, IPC ---- */

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return DRV(cudaHostRegister(p, bytesize, Flags)); /* CU_MEMHOSTREGISTER_* = cudaHostRegister* */
}
#undef cuMemHostRegister
DRV_ALIAS(cuMemHostRegister, cuMemHostRegister_v2);

CUresult cuMemHostUnregister(void *p) { return DRV(cudaHostUnregister(p)); }

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    return DRV(cudaHostGetDevicePointer((void **)pdptr, p, Flags));
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) { return DRV(cudaHostGetFlags(pFlags, p)); }

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    return DRV(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)pHandle, drv_ptr(dptr)));
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, &handle, sizeof h);
    return DRV(cudaIpcOpenMemHandle((void **)pdptr, h, Flags));
}
#undef cuIpcOpenMemHandle
DRV_ALIAS(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2);

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) { return DRV(cudaIpcCloseMemHandle(drv_ptr(dptr))); }

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    return DRV(cudaIpcGetEventHandle((cudaIpcEventHandle_t *)pHandle, event));
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    cudaIpcEventHandle_t h;
    memcpy(&h, &handle, sizeof h);
    return DRV(cudaIpcOpenEventHandle(phEvent, h));
}

/* ---- pools ---- */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    return DRV(cudaDeviceGetDefaultMemPool((cudaMemPool_t *)pool_out, dev));
}
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return DRV(cudaDeviceGetMemPool((cudaMemPool_t *)pool, dev));
}
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    return DRV(cudaDeviceSetMemPool(dev, (cudaMemPool_t)pool));
}

/* CUmemPoolProps and cudaMemPoolProps have the same layout. */
_Static_assert(sizeof(CUmemPoolProps) == sizeof(struct cudaMemPoolProps), "pool properties");
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    return DRV(cudaMemPoolCreate((cudaMemPool_t *)pool, (const struct cudaMemPoolProps *)poolProps));
}
CUresult cuMemPoolDestroy(CUmemoryPool pool) { return DRV(cudaMemPoolDestroy((cudaMemPool_t)pool)); }
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    return DRV(cudaMemPoolTrimTo((cudaMemPool_t)pool, minBytesToKeep));
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    return DRV(cudaMemPoolSetAttribute((cudaMemPool_t)pool, (enum cudaMemPoolAttr)attr, value));
}
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    return DRV(cudaMemPoolGetAttribute((cudaMemPool_t)pool, (enum cudaMemPoolAttr)attr, value));
}
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    return DRV(cudaMemPoolSetAccess((cudaMemPool_t)pool, (const struct cudaMemAccessDesc *)map, count));
}

/* ---- virtual memory management ---- */

enum { VMM_GRANULE = 2 * 1024 * 1024 };

struct sim_physical {
    size_t size;
    int fd;
    unsigned handles;  /* cuMemCreate's handle and every cuMemRetainAllocationHandle */
    unsigned mappings; /* ranges it is mapped into */
    CUmemAllocationProp prop;
};

struct sim_mapping {
    struct sim_mapping *next;
    uintptr_t start;
    size_t size;
    struct sim_physical *physical;
};

struct sim_reservation {
    struct sim_reservation *next;
    uintptr_t start;
    size_t size;
    struct sim_mapping *mappings;
};

static struct sim_reservation *reservations; /* guarded by sim_lock */

static int prop_valid(const CUmemAllocationProp *prop)
{
    return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
           prop->location.id == 0;
}

static int granular(size_t bytes) { return bytes % VMM_GRANULE == 0; }

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    if (!granularity || !prop_valid(prop) ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = VMM_GRANULE;
    return CUDA_SUCCESS;
}

/* The physical memory of a handle, with sim_lock held; NULL when it is not one. */
static struct sim_physical *physical_of(CUmemGenericAllocationHandle handle)
{
    void *key = (void *)(uintptr_t)handle;
    struct sim_entry *e = sim_table_get(key);
    return e && e->kind == SIM_PHYSICAL ? e->data : NULL;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    if (!handle || size == 0 || !granular(size) || flags != 0 || !prop_valid(prop))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_physical *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct sim_physical){.size = size, .fd = -1, .handles = 1, .prop = *prop};
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    if (sim_account_alloc_locked(size) != cudaSuccess) {
        sim_stats.failed_allocs++;
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        p->fd = memfd_create("wssim-physical", MFD_CLOEXEC);
        if (p->fd < 0 || ftruncate(p->fd, (off_t)size) != 0 || sim_table_put(p, SIM_PHYSICAL, size, p) != 0) {
            sim_stats.live_bytes -= size; /* not allocated after all */
            sim_stats.alloc_calls--;
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (rc != CUDA_SUCCESS) {
        if (p->fd >= 0)
            close(p->fd);
        free(p);
        return rc;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Gives physical memory back once nothing holds or maps it; sim_lock held.  Returns the file
 * to close outside the lock, or -1. */
static int physical_drop_locked(struct sim_physical *p)
{
    if (p->handles || p->mappings)
        return -1;
    int fd = p->fd;
    sim_account_free_locked(p->size);
    sim_table_del(p);
    free(p);
    return fd;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_physical *p = physical_of(handle);
    int fd = -1;
    if (p && p->handles) {
        p->handles--;
        fd = physical_drop_locked(p);
    }
    pthread_mutex_unlock(&sim_lock);
    if (fd >= 0)
        close(fd);
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    struct sim_physical *p = physical_of(handle);
    if (p)
        *prop = p->prop;
    pthread_mutex_unlock(&sim_lock);
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    (void)addr; /* a hint: the address space is the host's */
    if (!ptr || size == 0 || !granular(size) || flags != 0 || (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < VMM_GRANULE)
        alignment = VMM_GRANULE;
    struct sim_reservation *r = calloc(1, sizeof *r);
    if (!r || size > SIZE_MAX - alignment) {
        free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Over-reserve, then trim to an aligned range of exactly size bytes. */
    size_t span = size + alignment;
    unsigned char *base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uintptr_t start = ((uintptr_t)base + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (start > (uintptr_t)base)
        munmap(base, start - (uintptr_t)base);
    size_t tail = (uintptr_t)base + span - (start + size);
    if (tail)
        munmap((void *)(start + size), tail);
    r->start = start;
    r->size = size;
    pthread_mutex_lock(&sim_lock);
    r->next = reservations;
    reservations = r;
    pthread_mutex_unlock(&sim_lock);
    *ptr = (CUdeviceptr)start;
    return CUDA_SUCCESS;
}

/* The reservation that holds [start, start + size), with sim_lock held. */
static struct sim_reservation *reservation_holding(uintptr_t start, size_t size)
{
    for (struct sim_reservation *r = reservations; r; r = r->next)
        if (start >= r->start && size <= r->size && start - r->start <= r->size - size)
            return r;
    return NULL;
}

static int overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn) { return a < b + bn && b < a + an; }

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    uintptr_t start = (uintptr_t)ptr;
    if (size == 0 || flags != 0 || !granular(size) || !granular(offset) || start % VMM_GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_mapping *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    struct sim_physical *p = physical_of(handle);
    struct sim_reservation *r = reservation_holding(start, size);
    if (!p || !r || offset > p->size || size > p->size - offset) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (struct sim_mapping *o = r->mappings; o; o = o->next)
        if (overlaps(start, size, o->start, o->size)) {
            rc = CUDA_ERROR_INVALID_VALUE; /* part of the range is mapped already */
            goto out;
        }
    /* No access until cuMemSetAccess grants it. */
    if (mmap((void *)start, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd, (off_t)offset) == MAP_FAILED) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    *m = (struct sim_mapping){.next = r->mappings, .start = start, .size = size, .physical = p};
    r->mappings = m;
    p->mappings++;
    m = NULL;
out:
    pthread_mutex_unlock(&sim_lock);
    free(m);
    return rc;
}

/* Is [start, start + size) covered by mappings of r without a gap?  sim_lock held. */
static int fully_mapped(const struct sim_reservation *r, uintptr_t start, size_t size)
{
    uintptr_t at = start, end = start + size;
    while (at < end) {
        const struct sim_mapping *m = r->mappings;
        while (m && !(at >= m->start && at < m->start + m->size))
            m = m->next;
        if (!m)
            return 0;
        at = m->start + m->size;
    }
    return 1;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    uintptr_t start = (uintptr_t)ptr;
    if (size == 0 || !desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id != 0)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
            prot = PROT_READ;
        else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&sim_lock);
    struct sim_reservation *r = reservation_holding(start, size);
    int ok = r && fully_mapped(r, start, size) && mprotect((void *)start, size, prot) == 0;
    pthread_mutex_unlock(&sim_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Takes the mappings inside [start, start + size) out of r, leaving reserved address space;
 * sim_lock held.  Returns 0, or -1 when a mapping straddles the range's ends.  Files of physical
 * memory given back go to *fds (at most *nfds). */
static int unmap_locked(struct sim_reservation *r, uintptr_t start, size_t size, int *fds, size_t *nfds, size_t cap)
{
    for (struct sim_mapping *m = r->mappings; m; m = m->next)
        if (overlaps(start, size, m->start, m->size) && (m->start < start || m->start + m->size > start + size))
            return -1;
    struct sim_mapping **link = &r->mappings;
    while (*link) {
        struct sim_mapping *m = *link;
        if (!overlaps(start, size, m->start, m->size)) {
            link = &m->next;
            continue;
        }
        *link = m->next;
        mmap((void *)m->start, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        m->physical->mappings--;
        int fd = physical_drop_locked(m->physical);
        if (fd >= 0) {
            if (*nfds < cap)
                fds[(*nfds)++] = fd;
            else
                close(fd);
        }
        free(m);
    }
    return 0;
}

enum { CLOSE_BATCH = 64 };

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    int fds[CLOSE_BATCH];
    size_t nfds = 0;
    uintptr_t start = (uintptr_t)ptr;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    struct sim_reservation *r = reservation_holding(start, size);
    int ok = r && fully_mapped(r, start, size) && unmap_locked(r, start, size, fds, &nfds, CLOSE_BATCH) == 0;
    pthread_mutex_unlock(&sim_lock);
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A reservation is freed whole; what is still mapped in it is unmapped first. */
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    int fds[CLOSE_BATCH];
    size_t nfds = 0;
    struct sim_reservation *found = NULL;
    pthread_mutex_lock(&sim_lock);
    for (struct sim_reservation **link = &reservations; *link; link = &(*link)->next)
        if ((*link)->start == (uintptr_t)ptr && (*link)->size == size) {
            found = *link;
            unmap_locked(found, found->start, found->size, fds, &nfds, CLOSE_BATCH);
            *link = found->next;
            break;
        }
    pthread_mutex_unlock(&sim_lock);
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)found->start, found->size);
    free(found);
    return CUDA_SUCCESS;
}

/* The mapping that holds addr, with sim_lock held. */
static struct sim_mapping *mapping_at(uintptr_t addr)
{
    for (struct sim_reservation *r = reservations; r; r = r->next)
        if (addr >= r->start && addr - r->start < r->size)
            for (struct sim_mapping *m = r->mappings; m; m = m->next)
                if (addr >= m->start && addr - m->start < m->size)
                    return m;
    return NULL;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    struct sim_mapping *m = mapping_at((uintptr_t)addr);
    if (m) {
        m->physical->handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)m->physical;
    }
    pthread_mutex_unlock(&sim_lock);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Sharing physical memory between processes: a POSIX file descriptor of its backing file.
 * Memory imported from another process is not counted here (the exporter holds it); its bytes
 * are shared, as on a GPU. */
CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags)
{
    if (!shareableHandle || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&sim_lock);
    struct sim_physical *p = physical_of(handle);
    int fd = p ? dup(p->fd) : -1;
    pthread_mutex_unlock(&sim_lock);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(shareableHandle, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType)
{
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    int fd = (int)(intptr_t)osHandle;
    off_t bytes = lseek(fd, 0, SEEK_END);
    if (bytes <= 0 || !granular((size_t)bytes))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_physical *p = calloc(1, sizeof *p);
    int own = dup(fd);
    if (!p || own < 0) {
        free(p);
        if (own >= 0)
            close(own);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = (struct sim_physical){.size = (size_t)bytes, .fd = own, .handles = 1};
    p->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pthread_mutex_lock(&sim_lock);
    /* Counted like local memory so that release and unmap keep the books balanced. */
    int ok = sim_table_put(p, SIM_PHYSICAL, p->size, p) == 0;
    if (ok) {
        sim_stats.live_bytes += p->size;
        sim_stats.alloc_calls++;
    }
    pthread_mutex_unlock(&sim_lock);
    if (!ok) {
        close(own);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* ---- what an address is ---- */

/* The driver's size query: the base and size of the allocation or mapping that holds dptr
 * (allocations are known by their base address only). */
CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(drv_ptr(dptr));
    int known = e && (e->kind == SIM_DEVICE_MEM || e->kind == SIM_MANAGED_MEM || e->kind == SIM_IPC_MAPPING ||
                      e->kind == SIM_GRAPH_MEM || e->kind == SIM_HOST_MEM);
    uintptr_t base = (uintptr_t)dptr;
    size_t bytes = known ? e->size : 0;
    if (!known) {
        const struct sim_mapping *m = mapping_at((uintptr_t)dptr);
        if (m) {
            known = 1;
            base = m->start;
            bytes = m->size;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (!known)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)base;
    if (psize)
        *psize = bytes;
    return CUDA_SUCCESS;
}

/* What the runtime's cudaPointerGetAttributes says, in the driver's terms. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    struct cudaPointerAttributes a;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = DRV(cudaPointerGetAttributes(&a, drv_ptr(ptr)));
    if (rc != CUDA_SUCCESS)
        return rc;
    if (a.type == cudaMemoryTypeUnregistered && attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED)
        return CUDA_ERROR_INVALID_VALUE; /* the driver does not know the pointer */
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = a.type == cudaMemoryTypeHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = drv_devptr(a.devicePointer); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data = a.hostPointer; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = a.type == cudaMemoryTypeManaged; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned *)data = 1; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        CUdeviceptr base = 0;
        size_t size = 0;
        rc = cuMemGetAddressRange(&base, &size, ptr);
        if (rc == CUDA_SUCCESS && attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
            *(CUdeviceptr *)data = base;
        else if (rc == CUDA_SUCCESS)
            *(size_t *)data = size;
        return rc;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    struct cudaMemLocation l = {(enum cudaMemLocationType)location.type, location.id};
    return DRV(cudaMemAdvise(drv_ptr(devPtr), count, (enum cudaMemoryAdvise)advice, l));
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                            CUstream hStream)
{
    struct cudaMemLocation l = {(enum cudaMemLocationType)location.type, location.id};
    return DRV(cudaMemPrefetchAsync(drv_ptr(devPtr), count, l, flags, hStream));
}
DRV_ALIAS(cuMemPrefetchAsync_v2_ptsz, cuMemPrefetchAsync_v2);

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
    return DRV(cudaStreamAttachMemAsync(hStream, drv_ptr(dptr), length, flags));
}
DRV_ALIAS(cuStreamAttachMemAsync_ptsz, cuStreamAttachMemAsync);

int sim_vmm_mapped(const void *p)
{
    pthread_mutex_lock(&sim_lock);
    int mapped = mapping_at((uintptr_t)p) != NULL;
    pthread_mutex_unlock(&sim_lock);
    return mapped;
}
