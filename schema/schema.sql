-- wstrace trace schema, version 2 (PRAGMA user_version = 2).
-- A public interface: every table and column is documented in schema/README.md.
-- Times are nanoseconds of CLOCK_MONOTONIC of the traced process; sizes are bytes;
-- addresses and stream handles are stored as signed 64-bit integers (SQLite has no unsigned).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
) WITHOUT ROWID;

CREATE TABLE strings (
    id    INTEGER PRIMARY KEY,
    value TEXT NOT NULL UNIQUE
);

CREATE TABLE threads (
    id       INTEGER PRIMARY KEY,        -- 1, 2, ... in order of first record
    os_tid   INTEGER NOT NULL,
    name_id  INTEGER REFERENCES strings(id),
    first_ns INTEGER,
    last_ns  INTEGER,
    process_id INTEGER NOT NULL DEFAULT 1 REFERENCES processes(id) -- every row reaches its process here
);

CREATE TABLE domains (
    id      INTEGER PRIMARY KEY,         -- 0 is the default NVTX domain / explicit API; one row per name
    name_id INTEGER REFERENCES strings(id)
);

CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    thread_id    INTEGER NOT NULL REFERENCES threads(id),
    shape_key_id INTEGER REFERENCES strings(id),
    start_ns     INTEGER NOT NULL,
    end_ns       INTEGER                 -- NULL when the run never ended
);

CREATE TABLE ranges (
    id        INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    end_thread_id INTEGER REFERENCES threads(id),
    name_id   INTEGER REFERENCES strings(id),
    domain_id INTEGER NOT NULL DEFAULT 0,
    kind      TEXT NOT NULL,             -- 'push' (push/pop, thread nested) or 'startend'
    source    TEXT NOT NULL,             -- 'nvtx' or 'api'
    parent_id INTEGER REFERENCES ranges(id),
    depth     INTEGER NOT NULL,          -- 0 for an outermost push range
    run_id    INTEGER REFERENCES runs(id),
    start_ns  INTEGER NOT NULL,
    end_ns    INTEGER                    -- NULL when never closed
);

CREATE TABLE allocations (
    id              INTEGER PRIMARY KEY, -- in order of the allocation call
    api             TEXT NOT NULL,       -- cudaMalloc, cudaMallocAsync, ...
    memory          TEXT NOT NULL,       -- 'device', 'managed', 'host' or 'region' (NVTX memory extension)
    device          INTEGER NOT NULL,
    address         INTEGER,             -- NULL when the call failed
    requested_bytes INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,    -- bytes obtained (pitch * height for cudaMallocPitch); 0 on failure
    status          INTEGER NOT NULL,    -- cudaError_t returned; 0 = success
    stream          INTEGER,
    thread_id       INTEGER NOT NULL REFERENCES threads(id),
    range_id        INTEGER REFERENCES ranges(id), -- innermost open push range (the node)
    run_id          INTEGER REFERENCES runs(id),
    alloc_ns        INTEGER NOT NULL,
    free_ns         INTEGER,             -- NULL: never freed while traced
    free_api        TEXT,
    free_thread_id  INTEGER REFERENCES threads(id),
    free_range_id   INTEGER REFERENCES ranges(id),
    free_stream     INTEGER
);

CREATE TABLE api_errors (                -- failed frees and other failed calls that free nothing
    id        INTEGER PRIMARY KEY,
    api       TEXT NOT NULL,
    status    INTEGER NOT NULL,
    address   INTEGER,
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    range_id  INTEGER REFERENCES ranges(id),
    ns        INTEGER NOT NULL
);

CREATE TABLE launches (
    id             INTEGER PRIMARY KEY,
    api            TEXT NOT NULL,        -- cudaLaunchKernel, __cudaLaunchKernel, cudaGraphLaunch, ...
    kernel_name_id INTEGER REFERENCES strings(id),
    function       INTEGER,              -- host stub / function address as seen by the runtime
    grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER,
    shared_bytes   INTEGER,
    stream         INTEGER,
    status         INTEGER NOT NULL,
    thread_id      INTEGER NOT NULL REFERENCES threads(id),
    range_id       INTEGER REFERENCES ranges(id),
    run_id         INTEGER REFERENCES runs(id),
    ns             INTEGER NOT NULL
);

CREATE TABLE declarations (
    id           INTEGER PRIMARY KEY,
    level        INTEGER NOT NULL,       -- 1 = estimate before the kernel exists, 2 = kernel declaration
    node_name_id INTEGER NOT NULL REFERENCES strings(id),
    slot         INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    alignment    INTEGER NOT NULL,       -- 0 = default
    thread_id    INTEGER NOT NULL REFERENCES threads(id),
    range_id     INTEGER REFERENCES ranges(id),
    run_id       INTEGER REFERENCES runs(id),
    ns           INTEGER NOT NULL
);

CREATE TABLE marks (
    id        INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    name_id   INTEGER REFERENCES strings(id),
    domain_id INTEGER NOT NULL DEFAULT 0,
    range_id  INTEGER REFERENCES ranges(id),
    ns        INTEGER NOT NULL
);

CREATE TABLE registered_strings (        -- nvtxDomainRegisterString handles
    domain_id INTEGER NOT NULL,
    handle    INTEGER NOT NULL,
    string_id INTEGER NOT NULL REFERENCES strings(id),
    process_id INTEGER NOT NULL DEFAULT 1 REFERENCES processes(id), -- handles are per process
    PRIMARY KEY (process_id, domain_id, handle)
) WITHOUT ROWID;

-- NVTX: event attributes, category names, ends that closed nothing, and the memory extension
-- (nvToolsExtMem.h).  Attribute rows exist only for ranges and marks that carry one.
CREATE TABLE range_attributes (
    range_id     INTEGER PRIMARY KEY REFERENCES ranges(id),
    category     INTEGER,                -- NULL: category 0 (none)
    color        INTEGER,                -- ARGB; NULL: no colour
    payload_type TEXT,                   -- uint64, int64, double, uint32, int32, float, extension, unknown
    payload                              -- INTEGER or REAL; NULL without a payload
);

CREATE TABLE mark_attributes (
    mark_id      INTEGER PRIMARY KEY REFERENCES marks(id),
    category     INTEGER,
    color        INTEGER,
    payload_type TEXT,
    payload
);

CREATE TABLE categories (                -- nvtxNameCategory / nvtxDomainNameCategory
    domain_id INTEGER NOT NULL,
    category  INTEGER NOT NULL,
    name_id   INTEGER NOT NULL REFERENCES strings(id),
    PRIMARY KEY (domain_id, category)
) WITHOUT ROWID;

CREATE TABLE range_errors (              -- pops and ends that had nothing to close
    id        INTEGER PRIMARY KEY,
    kind      TEXT NOT NULL,             -- 'pop' or 'end'
    api       TEXT NOT NULL,             -- nvtxRangePop, nvtxDomainRangePop, nvtxRangeEnd, nvtxDomainRangeEnd, wstrace
    domain_id INTEGER NOT NULL,
    range_ref INTEGER,                   -- 'end': the range id passed
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    range_id  INTEGER REFERENCES ranges(id), -- innermost range open on the thread
    ns        INTEGER NOT NULL
);

CREATE TABLE memory_heaps (              -- nvtxMemHeapRegister
    id            INTEGER PRIMARY KEY,
    domain_id     INTEGER NOT NULL,
    handle        INTEGER NOT NULL,      -- as returned to the program (the heap's address when it has one)
    usage         TEXT NOT NULL,         -- 'sub-allocator', 'layout' or 'unknown'
    type          TEXT NOT NULL,         -- 'virtual-address' or 'unknown'
    address       INTEGER,
    bytes         INTEGER,
    name_id       INTEGER REFERENCES strings(id),
    category      INTEGER,
    allocation_id INTEGER REFERENCES allocations(id), -- traced allocation the heap lies in
    thread_id     INTEGER NOT NULL REFERENCES threads(id),
    range_id      INTEGER REFERENCES ranges(id),
    run_id        INTEGER REFERENCES runs(id),
    register_ns   INTEGER NOT NULL,
    end_ns        INTEGER,               -- NULL: still registered when tracing ended
    end_api       TEXT,                  -- nvtxMemHeapUnregister, or the free of its allocation
    regions       INTEGER NOT NULL,      -- regions registered in it
    resets        INTEGER NOT NULL       -- nvtxMemHeapReset calls
);

CREATE TABLE memory_regions (            -- the allocations rows with memory = 'region'
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    heap_id       INTEGER REFERENCES memory_heaps(id), -- NULL: the process-wide heap
    container_id  INTEGER REFERENCES allocations(id),  -- traced allocation the region lies in
    memory        TEXT,                  -- memory of that allocation: 'device', 'managed', 'host'; NULL unknown
    domain_id     INTEGER NOT NULL,
    resizes       INTEGER NOT NULL
);

CREATE TABLE memory_region_resizes (     -- nvtxMemRegionsResize
    allocation_id INTEGER NOT NULL REFERENCES allocations(id),
    bytes         INTEGER NOT NULL,
    thread_id     INTEGER NOT NULL REFERENCES threads(id),
    range_id      INTEGER REFERENCES ranges(id),
    ns            INTEGER NOT NULL
);

CREATE TABLE allocation_names (          -- nvtxMemRegionsName, and names given with a heap
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    name_id       INTEGER NOT NULL REFERENCES strings(id),
    category      INTEGER
);

-- Processes, ranks and provenance (version 2).  Every row of the tables above reaches its
-- process through its thread (threads.process_id); a trace written by the tracer holds one
-- process, id 1.  Imported and merged traces hold one row per process they bring in.
CREATE TABLE processes (
    id                 INTEGER PRIMARY KEY,
    pid                INTEGER,
    ppid               INTEGER,
    host               TEXT,
    boot_id            TEXT,             -- kernel boot id: equal ids share one CLOCK_MONOTONIC
    rank               INTEGER,          -- RANK / OMPI_COMM_WORLD_RANK / PMI_RANK / SLURM_PROCID, MPI_RANKS
    local_rank         INTEGER,
    world_size         INTEGER,
    source             TEXT NOT NULL,    -- how the rows were captured: 'tracer', 'nsys', 'torch-snapshot'
    origin             TEXT,             -- file they were read from (spool, Nsight report, snapshot)
    merged_from        TEXT,             -- trace a merge took them from; NULL when not merged
    command_line       TEXT,
    start_ns           INTEGER,          -- on this trace's timeline
    end_ns             INTEGER,
    start_time_unix_ns INTEGER,          -- wall clock at start_ns
    clock_offset_ns    INTEGER NOT NULL DEFAULT 0, -- added to the process's own times to reach this timeline
    clean_exit         INTEGER,
    lost_records       INTEGER
);

CREATE TABLE process_meta (              -- the meta rows of each process a merge brought in
    process_id INTEGER NOT NULL REFERENCES processes(id),
    key        TEXT NOT NULL,
    value,
    PRIMARY KEY (process_id, key)
) WITHOUT ROWID;

CREATE TABLE stacks (                    -- call stacks (imported PyTorch frames), innermost frame at depth 0
    id     INTEGER PRIMARY KEY,
    frames INTEGER NOT NULL
);

CREATE TABLE stack_frames (
    stack_id    INTEGER NOT NULL REFERENCES stacks(id),
    depth       INTEGER NOT NULL,
    function_id INTEGER REFERENCES strings(id),
    file_id     INTEGER REFERENCES strings(id),
    line        INTEGER,
    PRIMARY KEY (stack_id, depth)
) WITHOUT ROWID;

CREATE TABLE allocation_stacks (         -- the stack that made an allocation, when the source recorded one
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    stack_id      INTEGER NOT NULL REFERENCES stacks(id)
);


-- CUDA graphs and stream capture.  Calls made while their stream captures are captured_calls,
-- not allocations or launches; what a graph launch runs is allocations and launches rows with
-- api 'cudaGraphLaunch', linked to the launch by graph_launch_work.
CREATE TABLE captures (                  -- one row per capture sequence
    id             INTEGER PRIMARY KEY,  -- in order of the begin calls
    capture_id     INTEGER,              -- the runtime's id of the sequence (cudaStreamGetCaptureInfo)
    begin_api      TEXT NOT NULL,        -- cudaStreamBeginCapture[ToGraph][_ptsz]
    mode           TEXT NOT NULL,        -- 'global', 'thread-local' or 'relaxed'
    stream         INTEGER NOT NULL,     -- the stream that began it
    graph          INTEGER,              -- the graph it captured into / returned
    end_status     INTEGER,              -- cudaStreamEndCapture's result; NULL: never ended while traced
    thread_id      INTEGER NOT NULL REFERENCES threads(id),
    range_id       INTEGER REFERENCES ranges(id),
    run_id         INTEGER REFERENCES runs(id),
    begin_ns       INTEGER NOT NULL,
    end_ns         INTEGER,
    calls          INTEGER NOT NULL,     -- rows of captured_calls
    allocations    INTEGER NOT NULL,
    frees          INTEGER NOT NULL,
    kernels        INTEGER NOT NULL,
    graph_launches INTEGER NOT NULL
);

CREATE TABLE captured_calls (            -- calls recorded into a graph instead of being run
    id             INTEGER PRIMARY KEY,
    capture_id     INTEGER REFERENCES captures(id), -- NULL: a capture begun before tracing
    api            TEXT NOT NULL,
    kind           TEXT NOT NULL,        -- 'allocation', 'free', 'kernel' or 'graph launch'
    address        INTEGER,              -- allocation: the address it returned; free: the address
    bytes          INTEGER,              -- allocation: bytes requested
    function       INTEGER,              -- kernel: host stub or handle; graph launch: the instance
    kernel_name_id INTEGER REFERENCES strings(id),
    stream         INTEGER,
    status         INTEGER NOT NULL,
    thread_id      INTEGER NOT NULL REFERENCES threads(id),
    range_id       INTEGER REFERENCES ranges(id),
    ns             INTEGER NOT NULL
);

CREATE TABLE graph_execs (               -- one row per instantiation, and per cudaGraphExecUpdate
    id          INTEGER PRIMARY KEY,
    handle      INTEGER NOT NULL,        -- cudaGraphExec_t
    graph       INTEGER,                 -- the graph instantiated (for an update: the update's)
    api         TEXT NOT NULL,
    flags       INTEGER NOT NULL,        -- cudaGraphInstantiateFlags (1 = AutoFreeOnLaunch)
    capture_id  INTEGER REFERENCES captures(id),    -- the capture that made the graph
    previous_id INTEGER REFERENCES graph_execs(id), -- an update: the structure it replaced
    nodes       INTEGER NOT NULL,        -- rows of graph_nodes (child graphs inlined)
    kernels     INTEGER NOT NULL,
    allocations INTEGER NOT NULL,        -- memory allocation nodes
    frees       INTEGER NOT NULL,        -- memory free nodes
    complete    INTEGER NOT NULL,        -- 1: every node was recorded
    thread_id   INTEGER NOT NULL REFERENCES threads(id),
    range_id    INTEGER REFERENCES ranges(id),
    run_id      INTEGER REFERENCES runs(id),
    ns          INTEGER NOT NULL,
    end_ns      INTEGER,                 -- destroyed or updated; NULL: alive at the end
    end_api     TEXT,                    -- cudaGraphExecDestroy or cudaGraphExecUpdate
    launches    INTEGER NOT NULL
);

CREATE TABLE graph_nodes (               -- the nodes of an instance, in the order it runs them
    graph_exec_id  INTEGER NOT NULL REFERENCES graph_execs(id),
    position       INTEGER NOT NULL,     -- 0, 1, ... in launch order
    depth          INTEGER NOT NULL,     -- child-graph nesting (0: the instantiated graph)
    type           TEXT NOT NULL,        -- kernel, memcpy, memset, host, empty, event-wait, event-record,
                                         -- semaphore-signal, semaphore-wait, mem-alloc, mem-free, batch-mem-op, conditional
    handle         INTEGER,              -- cudaGraphNode_t
    kernel_name_id INTEGER REFERENCES strings(id),
    function       INTEGER,
    grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER,
    shared_bytes   INTEGER,
    address        INTEGER,              -- mem-alloc, mem-free: the address; memcpy, memset: the destination
    bytes          INTEGER,              -- mem-alloc: bytes; memset, memcpy: bytes (elements for arrays)
    PRIMARY KEY (graph_exec_id, position)
) WITHOUT ROWID;

CREATE TABLE graph_launches (            -- one row per cudaGraphLaunch that was run (not captured)
    id            INTEGER PRIMARY KEY,
    graph_exec_id INTEGER REFERENCES graph_execs(id), -- NULL: an instance made before tracing
    launch_id     INTEGER REFERENCES launches(id),    -- the launches row of the call
    stream        INTEGER,
    status        INTEGER NOT NULL,
    thread_id     INTEGER NOT NULL REFERENCES threads(id),
    range_id      INTEGER REFERENCES ranges(id),
    run_id        INTEGER REFERENCES runs(id),
    ns            INTEGER NOT NULL,
    kernels       INTEGER NOT NULL,      -- what it ran
    allocations   INTEGER NOT NULL,
    frees         INTEGER NOT NULL
);

CREATE TABLE graph_launch_work (         -- the rows each graph launch made, node by node
    graph_launch_id INTEGER NOT NULL REFERENCES graph_launches(id),
    position        INTEGER NOT NULL,    -- graph_nodes.position of the node
    launch_id       INTEGER REFERENCES launches(id),       -- kernel node: the kernel's launches row
    allocation_id   INTEGER REFERENCES allocations(id),    -- mem-alloc: the allocation made; mem-free: the one freed
    PRIMARY KEY (graph_launch_id, position)
) WITHOUT ROWID;

-- CUDA arrays, and memory pools: what each reserves against what is in use, over time.
CREATE TABLE array_allocations (         -- the allocations rows of cudaMallocArray & co.
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    kind          TEXT NOT NULL,         -- 'array', '3d-array' or 'mipmapped-array'
    width         INTEGER NOT NULL,      -- in elements
    height        INTEGER NOT NULL,      -- 0: one-dimensional
    depth         INTEGER NOT NULL,      -- 0: not three-dimensional
    levels        INTEGER NOT NULL,      -- mipmap levels (1 for the others)
    flags         INTEGER NOT NULL,
    bits_x INTEGER, bits_y INTEGER, bits_z INTEGER, bits_w INTEGER, -- channel bits
    format        TEXT                   -- 'signed', 'unsigned', 'float', 'none', or the cudaChannelFormatKind number
);

CREATE TABLE memory_pools (
    id          INTEGER PRIMARY KEY,
    handle      INTEGER NOT NULL,        -- cudaMemPool_t; 0 for a device's graph allocator
    kind        TEXT NOT NULL,           -- 'created' (cudaMemPoolCreate), 'device' (a device's current pool,
                                         -- seen through cudaMallocAsync), 'graph' (graph memory nodes), 'other'
    device      INTEGER,
    max_bytes   INTEGER,                 -- cudaMemPoolProps.maxSize when set
    thread_id   INTEGER NOT NULL REFERENCES threads(id),
    range_id    INTEGER REFERENCES ranges(id),
    ns          INTEGER NOT NULL,        -- created, or first seen
    destroy_ns  INTEGER,
    allocations INTEGER NOT NULL         -- rows of pool_allocations
);

CREATE TABLE pool_allocations (          -- which pool each stream-ordered or graph allocation came from
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    pool_id       INTEGER NOT NULL REFERENCES memory_pools(id)
);

CREATE TABLE pool_samples (              -- a pool's state each time what it reserves changed
    pool_id             INTEGER NOT NULL REFERENCES memory_pools(id),
    api                 TEXT NOT NULL,   -- the call after which it was read
    reserved_bytes      INTEGER NOT NULL,
    used_bytes          INTEGER NOT NULL,
    reserved_high_bytes INTEGER NOT NULL,
    used_high_bytes     INTEGER NOT NULL,
    release_threshold   INTEGER,         -- NULL for a graph allocator
    thread_id           INTEGER NOT NULL REFERENCES threads(id),
    ns                  INTEGER NOT NULL
);

CREATE TABLE pool_operations (           -- trims, attribute changes, destroys, current-pool changes
    pool_id   INTEGER REFERENCES memory_pools(id),
    api       TEXT NOT NULL,
    status    INTEGER NOT NULL,
    attribute INTEGER,                   -- cudaMemPoolSetAttribute: the cudaMemPoolAttr
    value     INTEGER,                   -- the value set; trim: the bytes to keep; current pool: the device
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    range_id  INTEGER REFERENCES ranges(id),
    ns        INTEGER NOT NULL
);

-- Driver virtual memory: where physical memory (the allocations rows of cuMemCreate, whose address
-- is the allocation handle) is mapped, and the address ranges reserved for mappings.
CREATE TABLE vmm_mappings (              -- one row per cuMemMap
    id              INTEGER PRIMARY KEY,
    allocation_id   INTEGER REFERENCES allocations(id), -- the cuMemCreate row of the handle; NULL: made untraced
    handle          INTEGER NOT NULL,    -- CUmemGenericAllocationHandle
    address         INTEGER NOT NULL,    -- where the mapping starts
    bytes           INTEGER NOT NULL,
    offset          INTEGER NOT NULL,    -- into the physical memory
    device          INTEGER NOT NULL,    -- the calling thread's device
    status          INTEGER NOT NULL,    -- the CUresult; 0 = mapped
    thread_id       INTEGER NOT NULL REFERENCES threads(id),
    range_id        INTEGER REFERENCES ranges(id),
    map_ns          INTEGER NOT NULL,
    unmap_ns        INTEGER,             -- cuMemUnmap; NULL: still mapped at the end, or failed
    unmap_thread_id INTEGER REFERENCES threads(id)
);

CREATE TABLE vmm_reservations (          -- one row per cuMemAddressReserve
    id                INTEGER PRIMARY KEY,
    address           INTEGER,           -- the range reserved; NULL when the call failed
    bytes             INTEGER NOT NULL,
    alignment         INTEGER NOT NULL,
    requested_address INTEGER,           -- the address asked for; NULL: any
    status            INTEGER NOT NULL,
    thread_id         INTEGER NOT NULL REFERENCES threads(id),
    range_id          INTEGER REFERENCES ranges(id),
    reserve_ns        INTEGER NOT NULL,
    free_ns           INTEGER,           -- cuMemAddressFree; NULL: still reserved at the end
    free_thread_id    INTEGER REFERENCES threads(id)
);

-- The layer each api of the trace came through: runtime (cuda*, __cuda*), driver (cu*), nvtx,
-- wstrace (the explicit API), or imported (a trace made by `wstrace import`).
CREATE VIEW api_layers AS
WITH apis(api) AS (
    SELECT api FROM allocations
    UNION SELECT free_api FROM allocations WHERE free_api IS NOT NULL
    UNION SELECT api FROM launches
    UNION SELECT api FROM api_errors
    UNION SELECT api FROM captured_calls
    UNION SELECT api FROM graph_execs
    UNION SELECT begin_api FROM captures
    UNION SELECT api FROM range_errors
    UNION SELECT api FROM pool_samples
    UNION SELECT api FROM pool_operations
)
SELECT api,
       CASE WHEN COALESCE((SELECT value FROM meta WHERE key = 'capture_backend'), 'runtime-interposition')
                 <> 'runtime-interposition' THEN 'imported'
            WHEN api = 'wstrace' THEN 'wstrace'
            WHEN api GLOB 'nvtx*' THEN 'nvtx'
            WHEN api GLOB 'cuda*' OR api GLOB '__cuda*' THEN 'runtime'
            WHEN api GLOB 'cu[A-Z]*' THEN 'driver'
            ELSE 'imported' END AS layer
FROM apis;

-- Successful device-side allocations (device and managed memory) with names resolved.
CREATE VIEW device_allocations AS
SELECT a.id, a.api, a.memory, a.device, a.address, a.bytes, a.alloc_ns, a.free_ns,
       a.thread_id, a.range_id, r.name AS node, a.run_id, t.process_id
FROM allocations a
LEFT JOIN (SELECT ranges.id, strings.value AS name FROM ranges JOIN strings ON strings.id = ranges.name_id) r
       ON r.id = a.range_id
LEFT JOIN threads t ON t.id = a.thread_id
WHERE a.status = 0 AND a.memory IN ('device', 'managed');

-- Live device bytes after every allocation and free, per process and device, in time order.
CREATE VIEW live_bytes AS
WITH ev AS (
    SELECT process_id, device, alloc_ns AS ns, 0 AS ord, id, bytes AS delta FROM device_allocations
    UNION ALL
    SELECT process_id, device, free_ns AS ns, 1 AS ord, id, -bytes AS delta FROM device_allocations
    WHERE free_ns IS NOT NULL
)
SELECT device, ns, delta,
       SUM(delta) OVER (PARTITION BY process_id, device ORDER BY ns, ord, id ROWS UNBOUNDED PRECEDING) AS live_bytes,
       process_id
FROM ev;

-- Per node name: allocation calls, bytes, and kernel launches.
CREATE VIEW node_allocation_totals AS
SELECT s.value AS node,
       COUNT(a.id)                        AS allocations,
       COALESCE(SUM(a.bytes), 0)          AS allocated_bytes,
       COALESCE(MAX(a.bytes), 0)          AS largest_bytes,
       (SELECT COUNT(*) FROM launches l JOIN ranges r2 ON r2.id = l.range_id
         WHERE r2.name_id = s.id)         AS launches
FROM strings s
JOIN ranges r ON r.name_id = s.id
LEFT JOIN allocations a ON a.range_id = r.id AND a.status = 0 AND a.memory IN ('device', 'managed')
GROUP BY s.id;

-- Version 2: what wstrace_declare adds to a declaration (device, tactic, regions of a root).
-- Declarations made with the older calls have no row here.
CREATE TABLE declaration_details (
    declaration_id INTEGER PRIMARY KEY REFERENCES declarations(id),
    device         INTEGER,                       -- CUDA device ordinal; NULL: any device
    tactic_id      INTEGER REFERENCES strings(id), -- the tactic's name; NULL: none given
    tactic_kind    TEXT                           -- NULL | cached | cached-free | miss
);

CREATE TABLE declaration_regions (
    declaration_id INTEGER NOT NULL REFERENCES declarations(id),
    ordinal        INTEGER NOT NULL,               -- 0, 1, ... in the order declared
    name_id        INTEGER REFERENCES strings(id),
    offset         INTEGER NOT NULL,               -- from the start of the slot's root
    bytes          INTEGER NOT NULL,
    PRIMARY KEY (declaration_id, ordinal)
) WITHOUT ROWID;

PRAGMA user_version = 2;

-- @indexes: created after the tables are filled (the collector loads first, then indexes).
-- The per-event tables (allocations, launches) carry no index beyond their rowid: building one
-- costs more than loading them, and SQLite builds a transient index for a join that needs one.
CREATE INDEX ranges_name ON ranges(name_id);
CREATE INDEX declarations_node ON declarations(node_name_id, slot, level);
