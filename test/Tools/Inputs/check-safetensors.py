"""Checks a safetensors file as strictly as the reference reader does and
prints one line per tensor (name, dtype, shape, values for small float
tensors) and its metadata:

  check-safetensors.py FILE [--same-bytes OTHER NAME ...]

Strict: the header length makes the data start 8-byte aligned, tensors
cover the data section exactly (sorted by offset, no holes, no overlap),
each tensor's size is its shape times its dtype's width and its offset is a
multiple of that width. --same-bytes: each NAME holds the same bytes in
FILE and OTHER.
"""
import json
import struct
import sys

WIDTH = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
         "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    return n, header, data[8 + n:]


def fail(msg):
    print("BAD:", msg)
    sys.exit(1)


path = sys.argv[1]
n, header, body = read(path)
if (8 + n) % 8:
    fail("data section not 8-byte aligned")
meta = header.pop("__metadata__", {})
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
    b, e = t["data_offsets"]
    width = WIDTH[t["dtype"]]
    count = 1
    for d in t["shape"]:
        count *= d
    if b != end:
        fail(f"{name} starts at {b}, the previous tensor ends at {end}")
    if e - b != count * width:
        fail(f"{name} holds {e - b} bytes, needs {count * width}")
    if b % width:
        fail(f"{name} at {b} is not aligned to {width}")
    end = e
    line = f"{name} {t['dtype']} {t['shape']}"
    if t["dtype"] == "F32" and count <= 8:
        values = struct.unpack(f"<{count}f", body[b:e])
        line += " " + " ".join(f"{v:g}" for v in values)
    print(line)
if end != len(body):
    fail(f"the tensors cover {end} bytes of {len(body)}")
for k in sorted(meta):
    print(f"metadata {k}: {meta[k]}")
if "--same-bytes" in sys.argv:
    i = sys.argv.index("--same-bytes")
    _, other, obody = read(sys.argv[i + 1])
    for name in sys.argv[i + 2:]:
        b, e = header[name]["data_offsets"]
        ob, oe = other[name]["data_offsets"]
        print(f"{name}: {'same bytes' if body[b:e] == obody[ob:oe] else 'DIFFERENT'}")
