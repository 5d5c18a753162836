// The fake NVML's own verdicts on a GPU: the GPU recovery action (the field
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 230, and the GPU-unavailable and
// recovery-action events), the PCIe replay counter, the row remapping state
// per device, and the fabric info (nvmlGpuFabricInfo_v2_t and _v3_t).
// Included by fakenvml_health.h, after its event set. Strict where NVML is: a
// NULL pointer or a bad count is NVML_ERROR_INVALID_ARGUMENT, a fabric info
// of a version it does not know NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
//
//   GPUINIT_FAKE_NVML_RECOVERY     every device's recovery action at the start (default 0, none)
//   GPUINIT_FAKE_NVML_NO_RECOVERY  if set, the field answers NVML_ERROR_NOT_SUPPORTED (a driver
//                                  before R570)
//   GPUINIT_FAKE_NVML_REPLAYS      every device's PCIe replay counter at the start (default 0)
//   GPUINIT_FAKE_NVML_FABRIC       "<state> <status> <summary> <mask>", every device's fabric info;
//                                  unset, the call answers NVML_ERROR_NOT_SUPPORTED (no NVLink fabric)
//   GPUINIT_FAKE_NVML_FABRIC_V2    if set, only the v2 struct is known (v3 is a version mismatch)
//
// Lines of the events file (GPUINIT_FAKE_NVML_EVENTS), taken by the next wait:
//   "recovery <uuid> <value> [0]"  set the recovery action, and deliver a recovery-action event
//                               (with a trailing 0, none: as a driver that announces it by Xid 154)
//   "unavailable <uuid>"        deliver a GPU-unavailable event
//   "remap-pending <uuid> 0|1", "remap-failed <uuid> 0|1"  set the device's row remapping state
//   "replays <uuid> <n>"        set the PCIe replay counter
//   "fabric <uuid> <state> <status> <summary> [<mask>]"  set the fabric info
//   "hang-call <name>"          the next call of NVML function name never returns (fakenvml.c)
// A line that only sets state delivers nothing: the next counters read sees it.
//
// Built with -DFAKE_NVML_OLD it is an NVML before all this: no
// nvmlDeviceGetFieldValues, nvmlDeviceGetPcieReplayCounter or
// nvmlDeviceGetGpuFabricInfoV, and neither new event type.

#define NVML_EVENT_UNAVAILABLE 0x4000ULL
#define NVML_EVENT_RECOVERY 0x8000ULL
#ifdef FAKE_NVML_OLD
#define NVML_EVENTS_NEW 0ULL
#else
#define NVML_EVENTS_NEW (NVML_EVENT_UNAVAILABLE | NVML_EVENT_RECOVERY)
#endif

// fake_verdict is one GPU's state; -1 in a remap field is "as the
// environment says".
struct fake_verdict {
	unsigned int recovery, replays;
	int remap_pending, remap_failed;
	int fabric; // fabric info is set
	int fstate, fstatus, fsummary;
	unsigned int fmask;
};
static struct fake_verdict verdicts[2];
static int verdicts_ready;

static struct fake_verdict *verdict(int i) {
	if (!verdicts_ready) {
		verdicts_ready = 1;
		for (int j = 0; j < 2; j++) {
			struct fake_verdict *v = &verdicts[j];
			v->recovery = (unsigned int)envint("GPUINIT_FAKE_NVML_RECOVERY", 0);
			v->replays = (unsigned int)envint("GPUINIT_FAKE_NVML_REPLAYS", 0);
			v->remap_pending = v->remap_failed = -1;
			const char *f = getenv("GPUINIT_FAKE_NVML_FABRIC");
			v->fabric = f && sscanf(f, "%d %d %d %u", &v->fstate, &v->fstatus, &v->fsummary, &v->fmask) >= 3;
		}
	}
	return &verdicts[i];
}

// verdict_line takes one line of the events file: -1 if it is none of the
// above, 0 if it set state (or names no device), 1 if it filled data with an
// event for set.
static int verdict_line(const char *line, nvmlEventSet_t set, nvmlEventData_t *data) {
	char kind[32], uuid[96];
	long long a = 0, b = 0, c = 0, d = 0;
	int n = sscanf(line, "%31s %95s %lld %lld %lld %lld", kind, uuid, &a, &b, &c, &d);
	if (n < 2) return -1;
	if (strcmp(kind, "hang-call") == 0) {
		snprintf(hang_call, sizeof hang_call, "%s", uuid);
		return 0;
	}
	int known = strcmp(kind, "recovery") == 0 || strcmp(kind, "unavailable") == 0 || strcmp(kind, "remap-pending") == 0 ||
	            strcmp(kind, "remap-failed") == 0 || strcmp(kind, "replays") == 0 || strcmp(kind, "fabric") == 0;
	if (!known) return -1;
	int i = strcmp(uuid, devices[0].uuid) == 0 ? 0 : strcmp(uuid, devices[1].uuid) == 0 ? 1 : -1;
	if (i < 0) return 0;
	struct fake_verdict *v = verdict(i);
	unsigned long long type = 0;
	if (strcmp(kind, "recovery") == 0) {
		v->recovery = (unsigned int)a;
		type = n >= 4 && b == 0 ? 0 : NVML_EVENT_RECOVERY;
	} else if (strcmp(kind, "unavailable") == 0) {
		type = NVML_EVENT_UNAVAILABLE;
	} else if (strcmp(kind, "remap-pending") == 0) {
		v->remap_pending = (int)a;
	} else if (strcmp(kind, "remap-failed") == 0) {
		v->remap_failed = (int)a;
	} else if (strcmp(kind, "replays") == 0) {
		v->replays = (unsigned int)a;
	} else {
		v->fabric = 1;
		v->fstate = (int)a, v->fstatus = (int)b, v->fsummary = (int)c, v->fmask = (unsigned int)d;
	}
	logcall("nvmlEventSetWait_v2 %s %s %lld", kind, uuid, a);
	if (!(set->types[i] & type & NVML_EVENTS_NEW)) return 0; // not registered for it (or none): NVML drops it
	memset(data, 0, sizeof *data);
	data->device = &devices[i];
	data->eventType = type;
	data->eventData = type == NVML_EVENT_RECOVERY ? v->recovery : 0;
	data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
	return 1;
}

// remap_state is device i's row remapping: pending or failed.
static unsigned int remap_state(int i, int failed) {
	int v = failed ? verdict(i)->remap_failed : verdict(i)->remap_pending;
	return (unsigned int)(v >= 0 ? v : envint(failed ? "GPUINIT_FAKE_NVML_REMAP_FAILED" : "GPUINIT_FAKE_NVML_REMAP_PENDING", 0));
}

#ifndef FAKE_NVML_OLD
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
} nvmlFieldValue_t;

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values) {
	maybe_hang("nvmlDeviceGetFieldValues");
	if (!initialized) return 1;
	int i = device_index(d);
	if (i < 0 || !values || count <= 0) return 2;
	for (int k = 0; k < count; k++) {
		nvmlFieldValue_t *v = &values[k];
		v->timestamp = (long long)time(NULL) * 1000000LL;
		v->latencyUsec = 0;
		v->nvmlReturn = 3; // NVML_ERROR_NOT_SUPPORTED: the only field it knows is 230
		if (v->fieldId != 230 || getenv("GPUINIT_FAKE_NVML_NO_RECOVERY")) continue;
		v->valueType = 1; // NVML_VALUE_TYPE_UNSIGNED_INT
		v->value.ullVal = 0;
		v->value.uiVal = verdict(i)->recovery;
		v->nvmlReturn = 0;
	}
	return 0;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *value) {
	maybe_hang("nvmlDeviceGetPcieReplayCounter");
	if (!initialized) return 1;
	int i = device_index(d);
	if (i < 0 || !value) return 2;
	*value = verdict(i)->replays;
	return 0;
}

// The fabric info's layout: v2 is this without healthSummary, 36 bytes.
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
	unsigned int healthMask;
	unsigned char healthSummary;
} nvmlGpuFabricInfoV_t;
#define FAKE_FABRIC_V2 (36u | (2u << 24))
#define FAKE_FABRIC_V3 (40u | (3u << 24))

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, nvmlGpuFabricInfoV_t *info) {
	maybe_hang("nvmlDeviceGetGpuFabricInfoV");
	if (!initialized) return 1;
	int i = device_index(d);
	if (i < 0 || !info) return 2;
	int v3 = info->version == FAKE_FABRIC_V3 && !getenv("GPUINIT_FAKE_NVML_FABRIC_V2");
	if (!v3 && info->version != FAKE_FABRIC_V2) return 25; // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
	struct fake_verdict *v = verdict(i);
	if (!v->fabric) return 3;
	// Only the caller's version's bytes are written: a v2 caller's struct
	// ends at healthMask.
	memset(info->clusterUuid, 0xab, sizeof info->clusterUuid);
	info->status = v->fstatus;
	info->cliqueId = 7;
	info->state = (unsigned char)v->fstate;
	info->healthMask = v->fmask;
	if (v3) info->healthSummary = (unsigned char)v->fsummary;
	return 0;
}
#endif
