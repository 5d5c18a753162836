// The cuda backend's C side: the few CUDA driver types and calls it uses,
// declared here so that no vendor header is needed to build, one table of
// function pointers filled by dlsym, and small helpers that make several
// driver calls in one cgo call. With -tags cudalink (GPUINIT_CUDALINK) the
// same helpers call the linked driver through <cuda.h> instead.
#ifndef GPUINIT_CUDA_SHIM_H
#define GPUINIT_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef GPUINIT_CUDALINK
#include <cuda.h>
#define CU(f) f
#else
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct { char bytes[16]; } CUuuid;
#define CUDA_SUCCESS 0

// gpuinit_cuda is the driver as loaded: one pointer per function, in one table.
struct gpuinit_cuda {
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetName)(char *, int, CUdevice);
	CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDeviceGetUuid_v2)(CUuuid *, CUdevice); // optional: CUDA 11.4+
	CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);    // the fallback
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
	CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned int *, int *);
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
	CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree_v2)(CUdeviceptr);
	CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
	CUresult (*cuMemsetD32_v2)(CUdeviceptr, unsigned int, size_t);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuGetErrorString)(CUresult, const char **);
};
extern struct gpuinit_cuda gpuinit_cu;
#define CU(f) gpuinit_cu.f
#endif

// The UUID helpers return -1 when the driver has none of the calls they use
// (every other function is required, so dlsym found it at load); the Go side
// leaves the UUID empty then.
#define GPUINIT_NOT_LOADED (-1)

static CUresult gpuinit_cuDriverGetVersion(int *v) { return CU(cuDriverGetVersion)(v); }
static CUresult gpuinit_cuInit(void) { return CU(cuInit)(0); }
// gpuinit_cuDeviceGetCount returns by value: no Go pointer into C, no allocation.
struct gpuinit_count { int n; CUresult r; };
static struct gpuinit_count gpuinit_cuDeviceGetCount(void) {
	struct gpuinit_count c = {0, 0};
	c.r = CU(cuDeviceGetCount)(&c.n);
	return c;
}
// gpuinit_cuDeviceGetCountAt calls a cuDeviceGetCount found by address: in a
// libcuda a cgo engine loaded, before this backend has bound its own table.
static CUresult gpuinit_cuDeviceGetCountAt(void *fn) {
	int n = 0;
	return ((CUresult (*)(int *))fn)(&n);
}
static CUresult gpuinit_cuDeviceGet(CUdevice *d, int ordinal) { return CU(cuDeviceGet)(d, ordinal); }
static CUresult gpuinit_cuDeviceGetName(char *name, int len, CUdevice d) { return CU(cuDeviceGetName)(name, len, d); }
static CUresult gpuinit_cuDeviceTotalMem(size_t *bytes, CUdevice d) { return CU(cuDeviceTotalMem_v2)(bytes, d); }
static CUresult gpuinit_cuDeviceGetAttribute(int *v, int attr, CUdevice d) { return CU(cuDeviceGetAttribute)(v, attr, d); }
static CUresult gpuinit_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return CU(cuDevicePrimaryCtxRetain)(c, d); }
static CUresult gpuinit_cuMemAlloc(CUdeviceptr *p, size_t n) { return CU(cuMemAlloc_v2)(p, n); }
static CUresult gpuinit_cuMemFree(CUdeviceptr p) { return CU(cuMemFree_v2)(p); }
static CUresult gpuinit_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { return CU(cuMemcpyDtoH_v2)(dst, src, n); }

// gpuinit_cuCanary is the readiness canary's round trip in one cgo call, with
// the calling thread's context current: allocate 4 bytes, set them on the
// device, copy them back, free them. step names the call that failed (1 to
// 4), 0 if none did.
struct gpuinit_canary { CUresult r; int step; unsigned int got; };
static struct gpuinit_canary gpuinit_cuCanary(unsigned int want) {
	struct gpuinit_canary c = {0, 0, 0};
	CUdeviceptr p = 0;
	if ((c.r = CU(cuMemAlloc_v2)(&p, 4)) != CUDA_SUCCESS) { c.step = 1; return c; }
	if ((c.r = CU(cuMemsetD32_v2)(p, want, 1)) != CUDA_SUCCESS) c.step = 2;
	else if ((c.r = CU(cuMemcpyDtoH_v2)(&c.got, p, 4)) != CUDA_SUCCESS) c.step = 3;
	CUresult freed = CU(cuMemFree_v2)(p);
	if (c.step == 0 && freed != CUDA_SUCCESS) { c.r = freed; c.step = 4; }
	return c;
}

// gpuinit_cuDeviceGetUuid prefers cuDeviceGetUuid_v2, which gives a MIG
// instance its own UUID.
static CUresult gpuinit_cuDeviceGetUuid(unsigned char out[16], CUdevice d, int *v2) {
	CUuuid u;
	CUresult r;
#ifdef GPUINIT_CUDALINK
	r = cuDeviceGetUuid_v2(&u, d);
	*v2 = 1;
#else
	if (gpuinit_cu.cuDeviceGetUuid_v2) {
		r = gpuinit_cu.cuDeviceGetUuid_v2(&u, d);
		*v2 = 1;
	} else if (gpuinit_cu.cuDeviceGetUuid) {
		r = gpuinit_cu.cuDeviceGetUuid(&u, d);
		*v2 = 0;
	} else {
		return GPUINIT_NOT_LOADED;
	}
#endif
	if (r == CUDA_SUCCESS) memcpy(out, u.bytes, 16);
	return r;
}

// gpuinit_cuDeviceGetUuidV1 is the older call, which gives a MIG instance its
// parent GPU's UUID.
static CUresult gpuinit_cuDeviceGetUuidV1(unsigned char out[16], CUdevice d) {
	CUuuid u;
	CUresult r;
#ifndef GPUINIT_CUDALINK
	if (!gpuinit_cu.cuDeviceGetUuid) return GPUINIT_NOT_LOADED;
#endif
	r = CU(cuDeviceGetUuid)(&u, d);
	if (r == CUDA_SUCCESS) memcpy(out, u.bytes, 16);
	return r;
}

// gpuinit_cuErrorStrings fills the driver's own name and description of r.
static void gpuinit_cuErrorStrings(CUresult r, const char **name, const char **desc) {
	*name = 0;
	*desc = 0;
#ifndef GPUINIT_CUDALINK
	if (!gpuinit_cu.cuGetErrorName || !gpuinit_cu.cuGetErrorString) return;
#endif
	if (CU(cuGetErrorName)(r, name) != CUDA_SUCCESS) *name = 0;
	if (CU(cuGetErrorString)(r, desc) != CUDA_SUCCESS) *desc = 0;
}

// gpuinit_cuSwapContext makes ctx current on this thread and saves the one
// it replaces in *prev.
static CUresult gpuinit_cuSwapContext(CUcontext ctx, CUcontext *prev) {
	CUresult r = CU(cuCtxGetCurrent)(prev);
	if (r != CUDA_SUCCESS) return r;
	return CU(cuCtxSetCurrent)(ctx);
}

static CUresult gpuinit_cuSetContext(CUcontext ctx) { return CU(cuCtxSetCurrent)(ctx); }

// gpuinit_cuMemInfoIfActive reads free and total memory of device d only if
// its primary context is already active, so that it never creates one: it
// saves the thread's context, makes the primary current, queries, and
// restores, all in one call. *active is 0 when nothing was read.
static CUresult gpuinit_cuMemInfoIfActive(CUdevice d, size_t *free_, size_t *total, int *active) {
	unsigned int flags = 0;
	CUcontext prev = 0, primary = 0;
	CUresult r, restore;
	*active = 0;
	r = CU(cuDevicePrimaryCtxGetState)(d, &flags, active);
	if (r != CUDA_SUCCESS || !*active) return r;
	// Retain only to learn the handle: the context is active, so this
	// creates nothing; it is released below.
	r = CU(cuDevicePrimaryCtxRetain)(&primary, d);
	if (r != CUDA_SUCCESS) return r;
	r = gpuinit_cuSwapContext(primary, &prev);
	if (r == CUDA_SUCCESS) {
		r = CU(cuMemGetInfo_v2)(free_, total);
		restore = CU(cuCtxSetCurrent)(prev);
		if (r == CUDA_SUCCESS) r = restore;
	}
	CU(cuDevicePrimaryCtxRelease_v2)(d);
	return r;
}

#endif
