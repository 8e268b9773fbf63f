#!/usr/bin/env python3
"""Write the seed corpora of the harnesses in tests/fuzz (run from anywhere; rewrites corpus/).

fuzz_spool inputs follow the compact form described in spool_input.h; the records use
the layout of common/spool_format.h.  The CSV and estimates seeds are small hand-written files
that reach each branch of their readers.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

# common/spool_format.h
REC = struct.Struct("<BBHiQ6Q")
CHUNK = struct.Struct("<IIQQII32x")
HEADER = struct.Struct("<8sIIIIQQQQQQQQII32s1024s32s")
(ALLOC, FREE, LAUNCH, GRAPH_LAUNCH, PUSH, POP, RANGE_START, RANGE_END, MARK, DOMAIN, REGISTER_STRING,
 THREAD_NAME, RUN_BEGIN, RUN_END, ESTIMATE, DECLARE, META, SYMBOL, IMAGE) = range(1, 20)
API_MALLOC, API_FREE, API_LAUNCH = 1, 2, 11
CHUNK_MAGIC = 0x4B4E4843


def header(next_chunk, end_ns=0, backend=b"runtime-interposition", version=1):
    return HEADER.pack(b"WSSPOOL1", version, 4096, 256 * 1024, 64, 4321, 1, 1000, 10, end_ns, next_chunk, 0, 0, 3,
                       1, backend, b"/tmp/t.db", b"0.1.0")


def rec(kind, ns, u=(0, 0, 0, 0, 0, 0), api=0, status=0, text=None):
    u = list(u) + [0] * (6 - len(u))
    ext = 0
    payload = b""
    if text is not None:
        ext = (len(text) + 63) // 64
        u[1] = len(text)
        payload = text + b"\0" * (ext * 64 - len(text))
    return REC.pack(kind, api, ext, status, ns, *u) + payload


def chunk(serial, records, committed=None, seq=0):
    body = b"".join(records)
    n = len(body) // 64
    return CHUNK.pack(CHUNK_MAGIC, serial, 1000 + serial, seq, n if committed is None else committed, 1) + body


def spool_input(flags, chunks, head, parts):
    """The harness's form: flags, chunk count, header prefix, parts of equal length."""
    size = max(len(p) for p in parts)
    body = b"".join(p + b"\0" * (size - len(p)) for p in parts)
    return bytes([flags, len(parts) - 1]) + head + body


X, Y = 0x7F0000001000, 0x7F0000002000


def spool_seeds():
    t1 = [
        rec(IMAGE, 1, (1,), text=b"trace_prog apis"),
        rec(DOMAIN, 2, (5,), text=b"my-domain"),
        rec(REGISTER_STRING, 3, (5, 0, 9), text=b"registered-node"),
        rec(RUN_BEGIN, 4, text=b"batch=1,seq=128"),
        rec(PUSH, 5, (0,), text=b"/model/layer0"),
        rec(ALLOC, 6, (X, 100, 100, 0, 0), api=API_MALLOC),
        rec(SYMBOL, 7, (0x401000, 0, 0, 1), text=b"_Z6kernelPf"),
        rec(LAUNCH, 8, (0x401000, 1 | (1 << 32), 32, 0, 128), api=API_LAUNCH),
        rec(ESTIMATE, 9, (0, 0, 4096), text=b"/model/layer0"),
        rec(DECLARE, 10, (0, 0, 2048, 256), text=b"/model/layer0"),
        rec(PUSH, 11, (5, 0, 9), text=b""),
        rec(MARK, 12, (5, 0, 0, 9), text=b""),
        rec(POP, 13, (5,)),
        rec(FREE, 20, (X,), api=API_FREE),
        rec(POP, 21, (0,)),
        rec(RUN_END, 22),
        rec(META, 23, (5,), text=b"modeltiny"),
        rec(THREAD_NAME, 24, (1001,), text=b"main"),
    ]
    t2 = [
        rec(ALLOC, 20, (X, 200, 200, 0, 0), api=API_MALLOC),  # reuses X at the time thread 1 frees it
        rec(RANGE_START, 25, (0, 0, 77), text=b"cross"),
        rec(ALLOC, 30, (Y, 300, 300, 7, 0), api=API_MALLOC),
        rec(GRAPH_LAUNCH, 31, (0x9000, 0, 0, 7), api=14),
        rec(FREE, 40, (X,), api=API_FREE),
        rec(RANGE_END, 41, (0, 0, 77)),
        rec(FREE, 42, (0x1234,), api=API_FREE, status=1),
    ]
    yield "two-threads", spool_input(1 | 2, 2, header(2, 50), [chunk(1, t1), chunk(2, t2)])
    yield "raw-header", spool_input(0, 2, header(2), [chunk(1, t1), chunk(2, t2)])
    # cut inside a string's continuation records, and a chunk that claims more than it holds
    yield "cut-short", spool_input(1, 1, header(1), [chunk(1, t1, committed=500)[:64 + 64 * 7 + 20]])
    yield "full-chunks", spool_input(1 | 4, 1, header(1), [chunk(1, t2)])
    yield "no-terminator", spool_input(1, 1, header(1, backend=b"b" * 32), [chunk(1, t2)])
    yield "newer-version", spool_input(0, 1, header(1, version=2), [chunk(1, t2)])
    yield "same-thread-twice", spool_input(1, 2, header(2), [chunk(1, t1, seq=0), chunk(1, t2, seq=0)])


def write(name, seeds):
    folder = os.path.join(CORPUS, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.unlink(os.path.join(folder, old))
    for seed, data in seeds:
        with open(os.path.join(folder, seed), "wb") as f:
            f.write(data)


def main():
    write("fuzz_spool", spool_seeds())
    write("fuzz_problem_csv", [
        ("basic", b"id,lower,upper,size\n0,0,4,100\n1,2,6,200\n2,5,9,50\n"),
        ("aligned", b"id,lower,upper,size,alignment\n0,0,10,1000,256\n1,0,10,8,64\n2,10,20,4096,4096\n"),
        ("blanks-crlf", b"id, lower ,upper,size\r\n 7 ,1,3,5\r\n\r\n8,3,4,5\r\n"),
        ("bad-interval", b"id,lower,upper,size\n0,5,5,1\n"),
        ("huge", b"id,lower,upper,size\n0,0,1,18446744073709551615\n1,-9223372036854775808,9223372036854775807,1\n"),
        ("duplicate-id", b"id,lower,upper,size\n0,0,1,1\n0,1,2,1\n"),
        ("extra-column", b"id,lower,upper,size\n0,0,1,1,2,3\n"),
    ])
    write("fuzz_estimates", [
        ("json-nodes", b'{"nodes": {"/m/attn": {"slots": {"0": 1048576, "1": 4096}, "output_bytes": 2097152},'
                       b' "/m/gelu": {"output_bytes": 4194304}}}'),
        ("json-flat", b'{"/m/attn": 1052672, "/m/up": {"slots": {"0": 2621440}}}'),
        ("json-bad", b'{"/m/attn": -1, "x": {"slots": {"a": 1}}, "y": {"other": 2}}'),
        ("csv", b"node,slot,bytes\n/m/attn,0,1048576\n/m/attn,1,4096\n/m/gelu,output,4194304\n"),
        ("csv-quoted", b'# comment\n\n"/m/a,b",0,1\n"/m/""q""",2,9223372036854775807\n'),
        ("csv-bad", b"node,slot\n/m,x,1\n/m,0,99999999999999999999\n"),
        ("ort-stats", b"#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                      b"/m/layers.0/attn_13150923440150542951,4000,0,300,96\n\n,1,2,3,4\n#x\nAdd_7, 1 ,0,0,0\r\n"),
        ("ort-stats-bad", b"#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\r\n"
                          b"a,1,2,3\nb,1,2,3,4,5\nc,18446744073709551615,1,1,1\n"),
    ])


if __name__ == "__main__":
    main()
