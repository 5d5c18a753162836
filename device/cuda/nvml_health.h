// NVML's health API as the cuda backend's watch calls it: each helper checks
// that the driver has the function (they are optional), so that Go calls no
// NULL pointer, and returns by value where it can.
#ifndef GPUINIT_NVML_HEALTH_H
#define GPUINIT_NVML_HEALTH_H

#define GPUINIT_NVML_MISSING 13 // NVML_ERROR_FUNCTION_NOT_FOUND

static int gpuinit_nvmlHasEvents(void) {
	return gpuinit_nvml.nvmlEventSetCreate && gpuinit_nvml.nvmlEventSetFree && gpuinit_nvml.nvmlDeviceGetSupportedEventTypes &&
	       gpuinit_nvml.nvmlDeviceRegisterEvents && gpuinit_nvml.nvmlEventSetWait_v2;
}

static nvmlReturn_t gpuinit_nvmlEventSetCreate(nvmlEventSet_t *set) { return gpuinit_nvml.nvmlEventSetCreate(set); }
static void gpuinit_nvmlEventSetFree(nvmlEventSet_t set) { gpuinit_nvml.nvmlEventSetFree(set); }

struct gpuinit_nvml_types { nvmlReturn_t r; unsigned long long types; };
static struct gpuinit_nvml_types gpuinit_nvmlSupported(nvmlDevice_t d) {
	struct gpuinit_nvml_types out = {0, 0};
	out.r = gpuinit_nvml.nvmlDeviceGetSupportedEventTypes(d, &out.types);
	if (out.r != 0) out.types = 0;
	return out;
}
static nvmlReturn_t gpuinit_nvmlRegister(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
	return gpuinit_nvml.nvmlDeviceRegisterEvents(d, types, set);
}

struct gpuinit_nvml_event {
	nvmlReturn_t r;
	nvmlDevice_t device;
	unsigned long long type, data;
	unsigned int gi, ci;
};

static struct gpuinit_nvml_event gpuinit_nvmlWait(nvmlEventSet_t set, unsigned int timeoutms) {
	nvmlEventData_t d;
	struct gpuinit_nvml_event e = {0};
	memset(&d, 0, sizeof d);
	e.r = gpuinit_nvml.nvmlEventSetWait_v2(set, &d, timeoutms);
	if (e.r == 0) {
		e.device = d.device;
		e.type = d.eventType;
		e.data = d.eventData;
		e.gi = d.gpuInstanceId;
		e.ci = d.computeInstanceId;
	}
	return e;
}

// The reads of a counters read, one NVML function each (gpuinit_nvmlRead's
// which), so that each is tracked by its own name.
enum {
	GPUINIT_READ_PERSISTENCE, GPUINIT_READ_ECC_MODE, GPUINIT_READ_ECC_CORRECTED, GPUINIT_READ_ECC_UNCORRECTED,
	GPUINIT_READ_REMAP, GPUINIT_READ_THROTTLE, GPUINIT_READ_RETIRED, GPUINIT_READ_RETIRED_PENDING,
	GPUINIT_READ_REPLAYS, GPUINIT_READ_RECOVERY,
};

// gpuinit_nvml_read is one read's nvmlReturn_t and values.
struct gpuinit_nvml_read {
	nvmlReturn_t r;
	unsigned long long a, b;
};

// gpuinit_nvmlRetired counts the pages retired for either cause (multiple
// single-bit, double-bit ECC errors), pending ones included. It asks for
// none of their addresses: a buffer of 0 entries is answered with the count
// and NVML_ERROR_INSUFFICIENT_SIZE (7) where there are any. GPUs with row
// remapping (Ampere on) answer NVML_ERROR_NOT_SUPPORTED.
static nvmlReturn_t gpuinit_nvmlRetired(nvmlDevice_t d, unsigned long long *total) {
	unsigned long long addr = 0, ts = 0;
	*total = 0;
	if (!gpuinit_nvml.nvmlDeviceGetRetiredPages_v2) return GPUINIT_NVML_MISSING;
	for (int cause = 0; cause < 2; cause++) {
		unsigned int n = 0;
		nvmlReturn_t r = gpuinit_nvml.nvmlDeviceGetRetiredPages_v2(d, cause, &n, &addr, &ts);
		if (r != 0 && r != 7) return r;
		*total += n;
	}
	return 0;
}

#include "nvml_verdict.h"

// gpuinit_nvmlRead makes the read which of device d: persistence mode (a),
// ECC mode (a, the current one), the volatile ECC counts (a), row remapping
// (a pending, b failed), the clock event reasons (a), the retired pages (a)
// and whether a retirement is pending (a), the PCIe replay counter (a) and
// the GPU recovery action (a).
static struct gpuinit_nvml_read gpuinit_nvmlRead(nvmlDevice_t d, int which) {
	struct gpuinit_nvml_read out = {GPUINIT_NVML_MISSING, 0, 0};
	int i = 0, j = 0;
	unsigned int u[4] = {0, 0, 0, 0};
	switch (which) {
	case GPUINIT_READ_PERSISTENCE:
		if (gpuinit_nvml.nvmlDeviceGetPersistenceMode) out.r = gpuinit_nvml.nvmlDeviceGetPersistenceMode(d, &i);
		out.a = (unsigned long long)i;
		break;
	case GPUINIT_READ_ECC_MODE:
		if (gpuinit_nvml.nvmlDeviceGetEccMode) out.r = gpuinit_nvml.nvmlDeviceGetEccMode(d, &i, &j);
		out.a = (unsigned long long)i;
		break;
	case GPUINIT_READ_ECC_CORRECTED:
	case GPUINIT_READ_ECC_UNCORRECTED:
		if (gpuinit_nvml.nvmlDeviceGetTotalEccErrors)
			out.r = gpuinit_nvml.nvmlDeviceGetTotalEccErrors(d, which == GPUINIT_READ_ECC_UNCORRECTED, 0, &out.a);
		break;
	case GPUINIT_READ_REMAP:
		if (gpuinit_nvml.nvmlDeviceGetRemappedRows) out.r = gpuinit_nvml.nvmlDeviceGetRemappedRows(d, &u[0], &u[1], &u[2], &u[3]);
		out.a = u[2];
		out.b = u[3];
		break;
	case GPUINIT_READ_THROTTLE:
		if (gpuinit_nvml.nvmlDeviceGetCurrentClocksEventReasons) out.r = gpuinit_nvml.nvmlDeviceGetCurrentClocksEventReasons(d, &out.a);
		break;
	case GPUINIT_READ_RETIRED:
		out.r = gpuinit_nvmlRetired(d, &out.a);
		break;
	case GPUINIT_READ_RETIRED_PENDING:
		if (gpuinit_nvml.nvmlDeviceGetRetiredPagesPendingStatus) out.r = gpuinit_nvml.nvmlDeviceGetRetiredPagesPendingStatus(d, &i);
		out.a = (unsigned long long)i;
		break;
	case GPUINIT_READ_REPLAYS:
		if (gpuinit_nvml.nvmlDeviceGetPcieReplayCounter) out.r = gpuinit_nvml.nvmlDeviceGetPcieReplayCounter(d, &u[0]);
		out.a = u[0];
		break;
	case GPUINIT_READ_RECOVERY:
		out.r = gpuinit_nvmlRecoveryAction(d, &u[0]);
		out.a = u[0];
		break;
	}
	if (out.r != 0) out.a = out.b = 0;
	return out;
}

#endif
