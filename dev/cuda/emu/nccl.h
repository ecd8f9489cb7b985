/* dev/cuda/emu/nccl.h — the part of NCCL's API that distributed/dist_nccl.c
 * calls (kernels/cuda_libs.h's table), for the emulator's build: found as
 * <nccl.h> on its include path (-Idev/cuda/emu) in place of the toolkit's.
 *
 * Owns: the declarations only; emu_nccl.cpp implements them over MPI on the
 * emulator's device memory (host memory) and streams. The types, values and
 * signatures are NCCL's own (nccl.h of NCCL 2.x, as documented), so that
 * dist_nccl.c compiles against this header unchanged and cuda_libs.h's
 * table (each member typed by decltype of the function) is the same one.
 * Only the data types and operations the trainer uses are accepted
 * (ncclFloat32, ncclBfloat16; ncclSum; ncclSend/ncclRecv move those
 * types too): the others are declared so the
 * enumerations are NCCL's, and refused with ncclInvalidArgument.
 *
 * C++ only, as the rest of the emulator (cudaStream_t is emu.h's). */
#ifndef DEV_CUDA_EMU_NCCL_H
#define DEV_CUDA_EMU_NCCL_H

#ifndef __cplusplus
#error "dev/cuda/emu/nccl.h is the emulator's and C++ only (see dev/cuda/README.md)"
#endif

#include <stddef.h>

#include "emu.h"

extern "C" {

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8,
    ncclBfloat16 = 9
} ncclDataType_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef struct ncclComm *ncclComm_t;

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
}

#endif
