#!/usr/bin/env python3
"""Writes a module of N groups of functions whose lowering reads callees.

Each group has a device function (@double<i>, a kernel's worth of work), a
driver that hands it buffers (@call<i>), an entry that calls the driver with
no buffers (@entry<i>: its verdict reads @call<i> and @double<i>), a helper
that writes a mutable global (@bump<i>, a device function itself) and a
function that names that global and calls the helper (@uses<i>: it stays on
the host). Callees come first: the pass manager hands neighbouring functions
to its threads together, so a pass that read a callee would read it while
another thread rewrites it.

Usage: many-callees.py N
"""
import sys

DOUBLE = """func.func @double{i}(%x: memref<2x8xf32>, %y: memref<2x8xf32>) {{
  linalg.generic {{indexing_maps = [#map, #map],
                  iterator_types = ["parallel", "parallel"]}}
      ins(%x : memref<2x8xf32>) outs(%y : memref<2x8xf32>) {{
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }}
  return
}}"""

CALL = """func.func @call{i}(%shift: index) {{
  %x = memref.alloc() : memref<2x8xf32>
  %y = memref.alloc() : memref<2x8xf32>
  call @double{i}(%x, %y) : (memref<2x8xf32>, memref<2x8xf32>) -> ()
  memref.dealloc %x : memref<2x8xf32>
  memref.dealloc %y : memref<2x8xf32>
  return
}}"""

ENTRY = """func.func @entry{i}() {{
  %c0 = arith.constant 0 : index
  call @call{i}(%c0) : (index) -> ()
  return
}}"""

BUMP = """func.func @bump{i}() {{
  %g = memref.get_global @state{i} : memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = arith.constant 5.0 : f32
  memref.store %v, %g[%c0] : memref<4xf32>
  return
}}"""

USES = """func.func @uses{i}(%x: memref<4xf32>, %out: memref<4xf32>) {{
  %s = memref.get_global @state{i} : memref<4xf32>
  linalg.add ins(%s, %x : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  call @bump{i}() : () -> ()
  linalg.add ins(%s, %out : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}}"""


def main():
    n = int(sys.argv[1])
    print("#map = affine_map<(d0, d1) -> (d0, d1)>")
    for i in range(n):
        print(f'memref.global "private" @state{i} : memref<4xf32> = dense<0.0>')
        for text in [DOUBLE, CALL, ENTRY, BUMP, USES]:
            print(text.format(i=i))


if __name__ == "__main__":
    main()
