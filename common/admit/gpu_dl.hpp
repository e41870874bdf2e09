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
#include <map>
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
	kNvmlMemoryErrorCorrected = 0,   // NVML_MEMORY_ERROR_TYPE_CORRECTED
	kNvmlClockSm = 1,                // NVML_CLOCK_SM
	kNvmlTemperatureGpu = 0,         // NVML_TEMPERATURE_GPU
	kNvmlFeatureEnabled = 1,         // NVML_FEATURE_ENABLED
	kNvmlErrorInsufficientSize = 7,  // NVML_ERROR_INSUFFICIENT_SIZE
	kNvmlNvlinkErrorDlReplay = 0,    // NVML_NVLINK_ERROR_DL_REPLAY
	kNvmlNvlinkErrorDlRecovery = 1,  // NVML_NVLINK_ERROR_DL_RECOVERY
	kNvmlNvlinkErrorDlCrcFlit = 2,   // NVML_NVLINK_ERROR_DL_CRC_FLIT
	kNvmlNvlinkErrorDlCrcData = 3,   // NVML_NVLINK_ERROR_DL_CRC_DATA
};
struct nvmlMemory { // nvmlMemory_t (v1)
	unsigned long long total, free, used;
};
struct nvmlProcessInfo { // nvmlProcessInfo_t (_v2 and _v3 entry points)
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
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

// The NVML entry points gpu_depth reads, resolved one by one: a driver
// without one leaves it null and names it in missing, and the part it
// reads is not measured (never taken as good).
struct NvmlDepth {
	nvmlReturn (*DeviceGetClockInfo)(nvmlDevice, int, unsigned *) = nullptr;
	nvmlReturn (*DeviceGetClocksEventReasons)(nvmlDevice, unsigned long long *) = nullptr;
	nvmlReturn (*DeviceGetTemperature)(nvmlDevice, int, unsigned *) = nullptr;
	nvmlReturn (*DeviceGetPowerUsage)(nvmlDevice, unsigned *) = nullptr; // mW
	nvmlReturn (*DeviceGetMemoryInfo)(nvmlDevice, nvmlMemory *) = nullptr;
	nvmlReturn (*DeviceGetPersistenceMode)(nvmlDevice, int *) = nullptr;
	nvmlReturn (*DeviceGetComputeRunningProcesses)(nvmlDevice, unsigned *,
	                                               nvmlProcessInfo *) = nullptr;
	nvmlReturn (*DeviceGetNvLinkErrorCounter)(nvmlDevice, unsigned, int,
	                                          unsigned long long *) = nullptr;
	std::map<std::string, std::string> missing; // part -> "NVML has no <symbol>"
};
// Resolve NvmlDepth's entry points in a loaded NVML.
void load_nvml_depth(const Nvml &nvml, NvmlDepth *out);

// CUDA runtime
typedef int cudaError;
typedef struct CUevent_st *cudaEvent;
typedef struct CUstream_st *cudaStream;
enum : int {
	kCudaSuccess = 0,
	kCudaMemcpyHostToDevice = 1,
	kCudaMemcpyDeviceToHost = 2,
	kCudaMemcpyDeviceToDevice = 3
};

struct Cudart {
	void *handle = nullptr;
	std::string path; // the file dlopen loaded
	cudaError (*GetDeviceCount)(int *);
	cudaError (*SetDevice)(int);
	cudaError (*Malloc)(void **, size_t);
	cudaError (*Free)(void *);
	cudaError (*MallocHost)(void **, size_t); // pinned host memory
	cudaError (*FreeHost)(void *);
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
