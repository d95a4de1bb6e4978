// flashnorm-gpu-mma converts the fragments flashnorm-gpu-kernels writes and
// refuses, before touching anything, a kernel whose fragments it cannot
// place: here a fragment two steps wide (8 x 32) read across its buffer's
// rows (a lane's 16 bytes must run along k), a fragment of a shared ring
// whose rows ldmatrix cannot read, and slices of a 16 x 16 fragment other
// than the halves that are two n-tiles' weight fragments.
// RUN: flashnorm-opt %s -verify-diagnostics --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))'

#contract = {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
func.func @paired_across_rows(%a: memref<16x32xbf16>, %w: memref<32x8xbf16>, %y: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{flashnorm-gpu-mma: a tensor-core kernel it cannot convert: a fragment two steps wide whose k is not its buffer's last dimension}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : bf16
    %acc = arith.constant dense<0.0> : vector<16x8xf32>
    %fa = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x32xbf16>, vector<16x32xbf16>
    %fb = vector.transfer_read %w[%c0, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<32x8xbf16>, vector<8x32xbf16>
    %r = vector.contract #contract %fa, %fb, %acc : vector<16x32xbf16>, vector<8x32xbf16> into vector<16x8xf32>
    vector.transfer_write %r, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.terminator
  }
  return
}


// A stage of a shared ring whose rows are not a multiple of 16 bytes (36
// halves): no ldmatrix (its rows must be 16-byte aligned), and a fragment
// of a 3-D buffer has no other load.
func.func @unaligned_ring(%y: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{flashnorm-gpu-mma: a tensor-core kernel it cannot convert: a fragment that is not a 2-D block of a 2-D buffer}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) workgroup(%ring : memref<2x16x36xf16, #gpu.address_space<workgroup>>) {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %acc = arith.constant dense<0.0> : vector<16x8xf32>
    %fa = vector.transfer_read %ring[%c1, %c0, %c0], %pad {in_bounds = [true, true]} : memref<2x16x36xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
    %fb = vector.transfer_read %ring[%c0, %c0, %c0], %pad {in_bounds = [true, true]} : memref<2x16x36xf16, #gpu.address_space<workgroup>>, vector<8x16xf16>
    %r = vector.contract #contract %fa, %fb, %acc : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %r, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.terminator
  }
  return
}

// A ring in the block's dynamic shared memory at 8 bytes from its start:
// its rows are not 16-byte aligned whatever the strides, so no ldmatrix
// either.
func.func @unaligned_view(%y: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %bytes = arith.constant 5128 : i32
  // expected-error @+1 {{flashnorm-gpu-mma: a tensor-core kernel it cannot convert: a fragment that is not a 2-D block of a 2-D buffer}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) dynamic_shared_memory_size %bytes {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %acc = arith.constant dense<0.0> : vector<16x8xf32>
    %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %ring = memref.view %raw[%c8][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x16x40xf16, #gpu.address_space<workgroup>>
    %fa = vector.transfer_read %ring[%c1, %c0, %c0], %pad {in_bounds = [true, true]} : memref<2x16x40xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
    %fb = vector.transfer_read %ring[%c0, %c0, %c0], %pad {in_bounds = [true, true]} : memref<2x16x40xf16, #gpu.address_space<workgroup>>, vector<8x16xf16>
    %r = vector.contract #contract %fa, %fb, %acc : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %r, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.terminator
  }
  return
}

// Rows 4-11 of a 16 x 16 fragment: a lane holds rows g and g + 8, so only
// the halves (rows 0-7, 8-15) are weight fragments of its registers.
func.func @quarter_slice(%a: memref<16x16xf16>, %w: memref<16x16xf16>, %y: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{flashnorm-gpu-mma: a tensor-core kernel it cannot convert: a slice of a fragment other than half of a 16 x 16 or 16 x 32 one (two weight fragments)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %acc = arith.constant dense<0.0> : vector<16x8xf32>
    %fa = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %both = vector.transfer_read %w[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %fb = vector.extract_strided_slice %both {offsets = [4, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf16> to vector<8x16xf16>
    %r = vector.contract #contract %fa, %fb, %acc : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %r, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.terminator
  }
  return
}

// The halves of a weight read past its buffer's rows: the padded rows would
// read the last row again, which is right for A's rows only (and for an A
// fragment's halves multiplying that A: TensorCoreTile's sums of squares,
// where they reach only products with a padded row).
func.func @split_past_edge(%a: memref<16x16xf16>, %w: memref<12x16xf16>, %y: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{flashnorm-gpu-mma: a tensor-core kernel it cannot convert: a weight fragment past its buffer's edge}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %acc = arith.constant dense<0.0> : vector<16x8xf32>
    %fa = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %both = vector.transfer_read %w[%c0, %c0], %pad {in_bounds = [false, true]} : memref<12x16xf16>, vector<16x16xf16>
    %fb = vector.extract_strided_slice %both {offsets = [8, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf16> to vector<8x16xf16>
    %r = vector.contract #contract %fa, %fb, %acc : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %r, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.terminator
  }
  return
}
