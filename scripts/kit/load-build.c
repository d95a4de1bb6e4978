/* Loads a benchmark build of the GPU kit as bench.py does (the CUDA
 * runtime first, its symbols global, then the build), for run.sh --stub:
 * against the driver stub, loading must stop at cuInit with the runtime's
 * message. Prints what went wrong otherwise and exits non-zero.
 *   load-build RUNTIME.so BUILD.so */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: load-build RUNTIME.so BUILD.so\n");
    return 2;
  }
  for (int i = 1; i < 3; ++i)
    if (!dlopen(argv[i], RTLD_NOW | (i == 1 ? RTLD_GLOBAL : RTLD_LOCAL))) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
  printf("loaded without initializing CUDA\n");
  return 0;
}
