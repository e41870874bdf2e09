/* A TEST DOUBLE of NVML, the CUDA runtime and NCCL: the entry points the
 * real backend dlopens (common/admit/gpu_dl.cpp), for one fake GPU, so the
 * check bundle's run script can be driven down its GPU path on a machine
 * without one (testsuite/integration/bundle.bats). Nothing here touches a
 * device: "device memory" is a size and the byte every location holds, and
 * copies and all-reduces sleep as long as they would take at FAKE_GBS.
 * CUDA_VISIBLE_DEVICES="" hides the GPU from the "runtime" (not from
 * "NVML"), as the real ones do. Built as libnvidia-ml.so.1, libcudart.so*
 * and libnccl.so.2 by the test; never installed.
 *
 * Timing is made deterministic: stream copies advance a virtual clock that
 * only CUDA events read (so the event-timed bandwidth is exactly FAKE_GBS),
 * while a plain cudaMemcpy really sleeps that long (so the wall-clock
 * reference can only be slower, whatever the machine's load). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_GBS 4400.0   /* copy bandwidth, bytes read + written per ns */
#define FAKE_H2D_GBS 50.0 /* host <-> device, bytes per ns */

struct buf {
	size_t size;
	int fill;
};

static double vclock; /* seconds of stream work "done" */

static void take(double bytes)
{
	double s = bytes / (FAKE_GBS * 1e9);
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static int visible(void)
{
	const char *v = getenv("CUDA_VISIBLE_DEVICES");
	return !(v && !*v);
}

static void text(char *out, unsigned len, const char *s)
{
	snprintf(out, len, "%s", s);
}

/* NVML */
int nvmlInit_v2(void)
{
	return 0;
}
int nvmlShutdown(void)
{
	return 0;
}
const char *nvmlErrorString(int r)
{
	return r ? "fake NVML error" : "Success";
}
int nvmlSystemGetDriverVersion(char *v, unsigned n)
{
	return text(v, n, "999.99.99-fake"), 0;
}
int nvmlDeviceGetCount_v2(unsigned *n)
{
	return *n = 1, 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
	return *d = (void *)(size_t)(i + 1), 0;
}
int nvmlDeviceGetName(void *d, char *v, unsigned n)
{
	return (void)d, text(v, n, "NVIDIA H200"), 0;
}
int nvmlDeviceGetUUID(void *d, char *v, unsigned n)
{
	return (void)d, text(v, n, "GPU-fake0000-0000-0000-0000-000000000000"), 0;
}
int nvmlDeviceGetSerial(void *d, char *v, unsigned n)
{
	return (void)d, text(v, n, "FAKE0001"), 0;
}
int nvmlDeviceGetVbiosVersion(void *d, char *v, unsigned n)
{
	return (void)d, text(v, n, "96.00.FA.KE.00"), 0;
}
int nvmlDeviceGetPciInfo_v3(void *d, char *info)
{
	(void)d;
	memset(info, 0, 16 + 5 * 4);
	snprintf(info + 16 + 5 * 4, 32, "00000000:FA:00.0");
	return 0;
}
int nvmlDeviceGetTotalEccErrors(void *d, int t, int c, unsigned long long *n)
{
	return (void)d, (void)t, (void)c, *n = 0, 0;
}
int nvmlDeviceGetRemappedRows(void *d, unsigned *c, unsigned *u, unsigned *p, unsigned *f)
{
	return (void)d, *c = *u = *p = *f = 0, 0;
}
int nvmlDeviceGetNvLinkState(void *d, unsigned l, int *a)
{
	return (void)d, (void)l, (void)a, 3;
}
/* gpu_depth's entry points: a cool, unthrottled GPU at full clock, unless
 * FAKE_THROTTLE gives clocks event reason bits (hex, e.g. 0x40: HW thermal
 * slowdown). Built with -DFAKE_NO_POWER it lacks nvmlDeviceGetPowerUsage,
 * as a driver without that entry point would. */
int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz)
{
	return (void)d, (void)type, *mhz = 1980, 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
	const char *t = getenv("FAKE_THROTTLE");
	return (void)d, *r = t ? strtoull(t, NULL, 16) : 0x4, 0;
}
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c)
{
	return (void)d, (void)sensor, *c = 48, 0;
}
#ifndef FAKE_NO_POWER
int nvmlDeviceGetPowerUsage(void *d, unsigned *mw)
{
	return (void)d, *mw = 412000, 0;
}
#endif
int nvmlDeviceGetMemoryInfo(void *d, unsigned long long *m)
{
	/* nvmlMemory_t: total, free, used */
	return (void)d, m[0] = 143771ull << 20, m[1] = m[0], m[2] = 0, 0;
}
int nvmlDeviceGetPersistenceMode(void *d, int *on)
{
	return (void)d, *on = 1, 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *n, void *infos)
{
	return (void)d, (void)infos, *n = 0, 0;
}
int nvmlDeviceGetNvLinkErrorCounter(void *d, unsigned l, int c, unsigned long long *v)
{
	return (void)d, (void)l, (void)c, *v = 0, 0;
}

/* CUDA runtime */
int cudaGetDeviceCount(int *n)
{
	*n = visible();
	return *n ? 0 : 100; /* cudaErrorNoDevice */
}
int cudaSetDevice(int d)
{
	return d == 0 && visible() ? 0 : 101;
}
int cudaMalloc(void **p, size_t size)
{
	struct buf *b = calloc(1, sizeof *b);
	b->size = size;
	*p = b;
	return 0;
}
int cudaFree(void *p)
{
	return free(p), 0;
}
int cudaMemset(void *p, int v, size_t n)
{
	return (void)n, ((struct buf *)p)->fill = v, 0;
}
int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	if (kind == 2) {           /* device to host: src may point inside a buffer */
		memset(dst, 1, n); /* one rank's sum of (rank + 1) */
		return 0;
	}
	((struct buf *)dst)->fill = ((const struct buf *)src)->fill;
	take(2.0 * n);
	return 0;
}
int cudaMallocHost(void **p, size_t size)
{
	return (*p = calloc(1, size)) ? 0 : 2;
}
int cudaFreeHost(void *p)
{
	return free(p), 0;
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s)
{
	(void)s;
	if (kind == 1 || kind == 2) { /* host <-> device: FAKE_H2D_GBS over "PCIe" */
		if (kind == 1)
			((struct buf *)dst)->fill = *(const unsigned char *)src;
		else
			memset(dst, ((const struct buf *)src)->fill, n);
		vclock += n / (FAKE_H2D_GBS * 1e9);
		return 0;
	}
	((struct buf *)dst)->fill = ((const struct buf *)src)->fill;
	vclock += 2.0 * n / (FAKE_GBS * 1e9);
	return 0;
}
int cudaDeviceSynchronize(void)
{
	return 0;
}
int cudaRuntimeGetVersion(int *v)
{
	return *v = 13000, 0;
}
const char *cudaGetErrorString(int e)
{
	return e == 100 ? "no CUDA-capable device is detected (fake)" : "fake CUDA error";
}
int cudaStreamCreate(void **s)
{
	return *s = malloc(1), 0;
}
int cudaStreamSynchronize(void *s)
{
	return (void)s, 0;
}
int cudaStreamDestroy(void *s)
{
	return free(s), 0;
}
int cudaEventCreate(void **e)
{
	return *e = calloc(1, sizeof(double)), 0;
}
int cudaEventRecord(void *e, void *s)
{
	return (void)s, *(double *)e = vclock, 0;
}
int cudaEventSynchronize(void *e)
{
	return (void)e, 0;
}
int cudaEventElapsedTime(float *ms, void *a, void *b)
{
	*ms = (float)((*(double *)b - *(double *)a) * 1e3);
	return 0;
}
int cudaEventDestroy(void *e)
{
	return free(e), 0;
}
int cudaDeviceGetPCIBusId(char *v, int n, int d)
{
	return (void)d, text(v, n, "0000:FA:00.0"), 0;
}

/* NCCL */
int ncclGetVersion(int *v)
{
	return *v = 22809, 0;
}
int ncclGetUniqueId(void *id)
{
	return memset(id, 7, 128), 0;
}
int ncclCommInitAll(void **comms, int n, const int *devs)
{
	for (int i = 0; i < n; i++)
		comms[i] = (void *)(size_t)(devs ? devs[i] + 1 : i + 1);
	return n == 1 ? 0 : 5;
}
int ncclCommInitRank(void **c, int n, char id[128], int r)
{
	return (void)n, (void)id, *c = (void *)(size_t)(r + 1), 0;
}
int ncclCommDestroy(void *c)
{
	return (void)c, 0;
}
int ncclAllReduce(const void *s, void *r, size_t count, int t, int op, void *c, void *st)
{
	(void)t, (void)op, (void)c, (void)st;
	((struct buf *)r)->fill = ((const struct buf *)s)->fill;
	take(8.0 * count); /* one rank: its busbw is 0 whatever this takes */
	return 0;
}
int ncclGroupStart(void)
{
	return 0;
}
int ncclGroupEnd(void)
{
	return 0;
}
const char *ncclGetErrorString(int r)
{
	return r ? "fake NCCL error" : "no error";
}
