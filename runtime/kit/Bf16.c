/*===- Bf16.c - f32 -> bf16 for host code compiled ahead of time ---------===*/
/*
 * LLVM lowers `fptrunc float to bfloat` on x86-64 without AVX512-BF16 to a
 * call of the compiler runtime's __truncsfbf2, which libgcc has only from
 * GCC 13 on (Debian 12 ships GCC 12); mlir-runner's JIT finds it elsewhere.
 * The kit's programs get it from here: round to nearest even, NaN kept quiet.
 * The result is returned in an XMM register as LLVM expects for bfloat,
 * which is how _Float16 is returned too: the bits are the bf16's.
 */
#include <stdint.h>
#include <string.h>

_Float16 __truncsfbf2(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  uint16_t out;
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    out = (uint16_t)((bits >> 16) | 0x40u); /* NaN: quiet, sign kept */
  else
    out = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  _Float16 result;
  memcpy(&result, &out, sizeof result);
  return result;
}
