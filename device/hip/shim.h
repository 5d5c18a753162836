// The hip backend's C side: the few HIP runtime types and calls it uses,
// declared here so that no ROCm header is needed to build, one table of
// function pointers filled by dlsym at the first Init, and thin wrappers that
// call through it (cgo cannot call a C function pointer itself).
#ifndef GPUINIT_HIP_SHIM_H
#define GPUINIT_HIP_SHIM_H

#include <stddef.h>
#include <string.h>

typedef int hipError_t;
#define hipSuccess 0
#define hipMemcpyDeviceToHost 2

struct gpuinit_hip {
	hipError_t (*hipInit)(unsigned int);
	hipError_t (*hipDriverGetVersion)(int *);
	hipError_t (*hipRuntimeGetVersion)(int *);
	hipError_t (*hipGetDeviceCount)(int *);
	hipError_t (*hipDeviceGetName)(char *, int, int);
	hipError_t (*hipDeviceTotalMem)(size_t *, int);
	hipError_t (*hipDeviceGetPCIBusId)(char *, int, int);
	hipError_t (*hipGetDevice)(int *);
	hipError_t (*hipSetDevice)(int);
	hipError_t (*hipMalloc)(void **, size_t);
	hipError_t (*hipFree)(void *);
	hipError_t (*hipMemcpy)(void *, const void *, size_t, int);
	hipError_t (*hipMemset)(void *, int, size_t);
	const char *(*hipGetErrorName)(hipError_t);
	const char *(*hipGetErrorString)(hipError_t);
};
extern struct gpuinit_hip gpuinit_hip;

static hipError_t gpuinit_hipInit(void) { return gpuinit_hip.hipInit(0); }
static hipError_t gpuinit_hipDriverGetVersion(int *v) { return gpuinit_hip.hipDriverGetVersion(v); }
static hipError_t gpuinit_hipRuntimeGetVersion(int *v) { return gpuinit_hip.hipRuntimeGetVersion(v); }
static hipError_t gpuinit_hipGetDeviceCount(int *n) { return gpuinit_hip.hipGetDeviceCount(n); }
static hipError_t gpuinit_hipDeviceGetName(char *s, int n, int d) { return gpuinit_hip.hipDeviceGetName(s, n, d); }
static hipError_t gpuinit_hipDeviceTotalMem(size_t *b, int d) { return gpuinit_hip.hipDeviceTotalMem(b, d); }
static hipError_t gpuinit_hipDeviceGetPCIBusId(char *s, int n, int d) { return gpuinit_hip.hipDeviceGetPCIBusId(s, n, d); }
static hipError_t gpuinit_hipMalloc(void **p, size_t n) { return gpuinit_hip.hipMalloc(p, n); }
static hipError_t gpuinit_hipFree(void *p) { return gpuinit_hip.hipFree(p); }
static hipError_t gpuinit_hipMemcpyDtoH(void *dst, const void *src, size_t n) {
	return gpuinit_hip.hipMemcpy(dst, src, n, hipMemcpyDeviceToHost);
}

// gpuinit_hipCanary is the readiness canary's round trip in one cgo call,
// on the calling thread's current device: allocate 4 bytes, set each to
// want, copy them back, free them. step names the call that failed (1 to
// 4), 0 if none did.
struct gpuinit_canary { hipError_t r; int step; unsigned char got[4]; };
static struct gpuinit_canary gpuinit_hipCanary(unsigned char want) {
	struct gpuinit_canary c;
	void *p = NULL;
	memset(&c, 0, sizeof c);
	if ((c.r = gpuinit_hip.hipMalloc(&p, 4)) != hipSuccess) { c.step = 1; return c; }
	if ((c.r = gpuinit_hip.hipMemset(p, want, 4)) != hipSuccess) c.step = 2;
	else if ((c.r = gpuinit_hip.hipMemcpy(c.got, p, 4, hipMemcpyDeviceToHost)) != hipSuccess) c.step = 3;
	hipError_t freed = gpuinit_hip.hipFree(p);
	if (c.step == 0 && freed != hipSuccess) { c.r = freed; c.step = 4; }
	return c;
}

// gpuinit_hipSwapDevice makes d current on this thread and saves the one it
// replaces in *prev. HIP's current device is per OS thread.
static hipError_t gpuinit_hipSwapDevice(int d, int *prev) {
	hipError_t r = gpuinit_hip.hipGetDevice(prev);
	if (r != hipSuccess) return r;
	return gpuinit_hip.hipSetDevice(d);
}
static hipError_t gpuinit_hipSetDevice(int d) { return gpuinit_hip.hipSetDevice(d); }

static void gpuinit_hipErrorStrings(hipError_t r, const char **name, const char **desc) {
	*name = gpuinit_hip.hipGetErrorName ? gpuinit_hip.hipGetErrorName(r) : 0;
	*desc = gpuinit_hip.hipGetErrorString ? gpuinit_hip.hipGetErrorString(r) : 0;
}

#endif
