// The GPU libraries the real backend uses, loaded with dlopen so that
// onramp-admit builds and runs (failing closed) where they are absent:
// NVML (libnvidia-ml.so.1), the CUDA runtime (libcudart) and NCCL
// (libnccl.so.2). Only the handful of C entry points needed are declared,
// with our own types; where the toolkit headers are present at build time
// the enum values and sizes we rely on are checked against them.
//
// REQUIRES: load in the process that uses them (a check's child), never
// before fork: CUDA state does not survive fork.
#pragma once

#include <cstddef>
#include <string>

#include "status.hpp"

namespace onramp {
namespace admit {
namespace gpu {

// NVML
typedef int nvmlReturn;
typedef struct nvmlDevice_st *nvmlDevice;
struct nvmlPciInfo { // nvmlPciInfo_t (v3)
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
	char reserved[64]; // slack in case a newer layout is larger
};
enum : int {
	kNvmlSuccess = 0,
	kNvmlErrorInvalidArgument = 2,
	kNvmlErrorNotSupported = 3,
	kNvmlMemoryErrorUncorrected = 1, // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
	kNvmlVolatileEcc = 0,            // NVML_VOLATILE_ECC
	kNvmlNvlinkMaxLinks = 18,        // NVML_NVLINK_MAX_LINKS
};

struct Nvml {
	void *handle = nullptr;
	std::string path; // the file dlopen loaded
	nvmlReturn (*Init)(void);
	nvmlReturn (*Shutdown)(void);
	const char *(*ErrorString)(nvmlReturn);
	nvmlReturn (*SystemGetDriverVersion)(char *, unsigned);
	nvmlReturn (*DeviceGetCount)(unsigned *);
	nvmlReturn (*DeviceGetHandleByIndex)(unsigned, nvmlDevice *);
	nvmlReturn (*DeviceGetName)(nvmlDevice, char *, unsigned);
	nvmlReturn (*DeviceGetUUID)(nvmlDevice, char *, unsigned);
	nvmlReturn (*DeviceGetSerial)(nvmlDevice, char *, unsigned);
	nvmlReturn (*DeviceGetPciInfo)(nvmlDevice, nvmlPciInfo *);
	nvmlReturn (*DeviceGetVbiosVersion)(nvmlDevice, char *, unsigned);
	nvmlReturn (*DeviceGetTotalEccErrors)(nvmlDevice, int, int, unsigned long long *);
	nvmlReturn (*DeviceGetRemappedRows)(nvmlDevice, unsigned *, unsigned *, unsigned *,
	                                    unsigned *);
	nvmlReturn (*DeviceGetNvLinkState)(nvmlDevice, unsigned, int *);

	std::string err(nvmlReturn r) const;
};

// CUDA runtime
typedef int cudaError;
typedef struct CUevent_st *cudaEvent;
typedef struct CUstream_st *cudaStream;
enum : int { kCudaSuccess = 0, kCudaMemcpyDeviceToDevice = 3, kCudaMemcpyDeviceToHost = 2 };

struct Cudart {
	void *handle = nullptr;
	std::string path; // the file dlopen loaded
	cudaError (*GetDeviceCount)(int *);
	cudaError (*SetDevice)(int);
	cudaError (*Malloc)(void **, size_t);
	cudaError (*Free)(void *);
	cudaError (*Memset)(void *, int, size_t);
	cudaError (*Memcpy)(void *, const void *, size_t, int);
	cudaError (*MemcpyAsync)(void *, const void *, size_t, int, cudaStream);
	cudaError (*DeviceSynchronize)(void);
	cudaError (*RuntimeGetVersion)(int *);
	const char *(*GetErrorString)(cudaError);
	cudaError (*StreamCreate)(cudaStream *);
	cudaError (*StreamSynchronize)(cudaStream);
	cudaError (*StreamDestroy)(cudaStream);
	cudaError (*EventCreate)(cudaEvent *);
	cudaError (*EventRecord)(cudaEvent, cudaStream);
	cudaError (*EventSynchronize)(cudaEvent);
	cudaError (*EventElapsedTime)(float *, cudaEvent, cudaEvent);
	cudaError (*EventDestroy)(cudaEvent);
	cudaError (*DeviceGetPCIBusId)(char *, int, int);

	std::string err(cudaError r) const;
};

// NCCL
typedef int ncclResult;
typedef struct ncclComm *ncclCommT;
struct ncclUniqueIdT {
	char internal[128];
};
enum : int { kNcclSuccess = 0, kNcclUint32 = 3, kNcclSum = 0 };

struct Nccl {
	void *handle = nullptr;
	std::string path; // the file dlopen loaded
	ncclResult (*GetVersion)(int *);
	ncclResult (*GetUniqueId)(ncclUniqueIdT *);
	ncclResult (*CommInitAll)(ncclCommT *, int, const int *);
	ncclResult (*CommInitRank)(ncclCommT *, int, ncclUniqueIdT, int);
	ncclResult (*CommDestroy)(ncclCommT);
	ncclResult (*AllReduce)(const void *, void *, size_t, int, int, ncclCommT, cudaStream);
	ncclResult (*GroupStart)(void);
	ncclResult (*GroupEnd)(void);
	const char *(*GetErrorString)(ncclResult);

	std::string err(ncclResult r) const;
};

// Load a library (trying the versioned sonames first, then the unversioned
// development names, which dlopen looks up through LD_LIBRARY_PATH and the
// loader cache, then /usr/local/cuda paths) and
// resolve every symbol; an error names the library and the symbol. path is
// set to the file actually loaded.
Status load_nvml(Nvml *out);
Status load_cudart(Cudart *out);
Status load_nccl(Nccl *out);
// Both, as every NCCL measurement needs them.
Status load_cudart_nccl(Cudart *cuda, Nccl *nccl);

// "2.27.3" from NCCL's integer version; "13.0" from the runtime's.
std::string nccl_version_string(int v);
std::string cuda_version_string(int v);

} // namespace gpu
} // namespace admit
} // namespace onramp
