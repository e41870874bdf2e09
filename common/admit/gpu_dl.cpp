#include "admit/gpu_dl.hpp"

#include <dlfcn.h>
#include <link.h>
#include <initializer_list>

#include "log.hpp"

// Our constants must equal the toolkit's where its headers exist.
#define ONRAMP_SAME(a, b) static_assert(static_cast<int>(a) == static_cast<int>(b), #a)
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
ONRAMP_SAME(cudaSuccess, onramp::admit::gpu::kCudaSuccess);
ONRAMP_SAME(cudaMemcpyDeviceToDevice, onramp::admit::gpu::kCudaMemcpyDeviceToDevice);
ONRAMP_SAME(cudaMemcpyDeviceToHost, onramp::admit::gpu::kCudaMemcpyDeviceToHost);
ONRAMP_SAME(cudaMemcpyHostToDevice, onramp::admit::gpu::kCudaMemcpyHostToDevice);
#endif
#if __has_include(<nccl.h>) && __has_include(<cuda_runtime.h>)
#include <nccl.h>
ONRAMP_SAME(ncclSuccess, onramp::admit::gpu::kNcclSuccess);
ONRAMP_SAME(ncclUint32, onramp::admit::gpu::kNcclUint32);
ONRAMP_SAME(ncclSum, onramp::admit::gpu::kNcclSum);
static_assert(sizeof(ncclUniqueId) == sizeof(onramp::admit::gpu::ncclUniqueIdT),
              "ncclUniqueId size");
#endif
#if __has_include(<nvml.h>)
#include <nvml.h>
ONRAMP_SAME(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, onramp::admit::gpu::kNvmlMemoryErrorUncorrected);
ONRAMP_SAME(NVML_VOLATILE_ECC, onramp::admit::gpu::kNvmlVolatileEcc);
ONRAMP_SAME(NVML_ERROR_NOT_SUPPORTED, onramp::admit::gpu::kNvmlErrorNotSupported);
static_assert(sizeof(nvmlPciInfo_t) <= sizeof(onramp::admit::gpu::nvmlPciInfo),
              "nvmlPciInfo_t size");
ONRAMP_SAME(NVML_MEMORY_ERROR_TYPE_CORRECTED, onramp::admit::gpu::kNvmlMemoryErrorCorrected);
ONRAMP_SAME(NVML_CLOCK_SM, onramp::admit::gpu::kNvmlClockSm);
ONRAMP_SAME(NVML_TEMPERATURE_GPU, onramp::admit::gpu::kNvmlTemperatureGpu);
ONRAMP_SAME(NVML_FEATURE_ENABLED, onramp::admit::gpu::kNvmlFeatureEnabled);
ONRAMP_SAME(NVML_ERROR_INSUFFICIENT_SIZE, onramp::admit::gpu::kNvmlErrorInsufficientSize);
ONRAMP_SAME(NVML_NVLINK_ERROR_DL_REPLAY, onramp::admit::gpu::kNvmlNvlinkErrorDlReplay);
ONRAMP_SAME(NVML_NVLINK_ERROR_DL_RECOVERY, onramp::admit::gpu::kNvmlNvlinkErrorDlRecovery);
ONRAMP_SAME(NVML_NVLINK_ERROR_DL_CRC_FLIT, onramp::admit::gpu::kNvmlNvlinkErrorDlCrcFlit);
ONRAMP_SAME(NVML_NVLINK_ERROR_DL_CRC_DATA, onramp::admit::gpu::kNvmlNvlinkErrorDlCrcData);
static_assert(sizeof(nvmlMemory_t) == sizeof(onramp::admit::gpu::nvmlMemory), "nvmlMemory_t");
static_assert(sizeof(nvmlProcessInfo_t) == sizeof(onramp::admit::gpu::nvmlProcessInfo),
              "nvmlProcessInfo_t size");
#endif
#endif

namespace onramp {
namespace admit {
namespace gpu {

namespace {

// The file a handle was loaded from (what the loader resolved a soname to).
std::string loaded_path(void *h, const char *fallback)
{
	struct link_map *lm = nullptr;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
		return lm->l_name;
	return fallback;
}

Status open_lib(const char *what, std::initializer_list<const char *> names, void **handle,
                std::string *path)
{
	std::string errs;
	for (const char *n : names) {
		void *h = dlopen(n, RTLD_NOW | RTLD_LOCAL);
		if (h) {
			*handle = h;
			*path = loaded_path(h, n);
			return Status::Ok();
		}
		const char *e = dlerror();
		if (errs.empty())
			errs = e ? e : n;
	}
	return Status::Error(std::string("cannot load ") + what + ": " + errs);
}

// Resolve name (or its versioned alternative) into *fp.
template <typename F>
bool sym(void *h, const char *name, F *fp, std::string *missing, const char *alt = nullptr)
{
	void *p = dlsym(h, name);
	if (!p && alt)
		p = dlsym(h, alt);
	if (!p && missing->empty())
		*missing = name;
	*fp = reinterpret_cast<F>(p);
	return p != nullptr;
}

Status finish(const char *lib, void *h, const std::string &missing)
{
	if (missing.empty())
		return Status::Ok();
	dlclose(h);
	return Status::Error(std::string(lib) + ": symbol " + missing + " not found");
}

} // namespace

std::string Nvml::err(nvmlReturn r) const
{
	const char *s = ErrorString ? ErrorString(r) : nullptr;
	return s ? s : strprintf("NVML error %d", r);
}

std::string Cudart::err(cudaError r) const
{
	const char *s = GetErrorString ? GetErrorString(r) : nullptr;
	return s ? s : strprintf("CUDA error %d", r);
}

std::string Nccl::err(ncclResult r) const
{
	const char *s = GetErrorString ? GetErrorString(r) : nullptr;
	return s ? s : strprintf("NCCL error %d", r);
}

Status load_nvml(Nvml *n)
{
	Status st = open_lib(
	    "NVML (libnvidia-ml.so.1)",
	    {"libnvidia-ml.so.1", "libnvidia-ml.so", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"},
	    &n->handle, &n->path);
	if (!st.ok())
		return st;
	std::string m;
	void *h = n->handle;
	sym(h, "nvmlInit_v2", &n->Init, &m, "nvmlInit");
	sym(h, "nvmlShutdown", &n->Shutdown, &m);
	sym(h, "nvmlErrorString", &n->ErrorString, &m);
	sym(h, "nvmlSystemGetDriverVersion", &n->SystemGetDriverVersion, &m);
	sym(h, "nvmlDeviceGetCount_v2", &n->DeviceGetCount, &m, "nvmlDeviceGetCount");
	sym(h, "nvmlDeviceGetHandleByIndex_v2", &n->DeviceGetHandleByIndex, &m,
	    "nvmlDeviceGetHandleByIndex");
	sym(h, "nvmlDeviceGetName", &n->DeviceGetName, &m);
	sym(h, "nvmlDeviceGetUUID", &n->DeviceGetUUID, &m);
	sym(h, "nvmlDeviceGetSerial", &n->DeviceGetSerial, &m);
	sym(h, "nvmlDeviceGetPciInfo_v3", &n->DeviceGetPciInfo, &m);
	sym(h, "nvmlDeviceGetVbiosVersion", &n->DeviceGetVbiosVersion, &m);
	sym(h, "nvmlDeviceGetTotalEccErrors", &n->DeviceGetTotalEccErrors, &m);
	sym(h, "nvmlDeviceGetRemappedRows", &n->DeviceGetRemappedRows, &m);
	sym(h, "nvmlDeviceGetNvLinkState", &n->DeviceGetNvLinkState, &m);
	return finish("NVML", h, m);
}

void load_nvml_depth(const Nvml &nvml, NvmlDepth *d)
{
	void *h = nvml.handle;
	auto opt = [&](const char *part, const char *name, auto *fp, const char *alt = nullptr) {
		std::string missing;
		if (!h || !sym(h, name, fp, &missing, alt))
			d->missing[part] = std::string("NVML has no ") + name;
	};
	opt("clock", "nvmlDeviceGetClockInfo", &d->DeviceGetClockInfo);
	opt("throttle", "nvmlDeviceGetCurrentClocksEventReasons", &d->DeviceGetClocksEventReasons,
	    "nvmlDeviceGetCurrentClocksThrottleReasons");
	opt("temperature", "nvmlDeviceGetTemperature", &d->DeviceGetTemperature);
	opt("power", "nvmlDeviceGetPowerUsage", &d->DeviceGetPowerUsage);
	opt("memory", "nvmlDeviceGetMemoryInfo", &d->DeviceGetMemoryInfo);
	opt("persistence", "nvmlDeviceGetPersistenceMode", &d->DeviceGetPersistenceMode);
	opt("processes", "nvmlDeviceGetComputeRunningProcesses_v3",
	    &d->DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v2");
	opt("nvlink_errors", "nvmlDeviceGetNvLinkErrorCounter", &d->DeviceGetNvLinkErrorCounter);
}

Status load_cudart(Cudart *c)
{
	Status st = open_lib("the CUDA runtime (libcudart)",
	                     {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
	                      "/usr/local/cuda/lib64/libcudart.so"},
	                     &c->handle, &c->path);
	if (!st.ok())
		return st;
	std::string m;
	void *h = c->handle;
	sym(h, "cudaGetDeviceCount", &c->GetDeviceCount, &m);
	sym(h, "cudaSetDevice", &c->SetDevice, &m);
	sym(h, "cudaMalloc", &c->Malloc, &m);
	sym(h, "cudaFree", &c->Free, &m);
	sym(h, "cudaMallocHost", &c->MallocHost, &m);
	sym(h, "cudaFreeHost", &c->FreeHost, &m);
	sym(h, "cudaMemset", &c->Memset, &m);
	sym(h, "cudaMemcpy", &c->Memcpy, &m);
	sym(h, "cudaMemcpyAsync", &c->MemcpyAsync, &m);
	sym(h, "cudaDeviceSynchronize", &c->DeviceSynchronize, &m);
	sym(h, "cudaRuntimeGetVersion", &c->RuntimeGetVersion, &m);
	sym(h, "cudaGetErrorString", &c->GetErrorString, &m);
	sym(h, "cudaStreamCreate", &c->StreamCreate, &m);
	sym(h, "cudaStreamSynchronize", &c->StreamSynchronize, &m);
	sym(h, "cudaStreamDestroy", &c->StreamDestroy, &m);
	sym(h, "cudaEventCreate", &c->EventCreate, &m);
	sym(h, "cudaEventRecord", &c->EventRecord, &m);
	sym(h, "cudaEventSynchronize", &c->EventSynchronize, &m);
	sym(h, "cudaEventElapsedTime", &c->EventElapsedTime, &m);
	sym(h, "cudaEventDestroy", &c->EventDestroy, &m);
	sym(h, "cudaDeviceGetPCIBusId", &c->DeviceGetPCIBusId, &m);
	return finish("libcudart", h, m);
}

Status load_nccl(Nccl *n)
{
	Status st = open_lib("NCCL (libnccl.so.2)",
	                     {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib/libnccl.so.2",
	                      "/usr/local/cuda/lib64/libnccl.so.2"},
	                     &n->handle, &n->path);
	if (!st.ok())
		return st;
	std::string m;
	void *h = n->handle;
	sym(h, "ncclGetVersion", &n->GetVersion, &m);
	sym(h, "ncclGetUniqueId", &n->GetUniqueId, &m);
	sym(h, "ncclCommInitAll", &n->CommInitAll, &m);
	sym(h, "ncclCommInitRank", &n->CommInitRank, &m);
	sym(h, "ncclCommDestroy", &n->CommDestroy, &m);
	sym(h, "ncclAllReduce", &n->AllReduce, &m);
	sym(h, "ncclGroupStart", &n->GroupStart, &m);
	sym(h, "ncclGroupEnd", &n->GroupEnd, &m);
	sym(h, "ncclGetErrorString", &n->GetErrorString, &m);
	return finish("libnccl", h, m);
}

std::string nccl_version_string(int v)
{
	if (v >= 10000) // NCCL >= 2.9: major*10000 + minor*100 + patch
		return strprintf("%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
	return strprintf("%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
}

std::string cuda_version_string(int v)
{
	return strprintf("%d.%d", v / 1000, (v % 1000) / 10);
}

Status load_cudart_nccl(Cudart *cuda, Nccl *nccl)
{
	Status st = load_cudart(cuda);
	return st.ok() ? load_nccl(nccl) : st;
}

} // namespace gpu
} // namespace admit
} // namespace onramp
