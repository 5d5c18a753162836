// A fake libamdhip64 for gpuinit's tests: it answers like a host with two AMD
// GPUs. Real HIP initializes itself on almost any call; the fake does too, but
// logs such a call as "implicit-init <call>", so that a test can prove that
// nothing but hipInit started the runtime. The current device is per OS
// thread, as in HIP. Settable through the environment:
//
//   GPUINIT_FAKE_HIP_LOG      append one line per call to this file
//   GPUINIT_FAKE_HIP_DEVICES  number of devices, 0..2 (default 2)
//   GPUINIT_FAKE_HIP_INIT     the hipError_t hipInit returns (default 0, or 100
//                             with no device)
//   GPUINIT_FAKE_HIP_VERSION  what hipDriverGetVersion reports (default 60241134, ROCm 6.2)
//   GPUINIT_FAKE_HIP_COUNT    if set, the raw count hipGetDeviceCount answers, even a negative one
//   GPUINIT_FAKE_HIP_MEMSET_CORRUPT  if set, hipMemset sets a wrong value
//   GPUINIT_FAKE_HIP_INIT_HANG, _CRASH, _DELAY_MS, _FAIL_FILE, _FAIL_TIMES
//                             what hipInit does first (fakecommon.h's fake_init)
//   GPUINIT_FAKE_LOG_PID      if set, each log line ends with " pid=N"
//   ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES
//                             empty, or "-1" first: hipInit answers 100, as ROCm 6.2 does
//
// Define GPUINIT_FAKE_HIP_OMIT_hipDeviceGetPCIBusId to leave that function out.
//
// Build: cc -shared -fPIC -Wl,-soname,libamdhip64.so.6 -o libamdhip64.so.6 fakehip.c
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_LOG_ENV "GPUINIT_FAKE_HIP_LOG"
#include "fakecommon.h"

typedef int hipError_t;

struct fake_device { const char *name, *bus; unsigned long long total; };
static const struct fake_device devices[2] = {
	{"Fake AMD Instinct MI250X", "0000:C1:00.0", 68702699520ULL},
	{"Fake AMD Radeon PRO W7900", "0000:03:00.0", 51522830336ULL},
};

static int initialized;
static __thread int current;

static int ndevices(void) {
	int n = envint("GPUINIT_FAKE_HIP_DEVICES", 2);
	return n < 0 ? 0 : n > 2 ? 2 : n;
}

// enter logs a call, noting when it is the one that starts the runtime.
static hipError_t enter(const char *call) {
	if (!initialized) {
		logcall("implicit-init %s", call);
		initialized = 1;
	} else {
		logcall("%s", call);
	}
	return ndevices() == 0 ? 100 : 0;
}

hipError_t hipInit(unsigned int flags) {
	logcall("hipInit");
	if (flags) return 1;
	// With no device hipInit answers 100, unless the test sets 0 to have it
	// succeed and leave the news to hipGetDeviceCount.
	hipError_t r = fake_init("GPUINIT_FAKE_HIP_INIT", envint("GPUINIT_FAKE_HIP_INIT", ndevices() == 0 ? 100 : 0));
	if (r == 0 && (hidden_by("ROCR_VISIBLE_DEVICES") || hidden_by("HIP_VISIBLE_DEVICES"))) r = 100;
	if (r == 0) initialized = 1;
	return r;
}

hipError_t hipDriverGetVersion(int *v) {
	hipError_t r = enter("hipDriverGetVersion");
	if (!v) return 1;
	*v = envint("GPUINIT_FAKE_HIP_VERSION", 60241134);
	return r == 100 ? 0 : r;
}

hipError_t hipRuntimeGetVersion(int *v) {
	hipError_t r = enter("hipRuntimeGetVersion");
	if (!v) return 1;
	*v = envint("GPUINIT_FAKE_HIP_VERSION", 60241134);
	return r == 100 ? 0 : r;
}

hipError_t hipGetDeviceCount(int *n) {
	hipError_t r = enter("hipGetDeviceCount");
	if (!n) return 1;
	*n = getenv("GPUINIT_FAKE_HIP_COUNT") ? envint("GPUINIT_FAKE_HIP_COUNT", 0) : ndevices();
	return r;
}

static hipError_t checkdev(int d) { return d < 0 || d >= ndevices() ? 101 : 0; }

hipError_t hipDeviceGetName(char *name, int len, int d) {
	hipError_t r = enter("hipDeviceGetName");
	if (r || (r = checkdev(d))) return r;
	if (!name || len <= 0) return 1;
	snprintf(name, len, "%s", devices[d].name);
	return 0;
}

hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
	hipError_t r = enter("hipDeviceTotalMem");
	if (r || (r = checkdev(d))) return r;
	if (!bytes) return 1;
	*bytes = devices[d].total;
	return 0;
}

#ifndef GPUINIT_FAKE_HIP_OMIT_hipDeviceGetPCIBusId
hipError_t hipDeviceGetPCIBusId(char *id, int len, int d) {
	hipError_t r = enter("hipDeviceGetPCIBusId");
	if (r || (r = checkdev(d))) return r;
	if (!id || len <= 0) return 1;
	snprintf(id, len, "%s", devices[d].bus);
	return 0;
}
#endif

hipError_t hipGetDevice(int *d) {
	hipError_t r = enter("hipGetDevice");
	if (!d) return 1;
	*d = current;
	return r;
}

hipError_t hipSetDevice(int d) {
	hipError_t r = enter("hipSetDevice");
	if (r || (r = checkdev(d))) return r;
	logcall("current %d", d);
	current = d;
	return 0;
}

hipError_t hipMalloc(void **p, size_t n) {
	char call[64];
	snprintf(call, sizeof call, "hipMalloc %zu", n);
	hipError_t r = enter(call);
	if (r) return r;
	if (!p) return 1;
	*p = malloc(n ? n : 1);
	return *p ? 0 : 2;
}

hipError_t hipFree(void *p) { enter("hipFree"); free(p); return 0; }

// hipMemset sets n bytes; GPUINIT_FAKE_HIP_MEMSET_CORRUPT makes it set a
// different value, as broken memory would.
hipError_t hipMemset(void *p, int v, size_t n) {
	hipError_t r = enter("hipMemset");
	if (r) return r;
	if (!p) return 1;
	memset(p, getenv("GPUINIT_FAKE_HIP_MEMSET_CORRUPT") ? v ^ 1 : v, n);
	return 0;
}

hipError_t hipMemcpy(void *dst, const void *src, size_t n, int kind) {
	hipError_t r = enter("hipMemcpy");
	if (r) return r;
	if (kind != 2 || !dst || !src) return 1;
	memcpy(dst, src, n);
	return 0;
}

const char *hipGetErrorName(hipError_t r) {
	switch (r) {
	case 0: return "hipSuccess";
	case 1: return "hipErrorInvalidValue";
	case 35: return "hipErrorInsufficientDriver";
	case 100: return "hipErrorNoDevice";
	case 101: return "hipErrorInvalidDevice";
	case 999: return "hipErrorUnknown";
	}
	return "hipErrorUnknown";
}

const char *hipGetErrorString(hipError_t r) {
	switch (r) {
	case 0: return "no error";
	case 100: return "no ROCm-capable device is detected";
	case 101: return "invalid device ordinal";
	}
	return "unknown error";
}
