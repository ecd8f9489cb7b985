/* kernels/cuda_libs.c — see kernels/cuda_libs.h. */
#include "kernels/cuda_libs.h"

#ifdef HAVE_CUDA
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The sonames: the Makefile reads them from $(CUDA_HOME)/lib64 (objdump -p
 * libcublasLt.so, libnccl.so) and leaves them undefined when it cannot. */
#ifndef CUDA_LIBS_CUBLASLT_SONAME
#error "CUDA_LIBS_CUBLASLT_SONAME: the Makefile read no soname from libcublasLt.so"
#endif
#ifndef CUDA_LIBS_NCCL_SONAME
#error "CUDA_LIBS_NCCL_SONAME: the Makefile read no soname from libnccl.so"
#endif

/* One library's state: 0 not tried, 1 open, -1 failed (why says why). */
typedef struct {
    int state;
    char why[512];
} CudaLib;

/* Opens soname and resolves names[0..n) into fns[0..n); 0, or -1 with
 * lib->why set (a failure is final: lib->state stays -1). what says what
 * the library is for, in the message. */
static int lib_open(CudaLib *lib, const char *soname, const char *what, const char *const *names,
                    void **fns, int n)
{
    lib->state = -1;
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(lib->why, sizeof lib->why,
                 "cannot load %s (%s): %s (searched: LD_LIBRARY_PATH, the program's run path "
                 "with the build's CUDA toolkit lib64, the system's library folders)",
                 soname, what, e ? e : "dlopen failed");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        (void)dlerror();
        fns[i] = dlsym(h, names[i]);
        if (!fns[i]) {
            const char *e = dlerror();
            snprintf(lib->why, sizeof lib->why, "%s has no function %s: %s (a different version "
                     "than the build's headers?)", soname, names[i], e ? e : "dlsym returned NULL");
            dlclose(h);
            return -1;
        }
    }
    lib->state = 1; /* h stays open for the process's life */
    return 0;
}

#define CUDA_LIBS_NAME(prefix, name) #prefix #name,
#define CUDA_LIBS_COUNT(prefix, name) +1

/* The tables are process-wide, as the dlopen handles behind them are:
 * a function-scope static, written once by the first caller. The void *
 * slots are filled in the tables' member order (the X-macro lists). */
const CudaLtApi *cuda_libs_lt(char *err, size_t err_len)
{
    static CudaLib lib;
    static CudaLtApi api;
    static const char *const names[] = {CUDA_LIBS_LT_FUNCS(CUDA_LIBS_NAME)};
    void *fns[0 CUDA_LIBS_LT_FUNCS(CUDA_LIBS_COUNT)];
    _Static_assert(sizeof api == sizeof fns, "CudaLtApi holds exactly the listed pointers");
    if (lib.state == 0 &&
        lib_open(&lib, CUDA_LIBS_CUBLASLT_SONAME, "cuBLASLt, the cuda backend's matrix products",
                 names, fns, (int)(sizeof fns / sizeof fns[0])) == 0)
        memcpy(&api, fns, sizeof api);
    if (lib.state > 0) return &api;
    snprintf(err, err_len, "%s", lib.why);
    return NULL;
}

const CudaNcclApi *cuda_libs_nccl(char *err, size_t err_len)
{
    static CudaLib lib;
    static CudaNcclApi api;
    static const char *const names[] = {CUDA_LIBS_NCCL_FUNCS(CUDA_LIBS_NAME)};
    void *fns[0 CUDA_LIBS_NCCL_FUNCS(CUDA_LIBS_COUNT)];
    _Static_assert(sizeof api == sizeof fns, "CudaNcclApi holds exactly the listed pointers");
    if (lib.state == 0 &&
        lib_open(&lib, CUDA_LIBS_NCCL_SONAME, "NCCL, the collectives of cuda ranks", names, fns,
                 (int)(sizeof fns / sizeof fns[0])) == 0)
        memcpy(&api, fns, sizeof api);
    if (lib.state > 0) return &api;
    snprintf(err, err_len, "%s", lib.why);
    return NULL;
}

#else
/* A build without CUDA loads neither; ISO C wants a declaration here. */
typedef int cuda_libs_not_built;
#endif
