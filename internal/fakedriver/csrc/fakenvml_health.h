// The fake NVML's health API: events (Xid critical errors, single- and
// double-bit ECC), injected by a test through a file, and the counters a
// health watch reads. Included by fakenvml.c, after its device table.
//
//   GPUINIT_FAKE_NVML_EVENTS      a file of events, one per line, read as the
//                                 test appends to it: "xid <uuid> <code>",
//                                 "ecc-single <uuid>", "ecc-double <uuid>",
//                                 "error <nvmlReturn_t>" (the next wait fails so), or
//                                 "hang" (the next wait never returns, as on a dead
//                                 GPU; it logs "nvmlEventSetWait_v2 hang" first);
//                                 and the verdicts' lines of fakenvml_verdict.h. A
//                                 wait takes a line as soon as it is appended; one
//                                 that times out logs "nvmlEventSetWait_v2 timeout"
//   GPUINIT_FAKE_NVML_WAIT_MAX_MS if set, a wait times out after at most this many
//                                 ms, whatever the caller asked (its log line still
//                                 says what it asked): a process that stops its watch
//                                 then waits no longer, so a test that runs one is not
//                                 timed by NVML's wall-clock wait
//   GPUINIT_FAKE_NVML_NO_EVENTS   if set, no device supports events (as on Jetson, some vGPU)
//   GPUINIT_FAKE_NVML_PERSISTENCE persistence mode, 0 or 1 (default 1)
//   GPUINIT_FAKE_NVML_ECC_CORRECTED, _ECC_UNCORRECTED  the volatile ECC counts (default 0)
//   GPUINIT_FAKE_NVML_REMAP_PENDING, _REMAP_FAILED     row remapping state, 0 or 1 (default 0;
//                                 the events file can set it per device: fakenvml_verdict.h)
//   GPUINIT_FAKE_NVML_THROTTLE    the clock event reasons bit mask (default 0)
//   GPUINIT_FAKE_NVML_RETIRED_SBE, _RETIRED_DBE  pages retired for multiple single-bit
//                                 and for double-bit ECC errors (default 0)
//   GPUINIT_FAKE_NVML_RETIRED_PENDING  a page retirement is pending, 0 or 1 (default 0)
//   GPUINIT_FAKE_NVML_COUNTERS_HANG  if set, the counters read never returns (its
//                                 first call, nvmlDeviceGetPersistenceMode, logs
//                                 "nvmlDeviceGetPersistenceMode hang" and blocks)
#include <time.h>

typedef struct fake_event_set *nvmlEventSet_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define NVML_EVENT_SBE 0x1ULL
#define NVML_EVENT_DBE 0x2ULL
#define NVML_EVENT_XID 0x8ULL

struct fake_event_set { unsigned long long types[2]; };

// events_read is how far into the events file the fake has delivered: an
// event is delivered once, as a real NVML does, even to a set created after a
// failed wait.
static long events_read;

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
	logcall("nvmlEventSetCreate");
	maybe_hang("nvmlEventSetCreate");
	if (!initialized) return 1;
	if (!set) return 2;
	*set = calloc(1, sizeof **set);
	return *set ? 0 : 20; // NVML_ERROR_MEMORY
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
	logcall("nvmlEventSetFree");
	free(set);
	return 0;
}

static int device_index(nvmlDevice_t d) { return d == &devices[0] ? 0 : d == &devices[1] ? 1 : -1; }

#include "fakenvml_verdict.h"

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
	logcall("nvmlDeviceGetSupportedEventTypes %s", d ? d->uuid : "?");
	maybe_hang("nvmlDeviceGetSupportedEventTypes");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !types) return 2;
	*types = getenv("GPUINIT_FAKE_NVML_NO_EVENTS") ? 0 : NVML_EVENT_SBE | NVML_EVENT_DBE | 0x4ULL | NVML_EVENT_XID | 0x10ULL | NVML_EVENTS_NEW;
	return 0;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
	logcall("nvmlDeviceRegisterEvents %s %llu", d ? d->uuid : "?", types);
	maybe_hang("nvmlDeviceRegisterEvents");
	if (!initialized) return 1;
	int i = device_index(d);
	if (i < 0 || !set) return 2;
	if (getenv("GPUINIT_FAKE_NVML_NO_EVENTS")) return 3; // NVML_ERROR_NOT_SUPPORTED
	set->types[i] = types;
	return 0;
}

// next_event reads the next complete line of the events file not yet
// delivered, into line; 0 if there is none yet.
static int next_event(char *line, size_t len) { return fake_next_line("GPUINIT_FAKE_NVML_EVENTS", &events_read, line, len); }

// wait_lines is nvmlEventSetWait_v2's wait, over the lines watch w sees:
// the first line that delivers an event, fails the wait or hangs it ends it;
// a line that sets state is taken and the wait goes on, until timeoutms.
static nvmlReturn_t wait_lines(struct fake_lines *w, nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
	struct timespec start = {0, 0};
	for (unsigned long waited = fake_elapsed_ms(&start);; waited = fake_elapsed_ms(&start)) {
		char line[256], kind[32], uuid[96];
		unsigned long long code = 0;
		while (next_event(line, sizeof line)) {
			uuid[0] = 0;
			int v = verdict_line(line, set, data);
			if (v == 1) return 0;
			if (v == 0) continue;
			if (sscanf(line, "%31s %95s %llu", kind, uuid, &code) < 1) continue;
			if (strcmp(kind, "hang") == 0) {
				logcall("nvmlEventSetWait_v2 hang");
				hang();
			}
			if (strcmp(kind, "error") == 0) {
				logcall("nvmlEventSetWait_v2 error %s", uuid);
				return atoi(uuid);
			}
			for (int i = 0; i < 2; i++) {
				if (strcmp(uuid, devices[i].uuid) != 0) continue;
				unsigned long long type = strcmp(kind, "xid") == 0 ? NVML_EVENT_XID
				                          : strcmp(kind, "ecc-double") == 0 ? NVML_EVENT_DBE
				                          : strcmp(kind, "ecc-single") == 0 ? NVML_EVENT_SBE : 0;
				if (!(set->types[i] & type)) break; // not registered for it: NVML drops it
				logcall("nvmlEventSetWait_v2 %s %s %llu", kind, uuid, code);
				memset(data, 0, sizeof *data);
				data->device = &devices[i];
				data->eventType = type;
				data->eventData = type == NVML_EVENT_XID ? code : 0;
				data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
				return 0;
			}
		}
		if (waited >= timeoutms) {
			logcall("nvmlEventSetWait_v2 timeout");
			return 10; // NVML_ERROR_TIMEOUT
		}
		fake_lines_wait(w, timeoutms - waited);
	}
}

// nvmlEventSetWait_v2 blocks until a line of the events file ends the wait,
// or timeoutms: it takes a line as soon as it is appended and uses no CPU
// before (fakecommon.h's fake_lines), so that neither a test's latency nor
// a test of the watch's own CPU use measures the fake.
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
	if (!initialized) return 1;
	if (!set || !data) return 2;
	logcall("nvmlEventSetWait_v2 wait %u", timeoutms);
	maybe_hang("nvmlEventSetWait_v2");
	int cap = envint("GPUINIT_FAKE_NVML_WAIT_MAX_MS", 0);
	if (cap > 0 && timeoutms > (unsigned int)cap) timeoutms = (unsigned int)cap;
	struct fake_lines w = fake_lines_watch("GPUINIT_FAKE_NVML_EVENTS");
	nvmlReturn_t r = wait_lines(&w, set, data, timeoutms);
	fake_lines_done(&w);
	return r;
}

typedef int nvmlEnableState_t;

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode) {
	maybe_hang("nvmlDeviceGetPersistenceMode");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !mode) return 2;
	if (getenv("GPUINIT_FAKE_NVML_COUNTERS_HANG")) {
		logcall("nvmlDeviceGetPersistenceMode hang");
		hang();
	}
	*mode = envint("GPUINIT_FAKE_NVML_PERSISTENCE", 1);
	return 0;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t *current, nvmlEnableState_t *pending) {
	maybe_hang("nvmlDeviceGetEccMode");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !current || !pending) return 2;
	*current = *pending = 1;
	return 0;
}

// errorType 0 corrected, 1 uncorrected; counterType 0 volatile, 1 aggregate.
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int errorType, int counterType, unsigned long long *count) {
	maybe_hang("nvmlDeviceGetTotalEccErrors");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !count || counterType < 0 || counterType > 1) return 2;
	*count = (unsigned long long)envint(errorType == 0 ? "GPUINIT_FAKE_NVML_ECC_CORRECTED" : "GPUINIT_FAKE_NVML_ECC_UNCORRECTED", 0);
	return 0;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc, unsigned int *pending, unsigned int *failed) {
	maybe_hang("nvmlDeviceGetRemappedRows");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !corr || !unc || !pending || !failed) return 2;
	*corr = *unc = 0;
	*pending = remap_state(device_index(d), 0);
	*failed = remap_state(device_index(d), 1);
	return 0;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
	maybe_hang("nvmlDeviceGetCurrentClocksEventReasons");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !reasons) return 2;
	*reasons = (unsigned long long)envint("GPUINIT_FAKE_NVML_THROTTLE", 0);
	return 0;
}

// cause 0: multiple single-bit ECC errors; 1: a double-bit ECC error. As
// NVML's: *pageCount is the buffer's size in, the pages' count out, and too
// small a buffer is NVML_ERROR_INSUFFICIENT_SIZE.
nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t d, int cause, unsigned int *pageCount, unsigned long long *addresses,
                                          unsigned long long *timestamps) {
	maybe_hang("nvmlDeviceGetRetiredPages_v2");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !pageCount || !addresses || cause < 0 || cause > 1) return 2;
	unsigned int n = (unsigned int)envint(cause == 0 ? "GPUINIT_FAKE_NVML_RETIRED_SBE" : "GPUINIT_FAKE_NVML_RETIRED_DBE", 0);
	unsigned int room = *pageCount;
	*pageCount = n;
	if (room < n) return 7; // NVML_ERROR_INSUFFICIENT_SIZE
	for (unsigned int i = 0; i < n; i++) {
		addresses[i] = 0x1000ULL * (i + 1);
		if (timestamps) timestamps[i] = 1700000000ULL;
	}
	return 0;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, nvmlEnableState_t *pending) {
	maybe_hang("nvmlDeviceGetRetiredPagesPendingStatus");
	if (!initialized) return 1;
	if (device_index(d) < 0 || !pending) return 2;
	*pending = envint("GPUINIT_FAKE_NVML_RETIRED_PENDING", 0);
	return 0;
}
