/*
 * On-disk format of a wstrace spool (FILE.spool): written by libtrace/, read by collector/.
 *
 * Layout: a 4096-byte header, then chunks of WS_CHUNK_BYTES.  Each thread owns the chunk it
 * is filling; a chunk starts with a 64-byte ws_chunk_header followed by 64-byte records.  A
 * writer fills a record (and its string continuation records) and only then publishes it by a
 * release-store of chunk->committed (see ws_rec_commit() in libtrace/tracer.h), or, for a record
 * of one slot, by a release-store of its own head (WS_REC_PUBLISHED, below); a reader trusts only
 * the records so published (see chunk_readable() in collector/spool_reader.c).  The file is mapped
 * MAP_SHARED, so every published record is in the page cache and survives a SIGKILL of the traced
 * process.
 */
#ifndef WS_SPOOL_FORMAT_H
#define WS_SPOOL_FORMAT_H

#include <stdint.h>

#define WS_SPOOL_MAGIC        "WSSPOOL1"
#define WS_SPOOL_VERSION      3u /* 2: NVTX attributes and memory extension; declarations with details; 3: clock */
#define WS_SPOOL_HEADER_BYTES 4096u
#define WS_CHUNK_BYTES        (256u * 1024u)
#define WS_REC_BYTES          64u
#define WS_CHUNK_RECS         ((WS_CHUNK_BYTES / WS_REC_BYTES) - 1u)
#define WS_CHUNK_MAGIC        0x4b4e4843u /* "CHNK" */
#define WS_MAX_STRING         4096u       /* longer names are truncated (counted in truncated_strings) */

enum ws_rec_type {
    WS_REC_NONE = 0,
    WS_REC_ALLOC,        /* api, status, u0=ptr, u1=requested, u2=bytes, u3=stream, u4=device|memory<<32, u5=aux */
    WS_REC_FREE,         /* api, status, u0=ptr, u3=stream */
    WS_REC_LAUNCH,       /* api, status, u0=func, u1=grid (ws_pack_dim3), u2=block (ws_pack_dim3), u3=stream, u4=smem */
    WS_REC_GRAPH_LAUNCH, /* api, status, u0=graph exec, u3=stream */
    WS_REC_PUSH,         /* u0=domain, u1=string length, u2=registered handle (0 = inline string), attributes, string */
    WS_REC_POP,          /* u0=domain, status = depth reported to the caller (negative: nothing to pop) */
    WS_REC_RANGE_START,  /* u0=domain, u1=string length, u2=range id, u3=registered handle, attributes, string */
    WS_REC_RANGE_END,    /* u0=domain, u2=range id */
    WS_REC_MARK,         /* u0=domain, u1=string length, u3=registered handle, attributes, string */
    WS_REC_DOMAIN,       /* u0=domain handle, u1=string length, string */
    WS_REC_REGISTER_STRING, /* u0=domain, u1=string length, u2=handle, string */
    WS_REC_THREAD_NAME,     /* u0=os tid, u1=string length, string */
    WS_REC_RUN_BEGIN,       /* u1=string length (shape key), string */
    WS_REC_RUN_END,
    WS_REC_ESTIMATE, /* u0=slot, u1=string length (node), u2=bytes, string */
    WS_REC_DECLARE,  /* u0=slot, u1=string length (node), u2=bytes, u3=alignment, string */
    WS_REC_META,     /* u0=key length, u1=string length (key then value, no NUL between), string */
    WS_REC_SYMBOL,   /* u0=function address, u1=string length, string */
    WS_REC_IMAGE,    /* a program image started tracing: u0=exec count, u1=string length (cmdline), string */
    /* NVTX categories and the NVTX memory extension (nvToolsExtMem.h) */
    WS_REC_CATEGORY,       /* u0=domain, u1=string length, u2=category, string */
    WS_REC_MEM_HEAP,       /* u0=domain, u2=heap handle, u3=address, u4=bytes, u5=ws_mem_heap_pack() */
    WS_REC_MEM_HEAP_END,   /* api nvtxMemHeapUnregister or nvtxMemHeapReset: u0=domain, u2=heap handle */
    WS_REC_MEM_REGION,     /* u0=domain, u2=heap handle (0: the process-wide heap), u3=address, u4=bytes */
    WS_REC_MEM_RESIZE,     /* u0=domain, u3=address, u4=bytes */
    WS_REC_MEM_UNREGISTER, /* u0=domain, u3=address */
    WS_REC_MEM_NAME,       /* u0=domain, u1=string length, u2=registered handle, u3=address (or heap handle when u4=1),
                              u5=category, string */
    /* wstrace_declare: u0=slot, u1=string length (node, NUL, tactic), u2=bytes, u3=alignment,
     * u4=level | tactic kind << 8 | (uint32_t)device << 32 (device -1: any), u5=regions that follow */
    WS_REC_DECLARE2,
    /* one region of the thread's last WS_REC_DECLARE2: u0=offset, u1=string length (name),
     * u2=bytes, u3=ordinal, string */
    WS_REC_REGION,
    /* CUDA graphs, stream capture, arrays and memory pools (libtrace/hooks_graph.c, hooks_memory.c) */
    WS_REC_CAPTURE_BEGIN, /* api, status, u0=stream, u1=capture id, u2=mode, u3=graph, u5=device */
    WS_REC_CAPTURE_END, /* api, status, u0=stream, u1=capture id (0: the stream was not capturing), u2=graph returned */
    WS_REC_CAPTURED,    /* the thread's next record (api u2 on stream u1) was captured by capture u0, not run */
    WS_REC_GRAPH_EXEC,  /* api (an instantiation or cudaGraphExecUpdate), status, u0=exec, u1=graph, u2=flags;
                           on success GRAPH_NODE records follow in launch order, then GRAPH_END */
    WS_REC_GRAPH_NODE,  /* status=cudaGraphNodeType | child-graph depth << 16, u0=node handle; kernel: u1=function,
                           u2=grid, u3=block (ws_pack_dim3), u4=shared bytes; memcpy: u1=dst, u2=bytes, u3=src;
                           memset: u1=dst, u2=bytes; mem alloc: u1=address, u2=bytes, u3=device; mem free: u1=address;
                           event record, event wait: u1=event; host: u1=function */
    WS_REC_GRAPH_END,   /* status=0, or the error of the query that stopped the walk, u0=exec, u1=node records */
    WS_REC_GRAPH_DESTROY,  /* cudaGraphExecDestroy: status, u0=exec */
    WS_REC_GRAPH_NODE_SET, /* api, status, u0=exec, u1=node; kernel parameters: u2=function, u3=grid, u4=block, u5=smem;
                              cudaGraphNodeSetEnabled: u2=enabled */
    WS_REC_GRAPH_LAUNCH_BEGIN, /* stamped before a cudaGraphLaunch call: u0=exec (its GRAPH_LAUNCH follows) */
    WS_REC_ARRAY,              /* follows the ALLOC of an array: u0=handle, u1=width, u2=height, u3=depth,
                                  u4=levels | flags << 32, u5=ws_pack_channel() */
    WS_REC_POOL,               /* api, status, u0=pool; cudaMemPoolCreate: u1=device, u2=maximum size;
                                  cudaMemPoolTrimTo: u1=bytes to keep; cudaMemPoolSetAttribute: u1=attribute,
                                  u2=value; cudaDeviceSetMemPool: u1=device */
    WS_REC_POOL_STATE,         /* api that prompted it, u0=pool (0: the graph allocator), u1=reserved, u2=used,
                                  u3=reserved high, u4=used high, u5=release threshold (graph allocator: device) */
    /* driver virtual memory (libtrace/hooks_driver.c), by api: cuMemMap: u0=address, u1=bytes, u2=offset,
       u3=physical handle, u4=device; cuMemUnmap: u0=address, u1=bytes; cuMemAddressReserve: u0=address
       returned, u1=bytes, u2=alignment, u3=address asked for; cuMemAddressFree: u0=address, u1=bytes;
       cuMemRetainAllocationHandle: u0=address, u3=handle returned (one more reference to it);
       cuMemImportFromShareableHandle: u2=handle type, u3=handle returned (memory of another owner) */
    WS_REC_VMM,
    WS_REC_TYPE_COUNT
};

enum ws_api {
    WS_API_NONE = 0,
    WS_API_cudaMalloc,
    WS_API_cudaFree,
    WS_API_cudaMallocAsync,
    WS_API_cudaFreeAsync,
    WS_API_cudaMallocFromPoolAsync,
    WS_API_cudaMallocManaged,
    WS_API_cudaMallocPitch,
    WS_API_cudaMallocHost,
    WS_API_cudaHostAlloc,
    WS_API_cudaFreeHost,
    WS_API_cudaLaunchKernel,
    WS_API_cudaLaunchKernelExC,
    WS_API_cudaLaunchCooperativeKernel,
    WS_API_cudaGraphLaunch,
    WS_API___cudaLaunchKernel,
    WS_API___cudaLaunchKernel_ptsz,
    WS_API_nvtx,
    WS_API_wstrace,
    WS_API_nvtxRangePop,
    WS_API_nvtxDomainRangePop,
    WS_API_nvtxRangeEnd,
    WS_API_nvtxDomainRangeEnd,
    WS_API_nvtxMemHeapRegister,
    WS_API_nvtxMemHeapUnregister,
    WS_API_nvtxMemHeapReset,
    WS_API_nvtxMemRegionsRegister,
    WS_API_nvtxMemRegionsResize,
    WS_API_nvtxMemRegionsUnregister,
    WS_API_nvtxMemRegionsName,
    /* graphs and stream capture */
    WS_API_cudaStreamBeginCapture,
    WS_API_cudaStreamBeginCapture_ptsz,
    WS_API_cudaStreamBeginCaptureToGraph,
    WS_API_cudaStreamBeginCaptureToGraph_ptsz,
    WS_API_cudaStreamEndCapture,
    WS_API_cudaStreamEndCapture_ptsz,
    WS_API_cudaGraphInstantiate,
    WS_API_cudaGraphInstantiateWithFlags,
    WS_API_cudaGraphInstantiateWithParams,
    WS_API_cudaGraphInstantiateWithParams_ptsz,
    WS_API_cudaGraphExecUpdate,
    WS_API_cudaGraphExecDestroy,
    WS_API_cudaGraphExecKernelNodeSetParams,
    WS_API_cudaGraphExecNodeSetParams,
    WS_API_cudaGraphNodeSetEnabled,
    WS_API_cudaDeviceGraphMemTrim,
    /* arrays, 3D, host registration, IPC */
    WS_API_cudaMallocArray,
    WS_API_cudaMalloc3DArray,
    WS_API_cudaMallocMipmappedArray,
    WS_API_cudaFreeArray,
    WS_API_cudaFreeMipmappedArray,
    WS_API_cudaMalloc3D,
    WS_API_cudaHostRegister,
    WS_API_cudaHostUnregister,
    WS_API_cudaIpcOpenMemHandle,
    WS_API_cudaIpcCloseMemHandle,
    /* memory pools, and the synchronisations at which pools give memory back */
    WS_API_cudaMemPoolCreate,
    WS_API_cudaMemPoolDestroy,
    WS_API_cudaMemPoolTrimTo,
    WS_API_cudaMemPoolSetAttribute,
    WS_API_cudaDeviceSetMemPool,
    WS_API_cudaMemSetMemPool,
    WS_API_cudaStreamSynchronize,
    WS_API_cudaStreamSynchronize_ptsz,
    WS_API_cudaDeviceSynchronize,
    WS_API_cudaEventSynchronize,
    /* per-thread default stream forms (--default-stream per-thread) of the calls above */
    WS_API_cudaMallocAsync_ptsz,
    WS_API_cudaFreeAsync_ptsz,
    WS_API_cudaMallocFromPoolAsync_ptsz,
    WS_API_cudaLaunchKernel_ptsz,
    WS_API_cudaLaunchKernelExC_ptsz,
    WS_API_cudaLaunchCooperativeKernel_ptsz,
    WS_API_cudaGraphLaunch_ptsz,
    /* the driver API (libtrace/hooks_driver.c, hooks_driver_graph.c): every versioned name hooked; one block,
       cuMemAlloc_v2 first and cuIpcCloseMemHandle last (ws_is_driver_api in libtrace/graph_hooks.h) */
    WS_API_cuMemAlloc_v2,
    WS_API_cuMemAllocPitch_v2,
    WS_API_cuMemAllocManaged,
    WS_API_cuMemAllocHost_v2,
    WS_API_cuMemHostAlloc,
    WS_API_cuMemFree_v2,
    WS_API_cuMemFreeHost,
    WS_API_cuMemAllocAsync,
    WS_API_cuMemAllocAsync_ptsz,
    WS_API_cuMemAllocFromPoolAsync,
    WS_API_cuMemAllocFromPoolAsync_ptsz,
    WS_API_cuMemFreeAsync,
    WS_API_cuMemFreeAsync_ptsz,
    WS_API_cuMemCreate,
    WS_API_cuMemRelease,
    WS_API_cuMemMap,
    WS_API_cuMemUnmap,
    WS_API_cuMemAddressReserve,
    WS_API_cuMemAddressFree,
    WS_API_cuLaunchKernel,
    WS_API_cuLaunchKernel_ptsz,
    WS_API_cuLaunchKernelEx,
    WS_API_cuLaunchKernelEx_ptsz,
    WS_API_cuLaunchCooperativeKernel,
    WS_API_cuLaunchCooperativeKernel_ptsz,
    WS_API_cuGraphLaunch,
    WS_API_cuGraphLaunch_ptsz,
    WS_API_cuGraphInstantiate,
    WS_API_cuGraphInstantiate_v2,
    WS_API_cuGraphInstantiateWithFlags,
    WS_API_cuGraphInstantiateWithParams,
    WS_API_cuGraphInstantiateWithParams_ptsz,
    WS_API_cuGraphExecUpdate,
    WS_API_cuGraphExecUpdate_v2,
    WS_API_cuGraphExecDestroy,
    WS_API_cuGraphExecKernelNodeSetParams,
    WS_API_cuGraphExecKernelNodeSetParams_v2,
    WS_API_cuGraphExecNodeSetParams,
    WS_API_cuGraphNodeSetEnabled,
    WS_API_cuStreamBeginCapture,
    WS_API_cuStreamBeginCapture_ptsz,
    WS_API_cuStreamBeginCapture_v2,
    WS_API_cuStreamBeginCapture_v2_ptsz,
    WS_API_cuStreamBeginCaptureToGraph,
    WS_API_cuStreamBeginCaptureToGraph_ptsz,
    WS_API_cuStreamEndCapture,
    WS_API_cuStreamEndCapture_ptsz,
    WS_API_cuMemPoolCreate,
    WS_API_cuMemPoolDestroy,
    WS_API_cuMemPoolTrimTo,
    WS_API_cuMemPoolSetAttribute,
    WS_API_cuDeviceSetMemPool,
    WS_API_cuMemHostRegister,
    WS_API_cuMemHostRegister_v2,
    WS_API_cuMemHostUnregister,
    WS_API_cuArrayCreate_v2,
    WS_API_cuArray3DCreate_v2,
    WS_API_cuMipmappedArrayCreate,
    WS_API_cuArrayDestroy,
    WS_API_cuMipmappedArrayDestroy,
    WS_API_cuIpcOpenMemHandle,
    WS_API_cuIpcOpenMemHandle_v2,
    WS_API_cuIpcCloseMemHandle,
    WS_API_cuMemRetainAllocationHandle,
    WS_API_cuMemImportFromShareableHandle,
    WS_API_COUNT
};

/* WS_MEM_IPC: device memory of another process, mapped with cudaIpcOpenMemHandle. */
enum ws_memory { WS_MEM_DEVICE = 0, WS_MEM_MANAGED = 1, WS_MEM_HOST = 2, WS_MEM_IPC = 4 };

/* A CUDA channel format (bits per channel, and the cudaChannelFormatKind) in one word. */
static inline uint64_t ws_pack_channel(int x, int y, int z, int w, int kind)
{
    return (uint64_t)(uint8_t)x | (uint64_t)(uint8_t)y << 8 | (uint64_t)(uint8_t)z << 16 | (uint64_t)(uint8_t)w << 24 |
           (uint64_t)(uint32_t)kind << 32;
}

/*
 * NVTX event attributes (PUSH, RANGE_START, MARK): u4 = payload bits, u5 = category | colour << 32,
 * status = payload kind | WS_ATTR_COLOR.  The payload kinds 1-6 are nvtxPayloadType_t's values.
 */
enum ws_payload {
    WS_PAYLOAD_NONE = 0,
    WS_PAYLOAD_U64 = 1,
    WS_PAYLOAD_I64 = 2,
    WS_PAYLOAD_DOUBLE = 3,
    WS_PAYLOAD_U32 = 4,
    WS_PAYLOAD_I32 = 5,
    WS_PAYLOAD_FLOAT = 6,
    WS_PAYLOAD_EXTENSION = 7, /* NVTX_PAYLOAD_TYPE_EXT: u4 = number of binary payloads (not decoded) */
    WS_PAYLOAD_OTHER = 8,     /* a type this version does not know: u4 = the raw bits */
};
#define WS_ATTR_PAYLOAD_MASK 0xffu
#define WS_ATTR_COLOR        0x100u /* an ARGB colour is in the high half of u5 */

/* A heap's usage (NVTX_MEM_HEAP_USAGE_*: 1 sub-allocator, 2 layout), type (NVTX_MEM_TYPE_*) and
 * category in one word. */
#define WS_MEM_TYPE_VIRTUAL_ADDRESS 1u /* NVTX_MEM_TYPE_VIRTUAL_ADDRESS */
static inline uint64_t ws_mem_heap_pack(uint32_t usage, uint32_t type, uint32_t category)
{
    return (uint64_t)(usage > 0xffffu ? 0xffffu : usage) | (uint64_t)(type > 0xffffu ? 0xffffu : type) << 16 |
           (uint64_t)category << 32;
}

/* One fixed-size record.  String payloads follow in `ext` continuation records (raw bytes). */
struct ws_rec {
    union {
        struct {
            uint8_t type;
            uint8_t api;
            uint16_t ext; /* | WS_REC_PUBLISHED: see there */
        };
        uint32_t tag; /* the three above in one word (little-endian) */
    };
    int32_t status;
    uint64_t ns;
    uint64_t u[6];
};

/*
 * Version 3: a record of one slot may publish itself rather than through the chunk's `committed`
 * count: its writer stores every other field, then its tag (type, api, ext) with WS_REC_PUBLISHED
 * set in ext, in one release store (ws_rec_put() in libtrace/tracer.h).  A reader trusts the first `committed`
 * records of a chunk and after them each record so published, up to the first that is not.  Chunks
 * come zeroed from the file and each slot's tag is stored once, so a slot not yet published reads
 * no WS_REC_PUBLISHED (its other fields may be written already: ws_rec_open() in libtrace/tracer.h
 * fills them before the call it records).
 */
#define WS_REC_PUBLISHED 0x8000u
#define WS_REC_EXT_MASK  0x7fffu

struct ws_chunk_header {
    uint32_t magic;
    uint32_t thread_serial; /* 1, 2, ... per process image lineage, in order of first record */
    uint64_t os_tid;
    uint64_t seq;       /* index of this chunk among its thread's chunks */
    uint32_t committed; /* records published; written with release order */
    uint32_t image;     /* exec count of the image that wrote the chunk */
    uint64_t cal_tsc;   /* WS_CLOCK_TSC: a calibration pair taken when the chunk was mapped, */
    uint64_t cal_ns;    /* the counter and CLOCK_MONOTONIC ns at the same moment (0, 0: none) */
    uint8_t pad[16];
};

/* What a record's time counts (ws_spool_header.clock): CLOCK_MONOTONIC nanoseconds, or raw ticks
 * of the time-stamp counter, which readers map to CLOCK_MONOTONIC nanoseconds through the
 * calibration pairs of the header and the chunks (collector/spool_clock.h). */
enum ws_clock { WS_CLOCK_MONOTONIC = 0, WS_CLOCK_TSC = 1 };

struct ws_spool_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t chunk_bytes;
    uint32_t rec_bytes;
    uint64_t pid;
    uint64_t ppid;
    uint64_t start_realtime_ns;
    uint64_t start_ns;          /* CLOCK_MONOTONIC */
    uint64_t end_ns;            /* set by a clean exit; 0 when the process died */
    uint64_t next_chunk;        /* atomic: chunks claimed */
    uint64_t lost_records;      /* atomic: records that could not be kept */
    uint64_t truncated_strings; /* atomic */
    uint32_t next_thread;       /* atomic: thread serials handed out */
    uint32_t images;            /* atomic: exec count */
    char backend[32];           /* NUL-terminated when written by libwstrace; readers bound every string */
    char output[1024];
    char tool_version[32];
    /* Added in place of padding (older spools hold 0 here), so readers need not know them: */
    uint64_t start_ticks;  /* start time of the writing process (/proc/PID/stat field 22): tells the
                              writer from a later process that reuses its pid; 0 when unknown */
    uint64_t collected_ns; /* set once the writer has converted its own spool (it is kept only on
                              request): a later process may then replace it without a warning */
    /* Version 3: */
    uint32_t clock; /* enum ws_clock of the records' times */
    uint32_t pad0;
    uint64_t start_tsc; /* WS_CLOCK_TSC: the counter at start_ns, */
    uint64_t end_tsc;   /* and at end_ns (0 while end_ns is) */
    char boot_id[40];   /* the writer's kernel boot (NUL-terminated; empty when unknown): a reader on the
                           same boot may read the counter itself for one more calibration pair */
    uint8_t pad[WS_SPOOL_HEADER_BYTES - 8 - 16 - 8 * 8 - 8 - 32 - 1024 - 32 - 16 - 24 - 40];
};

_Static_assert(sizeof(struct ws_rec) == WS_REC_BYTES, "record size");
_Static_assert(WS_API_COUNT <= 256, "a record's api is one byte");
_Static_assert(sizeof(struct ws_chunk_header) == WS_REC_BYTES, "chunk header size");
_Static_assert(sizeof(struct ws_spool_header) == WS_SPOOL_HEADER_BYTES, "spool header size");

/* x takes 32 bits, y and z 16 bits each: CUDA's limits are 2^31-1, 65535 and 65535. */
static inline uint64_t ws_pack_dim3(uint32_t x, uint32_t y, uint32_t z)
{
    return (uint64_t)x | ((uint64_t)(y & 0xffffu) << 32) | ((uint64_t)(z & 0xffffu) << 48);
}
static inline uint32_t ws_dim3_x(uint64_t v) { return (uint32_t)v; }
static inline uint32_t ws_dim3_y(uint64_t v) { return (uint32_t)((v >> 32) & 0xffffu); }
static inline uint32_t ws_dim3_z(uint64_t v) { return (uint32_t)((v >> 48) & 0xffffu); }
static inline uint32_t ws_string_recs(uint64_t len) { return (uint32_t)((len + WS_REC_BYTES - 1) / WS_REC_BYTES); }

const char *ws_api_name(unsigned api);

#endif
