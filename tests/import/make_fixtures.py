#!/usr/bin/env python3
"""Write the importer fixtures of tests/import/fixtures/ (standard library only).

Nsight Systems exports are made to the documented SQLite schema of two versions:
  nsys_2021.sqlite   the 2021.5 layout (no PROCESSES, META_DATA_EXPORT, ENUM_* or ThreadNames
                     tables; CUDA_GPU_MEMORY_USAGE_EVENTS without the memory-pool columns)
  nsys_2024.sqlite   the 2024.6 layout (EXPORT_SCHEMA_VERSION 3.16.1: greenContextId,
                     localMemoryPool*, callchainId, PROCESSES, MPI_RANKS, ENUM_* tables)
  nsys_renamed.sqlite  a "newer" export whose CUDA_GPU_MEMORY_USAGE_EVENTS renames memKind
  foreign.sqlite     the database of another program
PyTorch snapshots are pickled dicts of the documented structure (torch/cuda/memory.py):
  torch_2_0.pickle   blocks with 'history', trace entries without 'time_us' (protocol 2)
  torch_2_1.pickle   blocks with 'frames'/'requested_size', entries with 'time_us' (protocol 4)
  torch_truncated.pickle, torch_global.pickle, torch_stack_global.pickle: hostile files

tests/import/test_import.c derives its expected counts from the comments below.
"""
import os
import pickle
import sqlite3
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def gtid(pid, tid):
    return (pid << 24) | tid


def gpid(pid):
    return pid << 24


# ---- Nsight Systems ----------------------------------------------------------------------------

COMMON_2021 = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL,
  bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT,
  correlationId INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL,
  nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
"""

EXTRA_2024 = """
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE MPI_RANKS (globalTid INTEGER NOT NULL, rank INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, startTime INTEGER NOT NULL,
  stopTime INTEGER NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34,'NvtxMark','NvtxMark'), (59,'NvtxPushPopRange','NvtxPushPopRange'),
  (60,'NvtxStartEndRange','NvtxStartEndRange'), (75,'NvtxDomainCreate','NvtxDomainCreate');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),
  (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'), (2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),
  (3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'), (4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
  (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),
  (6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'), (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION','Allocation'),
  (1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION','Deallocation');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION','2024.6.2.225'), ('EXPORT_SCHEMA_VERSION','3.16.1');
"""


def nsys(path, version, renamed=False):
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    schema = COMMON_2021
    if version == 2024:
        # 2024.6 adds columns to existing tables (read by name, so their position does not matter)
        schema = schema.replace("contextId INTEGER NOT NULL, streamId", "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId")
        schema = schema.replace("shortName INTEGER NOT NULL, launchType", "shortName INTEGER NOT NULL, mangledName INTEGER, launchType")
        schema = schema.replace("sharedMemoryExecuted INTEGER);", "sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);")
        schema = schema.replace("returnValue INTEGER NOT NULL);", "returnValue INTEGER NOT NULL, callchainId INTEGER);")
        schema = schema.replace("jsonText TEXT);", "jsonText TEXT, binaryData TEXT);")
        schema = schema.replace("correlationId INTEGER);\nCREATE TABLE TARGET",
                                "correlationId INTEGER, localMemoryPoolAddress INTEGER, localMemoryPoolReleaseThreshold INTEGER,"
                                " localMemoryPoolSize INTEGER, localMemoryPoolUtilizedSize INTEGER, importedMemoryPoolAddress INTEGER,"
                                " importedMemoryPoolProcessId INTEGER);\nCREATE TABLE TARGET")
        schema += EXTRA_2024
    if renamed:
        schema = schema.replace("memKind INTEGER NOT NULL", "memoryKind INTEGER NOT NULL")
    db.executescript(schema)
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    A, AW, B = gtid(100, 100), gtid(100, 101), gtid(200, 200)
    nvtx = "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, endGlobalTid, textId, domainId) VALUES (?,?,?,?,?,?,?,?)"
    # Process A (pid 100): threads 100 (main) and 101.
    #   push ranges on 100: model [500,9500) > model/layer0 [1000,5000) > model/layer0/matmul [2000,3000);
    #                       model > model/layer1 [6000,9000)
    #   domain 1 "MyDomain": push range io [4000,4500) on 101 (registered string)
    #   start/end range prefetch [1500,7000) from 101 to 100; mark checkpoint at 8000 on 100
    db.execute(nvtx, (10, None, 75, "MyDomain", AW, None, None, 1))
    db.execute(nvtx, (500, 9500, 59, "model", A, None, None, 0))
    db.execute(nvtx, (1000, 5000, 59, "model/layer0", A, None, None, 0))
    db.execute(nvtx, (2000, 3000, 59, None, A, None, sid("model/layer0/matmul"), 0))
    db.execute(nvtx, (6000, 9000, 59, "model/layer1", A, None, None, 0))
    db.execute(nvtx, (4000, 4500, 59, None, AW, None, sid("io"), 1))
    db.execute(nvtx, (1500, 7000, 60, "prefetch", AW, A, None, 0))
    db.execute(nvtx, (8000, None, 34, "checkpoint", A, None, None, 0))
    rt = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?,?,?,?,?,?,?)"
    mem = ("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS(start, globalPid, deviceId, contextId, address, pc, bytes, %s,"
           " memoryOperationType, name, correlationId) VALUES (?,?,?,?,?,?,?,?,?,?,?)") % ("memoryKind" if renamed else "memKind")
    calls = [  # (start, thread, corr, name, ret)
        (2100, A, 1, "cudaMalloc", 0), (2800, A, 2, "cudaFree", 0), (2200, A, 3, "cudaMalloc", 0),
        (6500, A, 4, "cudaFree", 0), (2500, A, 5, "cudaLaunchKernel", 0), (6200, A, 6, "cudaLaunchKernel", 0),
        (7000, A, 7, "cudaMalloc", 0), (300, A, 8, "cudaMallocHost", 0), (8500, A, 9, "cudaMalloc", 2),
        (8600, A, 10, "cudaGraphLaunch", 0)]
    for start, t, corr, name, ret in calls:
        db.execute(rt, (start, start + 40, 1, t, corr, sid(name), ret))
    # memory events of A (at call start + 50): kind 2 device, 1 pinned, 5 device static
    #   0x1000 1024 B in matmul, freed in matmul (workspace)
    #   0x2000 4096 B in matmul, freed in layer1 (activation)
    #   0x3000 2048 B in layer1, never freed (persistent)
    #   0x9000 512 B pinned host memory at 350 (outside every range)
    #   0x5000 256 B device static at 50, no correlation id (main thread, outside every range: unattributed)
    #   peak live device bytes of A: 256 + 1024 + 4096 = 5376
    for row in [(2150, 1, 0x1000, 1024, 2, 0), (2850, 2, 0x1000, 1024, 2, 1), (2250, 3, 0x2000, 4096, 2, 0),
                (6550, 4, 0x2000, 4096, 2, 1), (7050, 7, 0x3000, 2048, 2, 0), (350, 8, 0x9000, 512, 1, 0)]:
        start, corr, addr, size, kind, op = row
        db.execute(mem, (start, gpid(100), 0, 1, addr, 0, size, kind, op, None, corr))
    db.execute(mem, (50, gpid(100), 0, 0, 0x5000, 0, 256, 5, 0, "__cudart_table", 0))
    kern = ("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, correlationId, globalPid,"
            " demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,"
            " staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    db.execute(kern, (2600, 2700, 0, 1, 7, 5, gpid(100), sid("gemm_kernel<float>"), sid("gemm_kernel"), 32, 4, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1))
    db.execute(kern, (6300, 6400, 0, 1, 7, 6, gpid(100), sid("relu"), sid("relu"), 16, 8, 1, 1, 256, 1, 1, 0, 64, 0, 0, 2))
    db.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0, 'default', 'Hostname', 1, 'node-a')")
    if version == 2024:
        # Process B (pid 200, rank 1): model/layer0 [1000,4000) on 200, a 8192 B allocation at the
        # same address as A's first one (0x1000) from 1150 to 3050: a workspace.  Peak 8192.
        db.execute(nvtx, (1000, 4000, 59, "model/layer0", B, None, None, 0))
        db.execute(rt, (1100, 1140, 1, B, 1, sid("cudaMalloc"), 0))
        db.execute(rt, (3000, 3040, 1, B, 2, sid("cudaFree"), 0))
        db.execute(mem, (1150, gpid(200), 0, 1, 0x1000, 0, 8192, 2, 0, None, 1))
        db.execute(mem, (3050, gpid(200), 0, 1, 0x1000, 0, 8192, 2, 1, None, 2))
        db.executemany("INSERT INTO ThreadNames VALUES (?, 0, ?)", [(sid("main"), A), (sid("loader"), AW), (sid("main"), B)])
        db.executemany("INSERT INTO PROCESSES VALUES (?, ?, ?)", [(gpid(100), 100, "python train.py"), (gpid(200), 200, "python train.py")])
        db.executemany("INSERT INTO MPI_RANKS VALUES (?, ?)", [(A, 0), (B, 1)])
        db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '')")
        db.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, 10000, 0, 10000)")
    db.commit()
    db.close()


def foreign(path):
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada');")
    db.commit()
    db.close()


# ---- PyTorch snapshots ---------------------------------------------------------------------------

S, S2, S3 = 0x7F0000000000, 0x7F0000200000, 0x7F0000400000


def frames():
    torch_frame = {"filename": "/usr/lib/python3/site-packages/torch/nn/functional.py", "line": 1500, "name": "linear"}
    cpp = {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"}
    attn = [cpp, torch_frame, {"filename": "/home/user/proj/model.py", "line": 10, "name": "attn"},
            {"filename": "/home/user/proj/train.py", "line": 3, "name": "<module>"}]
    mlp = [cpp, {"filename": "/usr/lib/python3/site-packages/mylib/layers.py", "line": 20, "name": "mlp"},
           {"filename": "/home/user/proj/train.py", "line": 4, "name": "<module>"}]
    init = [{"filename": "/home/user/proj/init.py", "line": 5, "name": "load"}]
    return attn, mlp, init


def events(with_time):
    """Device 0's trace.  Node occurrences (frame rule): model.py:10:attn (events 2-5),
    layers.py:20:mlp (6-8), model.py:10:attn again (9-); all inside the run 'torch device 0'.
      S        1024 B  alloc in attn#1, freed in attn#1            -> workspace
      S+1024   2048 B  alloc in attn#1, freed in mlp               -> activation
      S+4096    512 B  alloc in mlp, freed in attn#2               -> activation
      S+8192    256 B  alloc in attn#2, never freed                -> persistent
      oom (1 TiB), a snapshot mark, a free of an unknown address (api_errors),
      segments: S (2 MiB) allocated in the trace, S2 (1 MiB) allocated and freed."""
    attn, mlp, init = frames()
    ev = [
        {"action": "segment_alloc", "addr": S, "size": 2 << 20, "stream": 0},
        {"action": "alloc", "addr": S, "size": 1024, "stream": 0, "frames": attn},
        {"action": "alloc", "addr": S + 1024, "size": 2048, "stream": 0, "frames": attn},
        {"action": "free_requested", "addr": S, "size": 1024, "stream": 0, "frames": attn},
        {"action": "free_completed", "addr": S, "size": 1024, "stream": 0, "frames": attn},
        {"action": "alloc", "addr": S + 4096, "size": 512, "stream": 0, "frames": mlp},
        {"action": "free_requested", "addr": S + 1024, "size": 2048, "stream": 0, "frames": mlp},
        {"action": "free_completed", "addr": S + 1024, "size": 2048, "stream": 0, "frames": mlp},
        {"action": "alloc", "addr": S + 8192, "size": 256, "stream": 0, "frames": attn},
        {"action": "free_requested", "addr": S + 4096, "size": 512, "stream": 0, "frames": attn},
        {"action": "free_completed", "addr": S + 4096, "size": 512, "stream": 0, "frames": attn},
        {"action": "oom", "device_free": 123, "size": 1 << 40, "stream": 0, "frames": attn},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0},
        {"action": "free_requested", "addr": 0xDEAD, "size": 64, "stream": 0},
        {"action": "segment_alloc", "addr": S2, "size": 1 << 20, "stream": 0},
        {"action": "segment_free", "addr": S2, "size": 1 << 20, "stream": 0},
    ]
    if with_time:
        for i, e in enumerate(ev):
            e["time_us"] = 1700000000000000 + i  # microseconds since the epoch
    return ev, attn, init


def snapshot(version):
    """State at snapshot time: segment S holds S+8192 (in the trace) and S+16384, a 4096 B block
    (4000 requested) allocated before the recorded history by init.py:5:load; segment S3 (1 MiB,
    not in the trace) holds one 1 MiB block without frames.  Both blocks become unattributed
    allocations at the start of the trace.  Peak live device bytes: 4096 + 1048576 + 3072."""
    ev, attn, init = events(version == "2.1")
    if version == "2.1":
        blocks = [{"address": S, "size": 8192, "requested_size": 0, "state": "inactive", "frames": []},
                  {"address": S + 8192, "size": 256, "requested_size": 256, "state": "active_allocated", "frames": attn},
                  {"address": S + 8448, "size": 7936, "requested_size": 0, "state": "inactive", "frames": []},
                  {"address": S + 16384, "size": 4096, "requested_size": 4000, "state": "active_allocated", "frames": init}]
        seg3 = [{"address": S3, "size": 1 << 20, "requested_size": 1 << 20, "state": "active_allocated", "frames": []}]
        common = {"segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False, "frames": []}
    else:  # PyTorch 2.0: no block address (it follows from the sizes), frames in 'history'
        blocks = [{"size": 8192, "state": "inactive", "history": []},
                  {"size": 256, "state": "active_allocated", "history": [{"addr": S + 8192, "real_size": 256, "frames": attn}]},
                  {"size": 7936, "state": "inactive", "history": []},
                  {"size": 4096, "state": "active_allocated", "history": [{"addr": S + 16384, "real_size": 4000, "frames": init}]}]
        seg3 = [{"size": 1 << 20, "state": "active_allocated", "history": []}]
        common = {"segment_type": "large"}
    segments = [dict(device=0, address=S, total_size=2 << 20, allocated_size=256 + 4096, active_size=256 + 4096,
                     stream=0, blocks=blocks, **common),
                dict(device=0, address=S3, total_size=1 << 20, allocated_size=1 << 20, active_size=1 << 20,
                     stream=0, blocks=seg3, **common)]
    snap = {"segments": segments, "device_traces": [ev, []]}
    if version == "2.1":
        snap["allocator_settings"] = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1}
    return snap


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + os.path.join(OUT, "PWNED"),))


def main():
    os.makedirs(OUT, exist_ok=True)
    nsys(os.path.join(OUT, "nsys_2021.sqlite"), 2021)
    nsys(os.path.join(OUT, "nsys_2024.sqlite"), 2024)
    nsys(os.path.join(OUT, "nsys_renamed.sqlite"), 2024, renamed=True)
    foreign(os.path.join(OUT, "foreign.sqlite"))
    with open(os.path.join(OUT, "torch_2_0.pickle"), "wb") as f:
        pickle.dump(snapshot("2.0"), f, protocol=2)
    data = pickle.dumps(snapshot("2.1"), protocol=4)
    with open(os.path.join(OUT, "torch_2_1.pickle"), "wb") as f:
        f.write(data)
    with open(os.path.join(OUT, "torch_truncated.pickle"), "wb") as f:
        f.write(data[: len(data) * 3 // 5])
    with open(os.path.join(OUT, "torch_global.pickle"), "wb") as f:
        pickle.dump({"segments": [], "device_traces": [Evil()]}, f, protocol=2)
    with open(os.path.join(OUT, "torch_stack_global.pickle"), "wb") as f:
        pickle.dump({"segments": [], "device_traces": [Evil()]}, f, protocol=4)


if __name__ == "__main__":
    main()
