// NVML as the cuda backend uses it, to read free memory without a CUDA
// context: declared here, loaded with dlopen at the first MemoryInfo, in both
// build modes (NVML is never linked).
#ifndef GPUINIT_NVML_SHIM_H
#define GPUINIT_NVML_SHIM_H

#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

struct gpuinit_nvml {
	nvmlReturn_t (*nvmlInit_v2)(void);
	nvmlReturn_t (*nvmlDeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
	const char *(*nvmlErrorString)(nvmlReturn_t);
	// The health watch's, all optional: a driver without them leaves the
	// devices' health unknown, or a counter unread.
	nvmlReturn_t (*nvmlEventSetCreate)(nvmlEventSet_t *);
	nvmlReturn_t (*nvmlEventSetFree)(nvmlEventSet_t);
	nvmlReturn_t (*nvmlDeviceGetSupportedEventTypes)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*nvmlDeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*nvmlEventSetWait_v2)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
	nvmlReturn_t (*nvmlDeviceGetPersistenceMode)(nvmlDevice_t, int *);
	nvmlReturn_t (*nvmlDeviceGetEccMode)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*nvmlDeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*nvmlDeviceGetRemappedRows)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
	nvmlReturn_t (*nvmlDeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*nvmlDeviceGetRetiredPages_v2)(nvmlDevice_t, int, unsigned int *, unsigned long long *, unsigned long long *);
	nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, int *);
	// The driver's own verdicts, optional: nvml_verdict.h.
	nvmlReturn_t (*nvmlDeviceGetFieldValues)(nvmlDevice_t, int, void *);
	nvmlReturn_t (*nvmlDeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV)(nvmlDevice_t, void *);
	// MIG and identity, optional: nvml_mig.h.
	nvmlReturn_t (*nvmlDeviceIsMigDeviceHandle)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*nvmlDeviceGetGpuInstanceId)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*nvmlDeviceGetComputeInstanceId)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(nvmlDevice_t, nvmlDevice_t *);
	nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*nvmlDeviceGetName)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*nvmlDeviceGetPciInfo_v3)(nvmlDevice_t, void *);
	nvmlReturn_t (*nvmlDeviceGetIndex)(nvmlDevice_t, unsigned int *);
};
extern struct gpuinit_nvml gpuinit_nvml;

static nvmlReturn_t gpuinit_nvmlInit(void) { return gpuinit_nvml.nvmlInit_v2(); }
static nvmlReturn_t gpuinit_nvmlByUUID(const char *u, nvmlDevice_t *d) { return gpuinit_nvml.nvmlDeviceGetHandleByUUID(u, d); }
static nvmlReturn_t gpuinit_nvmlByBusID(const char *b, nvmlDevice_t *d) { return gpuinit_nvml.nvmlDeviceGetHandleByPciBusId_v2(b, d); }
// gpuinit_nvmlMemory returns its results by value, so that Go passes no
// pointer into C and allocates nothing for the call.
struct gpuinit_nvml_memory { unsigned long long free_, total; nvmlReturn_t r; };
static struct gpuinit_nvml_memory gpuinit_nvmlMemory(nvmlDevice_t d) {
	nvmlMemory_t m;
	struct gpuinit_nvml_memory out = {0, 0, 0};
	out.r = gpuinit_nvml.nvmlDeviceGetMemoryInfo(d, &m);
	if (out.r == 0) { out.free_ = m.free; out.total = m.total; }
	return out;
}
static const char *gpuinit_nvmlError(nvmlReturn_t r) { return gpuinit_nvml.nvmlErrorString(r); }
struct gpuinit_nvml_index { nvmlReturn_t r; unsigned int index; };
static struct gpuinit_nvml_index gpuinit_nvmlIndex(nvmlDevice_t d) {
	struct gpuinit_nvml_index out = {13, 0}; // NVML_ERROR_FUNCTION_NOT_FOUND
	if (gpuinit_nvml.nvmlDeviceGetIndex) out.r = gpuinit_nvml.nvmlDeviceGetIndex(d, &out.index);
	return out;
}

#include "nvml_health.h"
#include "nvml_mig.h"

#endif
