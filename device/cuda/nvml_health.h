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

// gpuinit_nvmlRegister registers d for the events of want it supports, and
// says which through *got.
static nvmlReturn_t gpuinit_nvmlRegister(nvmlDevice_t d, unsigned long long want, nvmlEventSet_t set, unsigned long long *got) {
	unsigned long long supported = 0;
	*got = 0;
	nvmlReturn_t r = gpuinit_nvml.nvmlDeviceGetSupportedEventTypes(d, &supported);
	if (r != 0) return r;
	if (!(supported & want)) return 3; // NVML_ERROR_NOT_SUPPORTED
	r = gpuinit_nvml.nvmlDeviceRegisterEvents(d, supported & want, set);
	if (r == 0) *got = supported & want;
	return r;
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

// gpuinit_nvml_counters is what a health watch reads of one device; each
// *_r is that read's nvmlReturn_t.
struct gpuinit_nvml_counters {
	nvmlReturn_t persistence_r, ecc_r, corrected_r, uncorrected_r, remap_r, throttle_r, retired_r, retired_pending_r;
	int persistence, ecc, retired_pending;
	unsigned long long corrected, uncorrected, throttle, retired;
	unsigned int remap_pending, remap_failed;
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

static struct gpuinit_nvml_counters gpuinit_nvmlCounters(nvmlDevice_t d) {
	struct gpuinit_nvml_counters c;
	int pending = 0;
	unsigned int corr = 0, unc = 0;
	memset(&c, 0, sizeof c);
	c.persistence_r = gpuinit_nvml.nvmlDeviceGetPersistenceMode ? gpuinit_nvml.nvmlDeviceGetPersistenceMode(d, &c.persistence) : GPUINIT_NVML_MISSING;
	c.ecc_r = gpuinit_nvml.nvmlDeviceGetEccMode ? gpuinit_nvml.nvmlDeviceGetEccMode(d, &c.ecc, &pending) : GPUINIT_NVML_MISSING;
	c.corrected_r = gpuinit_nvml.nvmlDeviceGetTotalEccErrors ? gpuinit_nvml.nvmlDeviceGetTotalEccErrors(d, 0, 0, &c.corrected) : GPUINIT_NVML_MISSING;
	c.uncorrected_r = gpuinit_nvml.nvmlDeviceGetTotalEccErrors ? gpuinit_nvml.nvmlDeviceGetTotalEccErrors(d, 1, 0, &c.uncorrected) : GPUINIT_NVML_MISSING;
	c.remap_r = gpuinit_nvml.nvmlDeviceGetRemappedRows ? gpuinit_nvml.nvmlDeviceGetRemappedRows(d, &corr, &unc, &c.remap_pending, &c.remap_failed) : GPUINIT_NVML_MISSING;
	c.throttle_r = gpuinit_nvml.nvmlDeviceGetCurrentClocksEventReasons ? gpuinit_nvml.nvmlDeviceGetCurrentClocksEventReasons(d, &c.throttle) : GPUINIT_NVML_MISSING;
	c.retired_r = gpuinit_nvmlRetired(d, &c.retired);
	c.retired_pending_r = gpuinit_nvml.nvmlDeviceGetRetiredPagesPendingStatus ? gpuinit_nvml.nvmlDeviceGetRetiredPagesPendingStatus(d, &c.retired_pending) : GPUINIT_NVML_MISSING;
	return c;
}

#endif
