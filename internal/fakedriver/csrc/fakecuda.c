// A fake libcuda.so.1 for gpuinit's tests: it answers like a host with two
// GPUs, and is as strict as the real driver where gpuinit could go wrong:
// CUDA_ERROR_NOT_INITIALIZED (3) before cuInit, CUDA_ERROR_INVALID_CONTEXT
// (201) for memory calls without a context current on the calling thread,
// CUDA_ERROR_INVALID_DEVICE (101) for bad ordinals, CUDA_ERROR_INVALID_VALUE
// (1) for NULL pointers. Its answers are settable through the environment:
//
//   GPUINIT_FAKE_CUDA_LOG      append one line per call to this file
//   GPUINIT_FAKE_CUDA_DEVICES  number of devices, 0..2 (default 2; 0..4, default 3, with GPUINIT_FAKE_CUDA_MIG=1,2)
//   GPUINIT_FAKE_CUDA_VERSION  what cuDriverGetVersion reports (default 12040)
//   GPUINIT_FAKE_CUDA_INIT     the CUresult cuInit returns (default 0)
//   GPUINIT_FAKE_CUDA_STUB     if set, answer 34 (CUDA_ERROR_STUB_LIBRARY) to everything, as the toolkit's stub does
//   GPUINIT_FAKE_CUDA_MIG      1 or 2: device 1 is that MIG instance of its GPU (the one CUDA
//                              enumerates: its _v2 UUID differs, it is a 1g.10gb slice of 14
//                              multiprocessors and 10 GiB, not integrated); 1,2: devices 1 and 2
//                              are both instances, as CUDA from R570 enumerates a GPU in MIG mode
//                              (never the GPU itself) beside the whole GPU 0; with
//                              GPUINIT_FAKE_CUDA_DEVICES=4, device 3 is a GB10-like integrated GPU
//                              of its own (UUID, bus id), which NVML does not know
//   GPUINIT_FAKE_CUDA_ATTR_FAIL
//                              if set, the CU_DEVICE_ATTRIBUTE whose reads answer 999 (CUDA_ERROR_UNKNOWN);
//                              with GPUINIT_FAKE_CUDA_ATTR_FAIL_TIMES=n, only the first n in the process
//   GPUINIT_FAKE_CUDA_PAGEABLE the devices' CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS (default 0)
//   GPUINIT_FAKE_CUDA_USED_MIB MiB in use on each device besides allocations (default 1024)
//   GPUINIT_FAKE_CUDA_COUNT    if set, the raw count cuDeviceGetCount answers, even a negative one
//   GPUINIT_FAKE_CUDA_INIT_HANG, _CRASH, _DELAY_MS, _FAIL_FILE, _FAIL_TIMES
//                              what cuInit does first (fakecommon.h's fake_init): with
//                              _FAIL_FILE, GPUINIT_FAKE_CUDA_INIT is returned only for the
//                              first _FAIL_TIMES calls, counted across processes
//   GPUINIT_FAKE_LOG_PID       if set, each log line ends with " pid=N"
//   CUDA_VISIBLE_DEVICES       empty, or "-1" first: cuInit answers 100, as the driver does
//   GPUINIT_FAKE_CUDA_MEMSET_CORRUPT, _MEMSET_HANG
//                              cuMemsetD32_v2 sets a wrong value, or never returns
//
// Build: cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda.so.1 fakecuda.c
// Define GPUINIT_FAKE_CUDA_OMIT_cuDeviceTotalMem_v2 to leave that function
// out, to test a driver that lacks one the backend needs.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_LOG_ENV "GPUINIT_FAKE_CUDA_LOG"
#include "fakecommon.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct fake_ctx *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned char bytes[16]; } CUuuid;

struct fake_ctx { int dev; };

#include "fakecuda_devices.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct fake_ctx primary[MAX_DEVICES] = {{0}, {1}, {2}, {3}};
static int retained[MAX_DEVICES];
static unsigned long long allocated[MAX_DEVICES];
static __thread CUcontext current;

static int stub(void) { return getenv("GPUINIT_FAKE_CUDA_STUB") != NULL; }

// gate is what every call but the version and error-string calls checks first.
static CUresult gate(void) {
	if (stub()) return 34;
	return initialized ? 0 : 3;
}

static CUresult checkdev(CUdevice d) { return d < 0 || d >= ndevices() ? 101 : 0; }

CUresult cuDriverGetVersion(int *v) {
	logcall("cuDriverGetVersion");
	if (stub()) return 34;
	if (!v) return 1;
	*v = envint("GPUINIT_FAKE_CUDA_VERSION", 12040);
	return 0;
}

CUresult cuInit(unsigned int flags) {
	logcall("cuInit");
	if (stub()) return 34;
	if (flags != 0) return 1;
	CUresult r = fake_init("GPUINIT_FAKE_CUDA_INIT", envint("GPUINIT_FAKE_CUDA_INIT", 0));
	if (r == 0 && (ndevices() == 0 || hidden_by("CUDA_VISIBLE_DEVICES"))) r = 100;
	if (r == 0) initialized = 1;
	return r;
}

CUresult cuDeviceGetCount(int *n) {
	logcall("cuDeviceGetCount");
	CUresult r = gate();
	if (r) return r;
	if (!n) return 1;
	*n = getenv("GPUINIT_FAKE_CUDA_COUNT") ? envint("GPUINIT_FAKE_CUDA_COUNT", 0) : ndevices();
	return 0;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	logcall("cuDeviceGet %d", ordinal);
	CUresult r = gate();
	if (r) return r;
	if (!d) return 1;
	if ((r = checkdev(ordinal))) return r;
	*d = ordinal;
	return 0;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	logcall("cuDeviceGetName %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!name || len <= 0) return 1;
	snprintf(name, len, "%s", device(d)->name);
	return 0;
}

#ifndef GPUINIT_FAKE_CUDA_OMIT_cuDeviceTotalMem_v2
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	logcall("cuDeviceTotalMem_v2 %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!bytes) return 1;
	*bytes = device(d)->total;
	return 0;
}
#endif

// The unversioned call has a 32-bit size: a caller that uses it reads a
// truncated total.
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice d) {
	logcall("cuDeviceTotalMem %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	*bytes = (unsigned int)device(d)->total;
	return 0;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	logcall("cuDeviceGetAttribute %d %d", attr, d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!v) return 1;
	if (attr == envint("GPUINIT_FAKE_CUDA_ATTR_FAIL", -1)) {
		static int failed;
		pthread_mutex_lock(&mu);
		int fail = !getenv("GPUINIT_FAKE_CUDA_ATTR_FAIL_TIMES") || failed < envint("GPUINIT_FAKE_CUDA_ATTR_FAIL_TIMES", 0);
		failed += fail;
		pthread_mutex_unlock(&mu);
		if (fail) return 999;
	}
	const struct fake_device *dev = device(d);
	switch (attr) {
	case 16: *v = dev->sms; break;
	case 18: *v = dev->integrated; break;
	case 33: *v = dev->bus; break;
	case 34: *v = dev->slot; break;
	case 50: *v = dev->domain; break;
	case 75: *v = dev->major; break;
	case 76: *v = dev->minor; break;
	case 88: *v = envint("GPUINIT_FAKE_CUDA_PAGEABLE", 0); break;
	default: return 1;
	}
	return 0;
}

CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
	logcall("cuDeviceGetUuid %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!u) return 1;
	memcpy(u->bytes, device(d)->uuid, 16); // a MIG instance's: its GPU's
	return 0;
}

CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
	logcall("cuDeviceGetUuid_v2 %d", d);
	CUresult r = cuDeviceGetUuid(u, d);
	if (r == 0 && slice(d)) u->bytes[15] ^= slice(d) == 1 ? 0x5a : 0x5b; // the instance's own
	return r;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	logcall("cuDevicePrimaryCtxRetain %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!c) return 1;
	pthread_mutex_lock(&mu);
	retained[d]++;
	pthread_mutex_unlock(&mu);
	*c = &primary[d];
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	logcall("cuDevicePrimaryCtxRelease_v2 %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	pthread_mutex_lock(&mu);
	r = retained[d] > 0 ? 0 : 201; // releasing a context nobody retained
	if (!r) retained[d]--;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active) {
	logcall("cuDevicePrimaryCtxGetState %d", d);
	CUresult r = gate();
	if (r) return r;
	if ((r = checkdev(d))) return r;
	if (!flags || !active) return 1;
	pthread_mutex_lock(&mu);
	*active = retained[d] > 0;
	pthread_mutex_unlock(&mu);
	*flags = 0;
	return 0;
}

CUresult cuCtxGetCurrent(CUcontext *c) {
	logcall("cuCtxGetCurrent");
	CUresult r = gate();
	if (r) return r;
	if (!c) return 1;
	*c = current;
	return 0;
}

CUresult cuCtxSetCurrent(CUcontext c) {
	logcall("cuCtxSetCurrent %d", c ? c->dev : -1);
	CUresult r = gate();
	if (r) return r;
	if (c && (c < &primary[0] || c >= &primary[ndevices()])) return 201;
	current = c;
	return 0;
}

// current_device is the device of the context current on this thread, or -1.
static int current_device(void) {
	if (!current) return -1;
	int d = current->dev;
	pthread_mutex_lock(&mu);
	int live = retained[d] > 0;
	pthread_mutex_unlock(&mu);
	return live ? d : -1;
}

CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	logcall("cuMemGetInfo_v2");
	CUresult r = gate();
	if (r) return r;
	int d = current_device();
	if (d < 0) return 201;
	if (!free_ || !total) return 1;
	unsigned long long used = (unsigned long long)envint("GPUINIT_FAKE_CUDA_USED_MIB", 1024) << 20;
	pthread_mutex_lock(&mu);
	*total = device(d)->total;
	*free_ = device(d)->total - used - allocated[d];
	pthread_mutex_unlock(&mu);
	return 0;
}

struct allocation { int dev; size_t size; };

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	logcall("cuMemAlloc_v2 %zu", n);
	CUresult r = gate();
	if (r) return r;
	int d = current_device();
	if (d < 0) return 201;
	if (!p || n == 0) return 1;
	struct allocation *a = malloc(sizeof *a + n);
	if (!a) return 2;
	a->dev = d;
	a->size = n;
	pthread_mutex_lock(&mu);
	allocated[d] += n;
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(size_t)(a + 1);
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	logcall("cuMemFree_v2");
	CUresult r = gate();
	if (r) return r;
	if (current_device() < 0) return 201;
	if (!p) return 1;
	struct allocation *a = (struct allocation *)(size_t)p - 1;
	pthread_mutex_lock(&mu);
	allocated[a->dev] -= a->size;
	pthread_mutex_unlock(&mu);
	free(a);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	logcall("cuMemcpyDtoH_v2 %zu", n);
	CUresult r = gate();
	if (r) return r;
	if (current_device() < 0) return 201;
	if (!dst || !src) return 1;
	memcpy(dst, (void *)(size_t)src, n);
	return 0;
}

// cuMemsetD32_v2 sets n 32-bit values; GPUINIT_FAKE_CUDA_MEMSET_CORRUPT
// makes it set a different value (as broken memory or a broken copy
// engine would), GPUINIT_FAKE_CUDA_MEMSET_HANG makes it never return.
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) {
	logcall("cuMemsetD32_v2 %zu", n);
	CUresult r = gate();
	if (r) return r;
	if (current_device() < 0) return 201;
	if (!p) return 1;
	if (getenv("GPUINIT_FAKE_CUDA_MEMSET_HANG")) {
		for (;;) pause();
	}
	if (getenv("GPUINIT_FAKE_CUDA_MEMSET_CORRUPT")) v ^= 0x00010000u;
	unsigned int *u = (unsigned int *)(size_t)p;
	for (size_t i = 0; i < n; i++) u[i] = v;
	return 0;
}

struct code { CUresult r; const char *name, *desc; };
static const struct code codes[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	{35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
	{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	{804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct code *lookup(CUresult r) {
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (codes[i].r == r) return &codes[i];
	return NULL;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	const struct code *c = lookup(r);
	if (!s) return 1;
	if (!c) { *s = NULL; return 1; }
	*s = c->name;
	return 0;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	const struct code *c = lookup(r);
	if (!s) return 1;
	if (!c) { *s = NULL; return 1; }
	*s = c->desc;
	return 0;
}
