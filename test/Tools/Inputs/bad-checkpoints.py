"""Writes safetensors files that are broken in every way a reader must
catch, plus a good one to break plans against, into the directory argv[1]:

  good.safetensors      w [2, 3] F32, g [3] F32 (and metadata)
  half.safetensors      w [2, 3] F16, tiny
  dup.safetensors       g again (a shard set with a duplicate)
  short.safetensors     5 bytes: no header length
  huge-header           the length says 2^40
  past-end              the header needs more bytes than the file has
  not-json              the header is not JSON
  bad-dtype             dtype Q7
  bad-size              [2, 3] F32 in 20 bytes
  beyond                data_offsets past the end of the data
  overlap               two tensors on the same bytes
  dup-name              one name twice in a header (the JSON keeps the last)
  hole                  bytes in the data section no tensor holds
  deep                  a header nested 50 000 deep (a recursive parser's stack)
  unindexable           [2^63 - 1, 0]: no bytes, but loops over 2^63 rows
  empty                 w [4, 0] F32, g [0] F32: no elements (folds to nothing)
  nan-gain              good's w, and a g holding a NaN and an inf
  colsum                w [2, 3] BF16, for a plan of column sums
"""
import json
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def write(name, header, data=b"", raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


w = struct.pack("<6f", 1, 2, 3, -2, -3, -4)
g = struct.pack("<3f", 2.0, 0.5, 1.0)
entry = lambda dtype, shape, b, e: {"dtype": dtype, "shape": shape,
                                    "data_offsets": [b, e]}
write("good.safetensors", {"__metadata__": {"format": "pt"},
                           "w": entry("F32", [2, 3], 0, 24),
                           "g": entry("F32", [3], 24, 36)}, w + g)
write("dup.safetensors", {"g": entry("F32", [3], 0, 12)}, g)
write("nan-gain.safetensors", {"w": entry("F32", [2, 3], 0, 24),
                               "g": entry("F32", [3], 24, 36)},
      w + struct.pack("<3f", 2.0, float("nan"), float("inf")))
# f16 weights of about 2e-4: times a gain of 1e-4, every product is below
# f16's normal range (6.1e-5) and rounds to 0.
write("half.safetensors", {"w": entry("F16", [2, 3], 0, 12)},
      struct.pack("<6e", 2e-4, -2e-4, 1.5e-4, 2e-4, 1e-4, -2e-4))
with open(os.path.join(out, "short.safetensors"), "wb") as f:
    f.write(b"\x05\x00\x00\x00\x00")
with open(os.path.join(out, "huge-header.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", 1 << 40) + b"{}")
with open(os.path.join(out, "past-end.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", 4096) + b'{"w": {}}')
write("not-json.safetensors", None, w, raw_header=b'{"w": {"dtype": ')
write("bad-dtype.safetensors", {"w": entry("Q7", [2, 3], 0, 24)}, w)
write("bad-size.safetensors", {"w": entry("F32", [2, 3], 0, 20)}, w)
write("beyond.safetensors", {"w": entry("F32", [2, 3], 8, 32)}, w)
write("overlap.safetensors", {"w": entry("F32", [2, 3], 0, 24),
                              "v": entry("F32", [3], 12, 24)}, w)

write("dup-name.safetensors", None, w, raw_header=(
    b'{"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, '
    b'"w": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]}}'))
write("hole.safetensors", {"w": entry("F32", [3], 0, 12)}, w)
write("deep.safetensors", None, b"",
      raw_header=b'{"a": ' + b"[" * 50000 + b"]" * 50000 + b"}")
write("unindexable.safetensors", {"w": entry("F32", [2**63 - 1, 0], 0, 0)})
write("empty.safetensors", {"w": entry("F32", [4, 0], 0, 0),
                            "g": entry("F32", [0], 0, 0)})

# Plans against good.safetensors: one that applies, and one broken each way.
def plan(name, tensors, drop=(), raw=None, loads=None):
    p = {"format": "flashnorm-fold-plan", "version": 1, "tensors": tensors,
         "drop": list(drop)}
    if loads is not None:
        p["loads"] = loads
    with open(os.path.join(out, name), "w") as f:
        f.write(raw if raw is not None else json.dumps(p))


def scale(**over):
    t = {"name": "w.flashnorm", "op": "scale", "source": "w",
         "source_dtype": "F32", "source_shape": [2, 3], "dtype": "F32",
         "shape": [2, 3], "axis": 1, "center": False,
         "vector": {"tensor": "g", "scale": 1.0, "offset": 1.0}}
    t.update(over)
    return t


good = [scale(), {
    "name": "w.bias", "op": "contract", "source": "w", "source_dtype": "F32",
    "source_shape": [2, 3], "dtype": "F32", "shape": [2], "axis": 1,
    "vector": {"values": [1.0, 2.0, 3.0]}}]
plan("good.json", good, drop=["w"])
# The program also loads 'e', from a shard not given.
plan("missing-shard.json", good, drop=["w"],
     loads=["w.flashnorm", "w.bias", "g", "e"])
plan("loads-dropped.json", good, drop=["w"], loads=["w", "g"])
# The plan of IR folded before: it loads what the first plan computed.
plan("folded-before.json", [], loads=["w.flashnorm", "g"])
# "loads" a name, not a list of them: the check of every load was skipped.
plan("loads-string.json", good, drop=["w"], loads="e")
plan("vector-both.json",
     [scale(vector={"tensor": "g", "values": [1.0, 2.0, 3.0]})])
plan("missing-source.json", [scale(source="nope")])
plan("shape-mismatch.json", [scale(source_shape=[3, 2], shape=[3, 2],
                                   axis=0)])
plan("dtype-mismatch.json", [scale(source_dtype="BF16", dtype="BF16")])
plan("missing-gain.json", [scale(vector={"tensor": "gone"})])
plan("gain-size.json", [scale(axis=0, vector={"tensor": "g"})])
plan("collision.json", [scale(name="g")])
plan("drop-missing.json", [], drop=["nope"])
plan("not-a-plan.json", [], raw='{"format": "something else"}')
plan("bad-values.json", [scale(vector={"values": [1.0, 2.0]})])
plan("bad-shape.json", [scale(shape=[6])])
plan("center-bf16.json", [scale(source_dtype="BF16", dtype="BF16",
                                center=True)])
plan("overflow.json", [scale(vector={"values": [1e38, 1e38, 1e38]})])
half = dict(source_dtype="F16", dtype="F16")
plan("underflow.json", [scale(vector={"values": [1e-4, 1e-4, 1e-4]}, **half)])
# One product per output down there (2e-4 * 1e-2) beside normal ones.
plan("few-underflow.json",
     [scale(vector={"values": [1e-2, 1e4, 1e4]}, **half)])
plan("metadata-name.json", [scale(name="__metadata__")])
plan("center-string.json", [scale(center="true")])
bias = {"name": "w.bias", "op": "contract", "source": "w",
        "source_dtype": "F32", "source_shape": [2, 3], "dtype": "F16",
        "shape": [2], "axis": 1, "vector": {"values": [1e5, 1e5, 1e5]}}
plan("bias-overflow.json", [bias])
plan("center-bias.json", [dict(bias, dtype="F32", center=True)])
# Column sums of a folded bf16 weight (a deferred LayerNorm's): w times 1/3
# rounds to bf16 (1/3 -> 0.333984375), so the sums of the folded weight
# (2.001953125, -3.00390625) are not those of the unrounded products (2,
# -3).
write("colsum.safetensors", {"w": entry("BF16", [2, 3], 0, 12)},
      struct.pack("<6H", 0x3F80, 0x4000, 0x4040, 0xC000, 0xC040, 0xC080))
third = {"values": [1 / 3, 1 / 3, 1 / 3]}
colsum = {"name": "w.flashnorm_colsum", "op": "column_sums", "source": "w",
          "source_dtype": "BF16", "source_shape": [2, 3], "dtype": "F32",
          "shape": [2], "axis": 1, "vector": third}
plan("colsum.json", [scale(source_dtype="BF16", dtype="BF16", vector=third),
                     colsum], drop=["w"])
plan("colsum-center.json", [dict(colsum, center=True)])
plan("deep.json", None, raw='{"format": ' + "[" * 50000 + "]" * 50000 + "}")
plan("unindexable.json", [dict(bias, source_shape=[0, 2**62 + 1, 4],
                               dtype="F32", shape=[4], axis=0,
                               vector={"values": []})])
plan("empty.json", [scale(source_shape=[4, 0], shape=[4, 0],
                          vector={"tensor": "g"}),
                    dict(bias, source_shape=[4, 0], dtype="F32", shape=[4],
                         vector={"values": []})],
     drop=["w"])
