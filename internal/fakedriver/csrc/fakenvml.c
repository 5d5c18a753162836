// A fake libnvidia-ml.so.1 for gpuinit's tests. It numbers the fake libcuda's
// two GPUs in the opposite order (NVML counts by PCI bus id, CUDA by its own
// order: the two indices differ on real hosts too), so that a caller who
// matches devices by index reads the wrong GPU's memory. Its free memory
// figures differ from anything the fake libcuda reports.
//
//   GPUINIT_FAKE_NVML_LOG  append one line per call to this file
//
// Its health API (events a test injects, and counters) is in
// fakenvml_health.h, the driver's own verdicts (recovery action, replays,
// row remapping, fabric) in fakenvml_verdict.h; its MIG and identity calls in
// fakenvml_mig.h. Each lists its knobs.
//
//   GPUINIT_FAKE_NVML_TOTAL      if set, the memory total every device reports (as
//                                on GB10, where NVML answers with the host's RAM)
//   GPUINIT_FAKE_NVML_HANG_CALL  the NVML function of this name never returns, as on a
//                                dead GPU or a hung driver (it logs "<name> hang"
//                                first): nvmlInit_v2, nvmlDeviceGetHandleByUUID, the
//                                event calls, each counters read, the verdicts' calls
//
// Build: cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fakenvml.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_LOG_ENV "GPUINIT_FAKE_NVML_LOG"
#include "fakecommon.h"

typedef int nvmlReturn_t;
typedef struct fake_nvml_device *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

struct fake_nvml_device {
	const char *uuid, *bus;
	unsigned long long total, free;
	const char *name;
	int mig, gi, ci; // a MIG device: its GPU instance and compute instance ids; its parent is devices[0]
};

// Index 0 is the CUDA fake's device 1, and index 1 its device 0. Entries 2
// and 3 are the MIG devices of index 0 (1g.10gb slices), found by their
// UUID only, as NVML's MIG device handles are.
static struct fake_nvml_device devices[4] = {
	{"GPU-01234567-89ab-cdef-fedc-ba9876543210", "00000001:3B:02.0", 85899345920ULL, 61203283968ULL, "Fake NVIDIA A100", 0, 0, 0},
	{"GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", "00000000:18:00.0", 150754820096ULL, 140000000000ULL, "Fake NVIDIA H200", 0, 0, 0},
	{"MIG-01234567-89ab-cdef-fedc-ba987654324a", "00000001:3B:02.0", 10737418240ULL, 9663676416ULL, "Fake NVIDIA A100 MIG 1g.10gb", 1, 7, 0},
	{"MIG-01234567-89ab-cdef-fedc-ba987654324b", "00000001:3B:02.0", 10737418240ULL, 8589934592ULL, "Fake NVIDIA A100 MIG 1g.10gb", 1, 8, 0},
};
static int initialized;

// hang never returns, using no CPU: a driver call on a GPU that is gone.
static void hang(void) {
	for (;;) {
		struct timespec s = {1, 0};
		nanosleep(&s, NULL);
	}
}

// hang_call names the call that hangs from now on, as an events file's
// "hang-call <name>" line sets it.
static char hang_call[96];

// maybe_hang hangs the call name if GPUINIT_FAKE_NVML_HANG_CALL or
// hang_call names it.
static void maybe_hang(const char *name) {
	const char *env = getenv("GPUINIT_FAKE_NVML_HANG_CALL");
	if (strcmp(hang_call, name) == 0 || (env && strcmp(env, name) == 0)) {
		logcall("%s hang", name);
		hang();
	}
}

nvmlReturn_t nvmlInit_v2(void) {
	logcall("nvmlInit_v2");
	maybe_hang("nvmlInit_v2");
	initialized = 1;
	return 0;
}
nvmlReturn_t nvmlShutdown(void) { logcall("nvmlShutdown"); initialized = 0; return 0; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
	logcall("nvmlDeviceGetHandleByIndex_v2");
	if (!initialized) return 1; // NVML_ERROR_UNINITIALIZED
	if (i >= 2 || !d) return 2;
	*d = &devices[i];
	return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
	logcall("nvmlDeviceGetHandleByUUID %s", uuid);
	maybe_hang("nvmlDeviceGetHandleByUUID");
	if (!initialized) return 1;
	if (!uuid || !d) return 2; // NVML_ERROR_INVALID_ARGUMENT
	for (int i = 0; i < 4; i++)
		if (strcmp(uuid, devices[i].uuid) == 0) { *d = &devices[i]; return 0; }
	return 6; // NVML_ERROR_NOT_FOUND
}

// NVML spells bus ids with an 8-digit domain, in upper case; it accepts the
// 4-digit form too.
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d) {
	logcall("nvmlDeviceGetHandleByPciBusId_v2 %s", bus);
	if (!initialized) return 1;
	if (!bus || !d) return 2;
	for (int i = 0; i < 2; i++) {
		const char *mine = devices[i].bus;
		if (strcasecmp(bus, mine) == 0 || strcasecmp(bus, mine + 4) == 0) { *d = &devices[i]; return 0; }
	}
	return 6;
}

#include "fakenvml_health.h"
#include "fakenvml_mig.h"

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
	logcall("nvmlDeviceGetMemoryInfo %s", d ? d->uuid : "?");
	if (!initialized) return 1;
	if (!d || !m) return 2;
	m->total = d->total;
	m->free = d->free;
	if (getenv("GPUINIT_FAKE_NVML_TOTAL")) m->total = strtoull(getenv("GPUINIT_FAKE_NVML_TOTAL"), NULL, 10);
	m->used = m->total - m->free;
	return 0;
}

const char *nvmlErrorString(nvmlReturn_t r) {
	switch (r) {
	case 0: return "Success";
	case 1: return "Uninitialized";
	case 2: return "Invalid Argument";
	case 6: return "Not Found";
	}
	return "Unknown Error";
}
