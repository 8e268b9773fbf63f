/* CUDA arrays, mipmapped arrays, 3D allocations, the copies and fills between them, and the
 * handles that textures are.
 *
 * An array is dense host memory of width x height x depth elements (0 for an unused dimension
 * counts as 1), row after row; its elements are the channel format's bits rounded up to bytes.
 * The bytes counted against the capacity are exactly width x height x depth x element size (a
 * GPU pads to its own granularity, which no program can rely on).  A mipmapped array holds its
 * levels (each dimension halved per level, at least 1) one after the other.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct sim_array {
    struct cudaChannelFormatDesc desc;
    size_t width, height, depth; /* as given: 0 for an unused dimension */
    unsigned flags;
    size_t elem, bytes;
    unsigned char *data;
    struct sim_mipmap *level_of; /* a level of a mipmapped array (not freed on its own) */
};

struct sim_mipmap {
    struct sim_array *levels;
    unsigned nlevels;
    size_t bytes;
    unsigned char *data;
};

struct sim_texture {
    struct cudaResourceDesc res;
    struct cudaTextureDesc tex;
};

static size_t dim(size_t v) { return v ? v : 1; }

static size_t element_size(const struct cudaChannelFormatDesc *d)
{
    if (d->x < 0 || d->y < 0 || d->z < 0 || d->w < 0)
        return 0;
    long bits = (long)d->x + d->y + d->z + d->w;
    if (bits == 0 || bits % 8 != 0 || bits > 128)
        return 0;
    return (size_t)bits / 8;
}

/* elements x elem, or 0 on overflow. */
static size_t array_bytes(size_t w, size_t h, size_t d, size_t elem)
{
    size_t n;
    if (__builtin_mul_overflow(dim(w), dim(h), &n) || __builtin_mul_overflow(n, dim(d), &n) ||
        __builtin_mul_overflow(n, elem, &n))
        return 0;
    return n;
}

static struct sim_array *array_of(const void *handle)
{
    struct sim_entry *e = sim_table_get(handle);
    return e && e->kind == SIM_ARRAY ? e->data : NULL;
}

static cudaError_t check_array_shape(const struct cudaChannelFormatDesc *desc, size_t w, size_t h, size_t d,
                                     size_t *elem, size_t *bytes)
{
    if (!desc || w == 0 || (d && !h))
        return cudaErrorInvalidValue;
    *elem = element_size(desc);
    if (!*elem || desc->f < cudaChannelFormatKindSigned || desc->f > cudaChannelFormatKindNone)
        return cudaErrorInvalidChannelDescriptor;
    *bytes = array_bytes(w, h, d, *elem);
    return *bytes ? cudaSuccess : cudaErrorMemoryAllocation;
}

/* Allocate memory counted against the capacity; sim_lock held. */
static cudaError_t device_bytes(size_t bytes, unsigned char **out)
{
    cudaError_t err = cudaErrorMemoryAllocation;
    if (bytes <= sim_capacity() - sim_stats.live_bytes && (*out = calloc(1, bytes)) != NULL)
        err = sim_account_alloc_locked(bytes);
    if (err != cudaSuccess)
        sim_stats.failed_allocs++;
    return err;
}

static cudaError_t new_array(cudaArray_t *out, const struct cudaChannelFormatDesc *desc, size_t w, size_t h, size_t d,
                             unsigned flags)
{
    size_t elem, bytes;
    if (!out)
        return cudaErrorInvalidValue;
    cudaError_t err = check_array_shape(desc, w, h, d, &elem, &bytes);
    if (err != cudaSuccess)
        return err;
    struct sim_array *a = calloc(1, sizeof *a);
    if (!a)
        return cudaErrorMemoryAllocation;
    *a = (struct sim_array){*desc, w, h, d, flags, elem, bytes, NULL, NULL};
    pthread_mutex_lock(&sim_lock);
    err = device_bytes(bytes, &a->data);
    if (err == cudaSuccess && sim_table_put(a, SIM_ARRAY, bytes, a) != 0) {
        sim_account_free_locked(bytes);
        free(a->data);
        err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess) {
        free(a);
        return err;
    }
    *out = (cudaArray_t)a;
    return cudaSuccess;
}

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                            unsigned int flags)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(new_array(array, desc, width, height, 0, flags));
}

cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                              unsigned int flags)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(new_array(array, desc, extent.width, extent.height, extent.depth, flags));
}

cudaError_t cudaFreeArray(cudaArray_t array)
{
    if (!array)
        return cudaSuccess;
    SIM_CAPTURE_UNSAFE();
    pthread_mutex_lock(&sim_lock);
    struct sim_array *a = array_of(array);
    int ok = a && !a->level_of;
    if (ok) {
        sim_table_del(a);
        sim_account_free_locked(a->bytes);
    }
    pthread_mutex_unlock(&sim_lock);
    if (!ok)
        return sim_result(cudaErrorInvalidValue);
    free(a->data);
    free(a);
    return cudaSuccess;
}

cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent, unsigned int *flags,
                             cudaArray_t array)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_array *a = array_of(array);
    if (a) {
        if (desc)
            *desc = a->desc;
        if (extent)
            *extent = (struct cudaExtent){a->width, a->height, a->depth};
        if (flags)
            *flags = a->flags;
    }
    pthread_mutex_unlock(&sim_lock);
    return a ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc *desc, cudaArray_const_t array)
{
    if (!desc)
        return sim_result(cudaErrorInvalidValue);
    return cudaArrayGetInfo(desc, NULL, NULL, (cudaArray_t)array);
}

struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
    return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

/* ---- mipmapped arrays ---- */

cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray, const struct cudaChannelFormatDesc *desc,
                                     struct cudaExtent extent, unsigned int numLevels, unsigned int flags)
{
    size_t elem, bytes;
    SIM_CAPTURE_UNSAFE();
    if (!mipmappedArray || numLevels == 0 || numLevels > 64)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = check_array_shape(desc, extent.width, extent.height, extent.depth, &elem, &bytes);
    if (err != cudaSuccess)
        return sim_result(err);
    struct sim_mipmap *m = calloc(1, sizeof *m);
    struct sim_array *levels = calloc(numLevels, sizeof *levels);
    if (!m || !levels) {
        free(m);
        free(levels);
        return sim_result(cudaErrorMemoryAllocation);
    }
    size_t total = 0;
    for (unsigned l = 0; l < numLevels; l++) {
        size_t w = extent.width >> l, h = extent.height >> l, d = extent.depth >> l;
        /* each used dimension halves down to 1; an unused one stays unused */
        struct sim_array *a = &levels[l];
        *a = (struct sim_array){
            *desc, w ? w : 1, extent.height ? (h ? h : 1) : 0, extent.depth ? (d ? d : 1) : 0, flags, elem, 0, NULL, m};
        a->bytes = array_bytes(a->width, a->height, a->depth, elem);
        total += a->bytes;
    }
    m->levels = levels;
    m->nlevels = numLevels;
    m->bytes = total;
    pthread_mutex_lock(&sim_lock);
    err = device_bytes(total, &m->data);
    int registered = 0;
    if (err == cudaSuccess && sim_table_put(m, SIM_MIPMAP, total, m) == 0) {
        registered = 1;
        size_t at = 0;
        for (unsigned l = 0; l < numLevels && registered; l++) {
            levels[l].data = m->data + at;
            at += levels[l].bytes;
            registered = sim_table_put(&levels[l], SIM_ARRAY, levels[l].bytes, &levels[l]) == 0;
        }
    }
    if (err == cudaSuccess && !registered) {
        for (unsigned l = 0; l < numLevels; l++)
            sim_table_del(&levels[l]);
        sim_table_del(m);
        sim_account_free_locked(total);
        free(m->data);
        err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess) {
        free(levels);
        free(m);
        return sim_result(err);
    }
    *mipmappedArray = (cudaMipmappedArray_t)m;
    return cudaSuccess;
}

cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray, cudaMipmappedArray_const_t mipmappedArray,
                                       unsigned int level)
{
    if (!levelArray)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(mipmappedArray);
    struct sim_mipmap *m = e && e->kind == SIM_MIPMAP ? e->data : NULL;
    int ok = m && level < m->nlevels;
    if (ok)
        *levelArray = (cudaArray_t)&m->levels[level];
    pthread_mutex_unlock(&sim_lock);
    return ok ? cudaSuccess : sim_result(m ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    if (!mipmappedArray)
        return cudaSuccess;
    SIM_CAPTURE_UNSAFE();
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(mipmappedArray);
    struct sim_mipmap *m = e && e->kind == SIM_MIPMAP ? e->data : NULL;
    if (m) {
        for (unsigned l = 0; l < m->nlevels; l++)
            sim_table_del(&m->levels[l]);
        sim_table_del(m);
        sim_account_free_locked(m->bytes);
    }
    pthread_mutex_unlock(&sim_lock);
    if (!m)
        return sim_result(cudaErrorInvalidValue);
    free(m->data);
    free(m->levels);
    free(m);
    return cudaSuccess;
}

/* ---- 3D allocations ---- */

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    enum { PITCH_ALIGN = 512 }; /* as cudaMallocPitch */
    SIM_CAPTURE_UNSAFE();
    if (!pitchedDevPtr || extent.width > SIZE_MAX - PITCH_ALIGN)
        return sim_result(cudaErrorInvalidValue);
    size_t pitch = (extent.width + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1), bytes;
    if (__builtin_mul_overflow(pitch, extent.height, &bytes) || __builtin_mul_overflow(bytes, extent.depth, &bytes))
        return sim_result(cudaErrorMemoryAllocation);
    void *p = NULL;
    cudaError_t err = sim_alloc_with(&p, bytes, SIM_DEVICE_MEM, NULL);
    if (err != cudaSuccess)
        return err;
    *pitchedDevPtr = (struct cudaPitchedPtr){p, pitch, extent.width, extent.height};
    return cudaSuccess;
}

/* ---- copies ---- */

/* One side of a 3D copy: where element (x, y, z) starts, and how far rows and slices lie apart. */
struct side {
    unsigned char *base;
    size_t pitch, slice, xbytes, rows, slices; /* xbytes, rows, slices: the extent it has room for */
};

static cudaError_t side_of(cudaArray_t array, struct cudaPitchedPtr ptr, struct cudaPos pos, size_t elem_of_copy,
                           struct side *s, size_t *elem_out)
{
    if (array) {
        struct sim_array *a = array_of(array);
        if (!a)
            return cudaErrorInvalidResourceHandle;
        size_t w = dim(a->width), h = dim(a->height), d = dim(a->depth);
        if (pos.x > w || pos.y > h || pos.z > d)
            return cudaErrorInvalidValue;
        s->pitch = w * a->elem;
        s->slice = s->pitch * h;
        s->base = a->data + pos.z * s->slice + pos.y * s->pitch + pos.x * a->elem;
        s->xbytes = (w - pos.x) * a->elem;
        s->rows = h - pos.y;
        s->slices = d - pos.z;
        *elem_out = a->elem;
        return cudaSuccess;
    }
    (void)elem_of_copy;
    if (!ptr.ptr)
        return cudaErrorInvalidValue;
    s->pitch = ptr.pitch;
    s->slice = ptr.pitch * dim(ptr.ysize);
    s->base = (unsigned char *)ptr.ptr + pos.z * s->slice + pos.y * s->pitch + pos.x;
    s->xbytes = SIZE_MAX; /* linear memory is not bounds-checked, as cudaMemcpy's is not */
    s->rows = SIZE_MAX;
    s->slices = SIZE_MAX;
    return cudaSuccess;
}

cudaError_t sim_copy3d(const struct cudaMemcpy3DParms *p)
{
    if (p && (p->extent.width == 0 || p->extent.height == 0 || p->extent.depth == 0))
        return cudaSuccess; /* nothing to copy */
    if (!p || (!p->srcArray && !p->srcPtr.ptr) || (!p->dstArray && !p->dstPtr.ptr) || (p->srcArray && p->srcPtr.ptr) ||
        (p->dstArray && p->dstPtr.ptr))
        return cudaErrorInvalidValue;
    if (p->kind < cudaMemcpyHostToHost || p->kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    struct side src, dst;
    size_t selem = 1, delem = 1;
    pthread_mutex_lock(&sim_lock);
    cudaError_t err = side_of(p->srcArray, p->srcPtr, p->srcPos, 0, &src, &selem);
    if (err == cudaSuccess)
        err = side_of(p->dstArray, p->dstPtr, p->dstPos, 0, &dst, &delem);
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess)
        return err;
    /* The extent counts elements of the array when one side is an array, bytes otherwise. */
    size_t elem = p->srcArray ? selem : p->dstArray ? delem : 1;
    if (p->srcArray && p->dstArray && selem != delem)
        return cudaErrorInvalidValue;
    size_t row, rows = dim(p->extent.height), slices = dim(p->extent.depth);
    if (__builtin_mul_overflow(p->extent.width, elem, &row))
        return cudaErrorInvalidValue;
    if (row > src.xbytes || row > dst.xbytes || rows > src.rows || rows > dst.rows || slices > src.slices ||
        slices > dst.slices)
        return cudaErrorInvalidValue;
    if ((!p->srcArray && rows > 1 && src.pitch < row) || (!p->dstArray && rows > 1 && dst.pitch < row))
        return cudaErrorInvalidPitchValue;
    for (size_t z = 0; z < slices; z++)
        for (size_t y = 0; y < rows; y++)
            memmove(dst.base + z * dst.slice + y * dst.pitch, src.base + z * src.slice + y * src.pitch, row);
    return cudaSuccess;
}

static cudaError_t copy3d_on(const struct cudaMemcpy3DParms *p, cudaStream_t stream, int async)
{
    if (async) {
        if (!sim_stream_valid(stream))
            return sim_result(cudaErrorInvalidResourceHandle);
        SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMCPY, .copy3d = p);
    } else {
        SIM_CAPTURE_UNSAFE();
    }
    return sim_result(sim_copy3d(p));
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) { return copy3d_on(p, NULL, 0); }

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    return copy3d_on(p, stream, 1);
}

/* The 2D forms as 3D copies: widths and offsets in bytes. */
static struct cudaMemcpy3DParms copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                       size_t height, enum cudaMemcpyKind kind)
{
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = (struct cudaPitchedPtr){(void *)src, spitch, width, height};
    p.dstPtr = (struct cudaPitchedPtr){dst, dpitch, width, height};
    p.extent = (struct cudaExtent){width, height, 1};
    p.kind = kind;
    return p;
}

static cudaError_t check_pitches(size_t dpitch, size_t spitch, size_t width, size_t height)
{
    return height > 1 && (dpitch < width || spitch < width) ? cudaErrorInvalidPitchValue : cudaSuccess;
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind)
{
    if (check_pitches(dpitch, spitch, width, height) != cudaSuccess)
        return sim_result(cudaErrorInvalidPitchValue);
    if (width == 0 || height == 0)
        return cudaSuccess;
    struct cudaMemcpy3DParms p = copy2d(dst, dpitch, src, spitch, width, height, kind);
    return copy3d_on(&p, NULL, 0);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (check_pitches(dpitch, spitch, width, height) != cudaSuccess)
        return sim_result(cudaErrorInvalidPitchValue);
    if (width == 0 || height == 0)
        return sim_stream_valid(stream) ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
    struct cudaMemcpy3DParms p = copy2d(dst, dpitch, src, spitch, width, height, kind);
    return copy3d_on(&p, stream, 1);
}

/* Array <-> linear memory in bytes: the array is taken as rows of width x element bytes. */
static cudaError_t array_2d(cudaArray_t array, size_t w_offset, size_t h_offset, size_t width, size_t height, void *mem,
                            size_t mem_pitch, int to_array, enum cudaMemcpyKind kind, cudaStream_t stream, int async)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_array *a = array_of(array);
    size_t elem = a ? a->elem : 1;
    pthread_mutex_unlock(&sim_lock);
    if (!a)
        return sim_result(cudaErrorInvalidResourceHandle);
    if (w_offset % elem || width % elem)
        return sim_result(cudaErrorInvalidValue);
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    struct cudaPitchedPtr linear = {mem, mem_pitch, width, height};
    struct cudaPos at = {w_offset / elem, h_offset, 0};
    if (to_array) {
        p.srcPtr = linear;
        p.dstArray = array;
        p.dstPos = at;
    } else {
        p.dstPtr = linear;
        p.srcArray = array;
        p.srcPos = at;
    }
    p.extent = (struct cudaExtent){width / elem, height, 1};
    p.kind = kind;
    return copy3d_on(&p, stream, async);
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return array_2d(dst, wOffset, hOffset, width, height, (void *)src, spitch, 1, kind, NULL, 0);
}

cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return array_2d(dst, wOffset, hOffset, width, height, (void *)src, spitch, 1, kind, stream, 1);
}

cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return array_2d((cudaArray_t)src, wOffset, hOffset, width, height, dst, dpitch, 0, kind, NULL, 0);
}

cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                       size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return array_2d((cudaArray_t)src, wOffset, hOffset, width, height, dst, dpitch, 0, kind, stream, 1);
}

/* The deprecated linear forms: count bytes from (wOffset, hOffset) on, running on over rows.
 * (Programs still call them: simplePitchLinearTexture does.) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static cudaError_t array_linear(cudaArray_t array, size_t w_offset, size_t h_offset, void *mem, size_t count,
                                int to_array, enum cudaMemcpyKind kind)
{
    SIM_CAPTURE_UNSAFE();
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return sim_result(cudaErrorInvalidMemcpyDirection);
    pthread_mutex_lock(&sim_lock);
    struct sim_array *a = array_of(array);
    size_t row = a ? dim(a->width) * a->elem : 0, start = 0;
    int ok = a && count && mem && w_offset <= row && !__builtin_mul_overflow(h_offset, row, &start) &&
             start <= a->bytes - w_offset && count <= a->bytes - start - w_offset;
    unsigned char *at = ok ? a->data + start + w_offset : NULL;
    pthread_mutex_unlock(&sim_lock);
    if (!a)
        return sim_result(cudaErrorInvalidResourceHandle);
    if (count == 0)
        return cudaSuccess;
    if (!ok)
        return sim_result(cudaErrorInvalidValue);
    if (to_array)
        memmove(at, mem, count);
    else
        memmove(mem, at, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
                              enum cudaMemcpyKind kind)
{
    return array_linear(dst, wOffset, hOffset, (void *)src, count, 1, kind);
}

cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                enum cudaMemcpyKind kind)
{
    return array_linear((cudaArray_t)src, wOffset, hOffset, dst, count, 0, kind);
}

#pragma GCC diagnostic pop

/* ---- fills ---- */

cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(sim_fill(devPtr, pitch, (unsigned char)value, 1, width, height));
}

cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMSET, .dst = devPtr, .value = (unsigned char)value, .element_size = 1,
                   .width = width, .height = height, .pitch = pitch);
    return sim_result(sim_fill(devPtr, pitch, (unsigned char)value, 1, width, height));
}

static cudaError_t fill3d(struct cudaPitchedPtr p, int value, struct cudaExtent e)
{
    for (size_t z = 0; z < e.depth; z++) {
        cudaError_t err = sim_fill((unsigned char *)p.ptr + z * p.pitch * dim(p.ysize), p.pitch, (unsigned char)value,
                                   1, e.width, e.height);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(fill3d(pitchedDevPtr, value, extent));
}

/* A capture takes a fill of one slice (a memset node is two-dimensional); deeper ones are refused
 * while the stream captures rather than run out of order. */
cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                              cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    if (extent.depth <= 1)
        SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMSET, .dst = pitchedDevPtr.ptr, .value = (unsigned char)value,
                       .element_size = 1, .width = extent.width, .height = extent.height, .pitch = pitchedDevPtr.pitch);
    else
        SIM_CAPTURE_CHECK(sim_capture_refuse(stream));
    return sim_result(fill3d(pitchedDevPtr, value, extent));
}

/* ---- texture objects: handles that remember what they describe ---- */

cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject, const struct cudaResourceDesc *pResDesc,
                                    const struct cudaTextureDesc *pTexDesc,
                                    const struct cudaResourceViewDesc *pResViewDesc)
{
    (void)pResViewDesc;
    if (!pTexObject || !pResDesc || !pTexDesc)
        return sim_result(cudaErrorInvalidValue);
    struct sim_texture *t = calloc(1, sizeof *t);
    if (!t)
        return sim_result(cudaErrorMemoryAllocation);
    t->res = *pResDesc;
    t->tex = *pTexDesc;
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(t, SIM_TEXTURE, 0, t);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(t);
        return sim_result(cudaErrorMemoryAllocation);
    }
    *pTexObject = (cudaTextureObject_t)(uintptr_t)t;
    return cudaSuccess;
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject)
{
    void *t = (void *)(uintptr_t)texObject;
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(t, SIM_TEXTURE);
    if (known)
        sim_table_del(t);
    pthread_mutex_unlock(&sim_lock);
    if (!known)
        return sim_result(cudaErrorInvalidValue);
    free(t);
    return cudaSuccess;
}

cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *pResDesc, cudaTextureObject_t texObject)
{
    if (!pResDesc)
        return sim_result(cudaErrorInvalidValue);
    void *t = (void *)(uintptr_t)texObject;
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(t, SIM_TEXTURE);
    if (known)
        *pResDesc = ((struct sim_texture *)t)->res;
    pthread_mutex_unlock(&sim_lock);
    return known ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

SIM_ALIAS(cudaMemcpy3D_ptds, cudaMemcpy3D);
SIM_ALIAS(cudaMemcpy3DAsync_ptsz, cudaMemcpy3DAsync);
SIM_ALIAS(cudaMemcpy2D_ptds, cudaMemcpy2D);
SIM_ALIAS(cudaMemcpy2DAsync_ptsz, cudaMemcpy2DAsync);
SIM_ALIAS(cudaMemcpy2DToArray_ptds, cudaMemcpy2DToArray);
SIM_ALIAS(cudaMemcpy2DToArrayAsync_ptsz, cudaMemcpy2DToArrayAsync);
SIM_ALIAS(cudaMemcpy2DFromArray_ptds, cudaMemcpy2DFromArray);
SIM_ALIAS(cudaMemcpy2DFromArrayAsync_ptsz, cudaMemcpy2DFromArrayAsync);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
SIM_ALIAS(cudaMemcpyToArray_ptds, cudaMemcpyToArray);
SIM_ALIAS(cudaMemcpyFromArray_ptds, cudaMemcpyFromArray);
#pragma GCC diagnostic pop
SIM_ALIAS(cudaMemset2D_ptds, cudaMemset2D);
SIM_ALIAS(cudaMemset2DAsync_ptsz, cudaMemset2DAsync);
SIM_ALIAS(cudaMemset3D_ptds, cudaMemset3D);
SIM_ALIAS(cudaMemset3DAsync_ptsz, cudaMemset3DAsync);
