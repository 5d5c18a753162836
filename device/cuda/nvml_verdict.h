// NVML's own verdicts on a GPU as the cuda backend's watch reads them: the
// GPU recovery action (a field value) and the fabric state. The layouts are
// nvml.h's (API 12 and 13); each helper checks that the driver has the
// function, and returns by value. Included by nvml_health.h.
#ifndef GPUINIT_NVML_VERDICT_H
#define GPUINIT_NVML_VERDICT_H

#define GPUINIT_NVML_FI_RECOVERY_ACTION 230 // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
#define GPUINIT_NVML_VALUE_UINT 1           // NVML_VALUE_TYPE_UNSIGNED_INT
#define GPUINIT_NVML_VERSION_MISMATCH 25    // NVML_ERROR_ARGUMENT_VERSION_MISMATCH

// nvmlFieldValue_t; value is nvmlValue_t, a union of 8 bytes.
typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long long ullVal;
	} value;
} gpuinit_nvmlFieldValue_t;
_Static_assert(sizeof(gpuinit_nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");

// gpuinit_nvmlRecoveryAction reads the GPU recovery action into *action: the
// call's error, else the field's own (NVML_ERROR_NOT_SUPPORTED on a driver
// that cannot say), else NVML_ERROR_UNKNOWN (999) for a value not of the
// type nvml.h gives it.
static nvmlReturn_t gpuinit_nvmlRecoveryAction(nvmlDevice_t d, unsigned int *action) {
	gpuinit_nvmlFieldValue_t v;
	*action = 0;
	if (!gpuinit_nvml.nvmlDeviceGetFieldValues) return GPUINIT_NVML_MISSING;
	memset(&v, 0, sizeof v);
	v.fieldId = GPUINIT_NVML_FI_RECOVERY_ACTION;
	nvmlReturn_t r = gpuinit_nvml.nvmlDeviceGetFieldValues(d, 1, &v);
	if (r != 0) return r;
	if (v.nvmlReturn != 0) return v.nvmlReturn;
	if (v.fieldId != GPUINIT_NVML_FI_RECOVERY_ACTION || v.valueType != GPUINIT_NVML_VALUE_UINT) return 999;
	*action = v.value.uiVal;
	return 0;
}

// nvmlGpuFabricInfo_v3_t; v2 is the same without healthSummary (36 bytes).
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
	unsigned int healthMask;
	unsigned char healthSummary;
} gpuinit_nvmlGpuFabricInfo_t;
_Static_assert(sizeof(gpuinit_nvmlGpuFabricInfo_t) == 40, "nvmlGpuFabricInfo_v3_t is 40 bytes");
#define GPUINIT_NVML_FABRIC_V2 (36u | (2u << 24)) // nvmlGpuFabricInfo_v2
#define GPUINIT_NVML_FABRIC_V3 (40u | (3u << 24)) // nvmlGpuFabricInfo_v3

struct gpuinit_nvml_fabric {
	nvmlReturn_t r;
	int version; // 3, or 2 where the driver knows no v3 (then summary is 0)
	int state, status, summary;
	unsigned int mask, clique;
};

// gpuinit_nvmlFabric reads device d's fabric info, as v3 where the driver
// has it, else as v2 (whose healthSummary it leaves unread).
static struct gpuinit_nvml_fabric gpuinit_nvmlFabric(nvmlDevice_t d) {
	struct gpuinit_nvml_fabric out;
	gpuinit_nvmlGpuFabricInfo_t f;
	memset(&out, 0, sizeof out);
	out.r = GPUINIT_NVML_MISSING;
	if (!gpuinit_nvml.nvmlDeviceGetGpuFabricInfoV) return out;
	memset(&f, 0, sizeof f);
	f.version = GPUINIT_NVML_FABRIC_V3;
	out.version = 3;
	out.r = gpuinit_nvml.nvmlDeviceGetGpuFabricInfoV(d, (void *)&f);
	if (out.r == GPUINIT_NVML_VERSION_MISMATCH) {
		memset(&f, 0, sizeof f);
		f.version = GPUINIT_NVML_FABRIC_V2;
		out.version = 2;
		out.r = gpuinit_nvml.nvmlDeviceGetGpuFabricInfoV(d, (void *)&f);
	}
	if (out.r != 0) return out;
	out.state = f.state;
	out.status = f.status;
	out.mask = f.healthMask;
	out.clique = f.cliqueId;
	out.summary = out.version == 3 ? f.healthSummary : 0;
	return out;
}

#endif
