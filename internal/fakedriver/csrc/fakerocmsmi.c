// A fake librocm_smi64 (ROCm SMI) for gpuinit's tests: the event notification
// API of a host with the two GPUs of fakehip.c, listed in the other order (ROCm
// SMI's index 0 is the GPU at 0000:03:00.0, HIP's ordinal 1), so that a test
// proves devices are matched by PCI bus id, never by index. Strict where the
// real one is (5.2.3's src/rocm_smi.cc): a NULL pointer, a bad dv_ind, or any
// device call before rsmi_init is RSMI_STATUS_INVALID_ARGS (1, as 5.2.3 answers
// with no devices known); rsmi_event_notification_mask_set before
// rsmi_event_notification_init of that device is RSMI_STATUS_INIT_ERROR (8);
// rsmi_event_notification_stop of a device not started is 1; a get with
// *num_elem 0 is 1, and one that times out with nothing is RSMI_STATUS_NO_DATA
// (14). An event is delivered only to a started device whose mask has its bit,
// once. Settable through the environment:
//
//   GPUINIT_FAKE_RSMI_LOG      append one line per call to this file
//   GPUINIT_FAKE_RSMI_LAYOUT   the release it acts as, which sets both the version
//                              rsmi_version_get reports and the event struct:
//                              "5.2" (default): Debian 12's 5.2.3, version 1.0.0,
//                              {uint32 dv_ind; enum event; char message[64]},
//                              events 1-4; "6.1": ROCm 6.1.2, version 7.2.0, the same
//                              struct, ring hang 5; "kernel": the newest, version
//                              7.8.0, char message[96] and the kernel's KFD numbering
//                              (5 is migrate-start, no ring hang)
//   GPUINIT_FAKE_RSMI_DEVICES  number of devices, 0..2 (default 2)
//   GPUINIT_FAKE_RSMI_BUS      if set, the PCI bus id of index 0 instead of 0000:03:00.0
//                              (as "0000:c1:00.0", to make two indexes share one GPU)
//   GPUINIT_FAKE_RSMI_INIT     the status rsmi_init returns (default 0)
//   GPUINIT_FAKE_RSMI_INIT_HANG, _CRASH, _DELAY_MS, _FAIL_FILE, _FAIL_TIMES
//                              what rsmi_init does first (fakecommon.h's fake_init)
//   GPUINIT_FAKE_RSMI_EVENTS   a file of events, one a line, read as the test appends
//                              to it: "<bus id> <event number> <message>" (the rest of
//                              the line; copied into message[] without a NUL when it
//                              fills it), "error <status>" (the next get fails so), or
//                              "hang" (the next get never returns); a get takes a line
//                              as soon as it is appended
//   GPUINIT_FAKE_RSMI_WAIT_MAX_MS  if set, a get times out after at most this many ms,
//                              whatever the caller asked: a process that stops its
//                              watch then waits no longer, so a test that runs one is
//                              not timed by ROCm SMI's wall-clock wait
//   GPUINIT_FAKE_RSMI_HANG     the name of a call that never returns (it logs "<call>
//                              hang" first), such as rsmi_event_notification_get
//   GPUINIT_FAKE_RSMI_CRASH    the name of a call that crashes on a bad pointer
//   GPUINIT_FAKE_RSMI_FAIL_CALL, _FAIL_CODE, _FAIL_TIMES
//                              that call returns _FAIL_CODE (default 6, an internal
//                              exception) its first _FAIL_TIMES times (default: always)
//   GPUINIT_FAKE_LOG_PID       if set, each log line ends with " pid=N"
//
// Define GPUINIT_FAKE_RSMI_OMIT_<function> to leave rsmi_version_get or
// rsmi_event_notification_get out.
//
// Build: cc -shared -fPIC -Wl,-soname,librocm_smi64.so.7 -o librocm_smi64.so.7 fakerocmsmi.c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_LOG_ENV "GPUINIT_FAKE_RSMI_LOG"
#include "fakecommon.h"

typedef int rsmi_status_t;
#define INVALID_ARGS 1
#define INIT_ERROR 8
#define NO_DATA 14

typedef struct { uint32_t major, minor, patch; const char *build; } rsmi_version_t;

static int initialized;        // rsmi_init's count, as the real one keeps a refcount
static int started[2];         // rsmi_event_notification_init done, per index
static uint64_t masks[2];      // rsmi_event_notification_mask_set's, per index
static long events_read;       // how far into the events file the fake has delivered
static int fail_seen;          // calls of _FAIL_CALL so far

static int ndevices(void) {
	int n = envint("GPUINIT_FAKE_RSMI_DEVICES", 2);
	return n < 0 ? 0 : n > 2 ? 2 : n;
}

static const char *bus_of(uint32_t i) {
	const char *b = getenv("GPUINIT_FAKE_RSMI_BUS");
	return i == 0 ? (b && *b ? b : "0000:03:00.0") : "0000:c1:00.0";
}

// layout is 0 for "5.2", 1 for "6.1", 2 for "kernel".
static int layout(void) {
	const char *l = getenv("GPUINIT_FAKE_RSMI_LAYOUT");
	if (!l || !*l || strcmp(l, "5.2") == 0) return 0;
	return strcmp(l, "6.1") == 0 ? 1 : 2;
}
static size_t msg_size(void) { return layout() == 2 ? 96 : 64; }
static size_t stride(void) { return 8 + msg_size(); }

static void hang(void) {
	for (;;) {
		struct timespec s = {1, 0};
		nanosleep(&s, NULL);
	}
}

// enter logs call and does what the hang, crash and fail knobs say of it: it
// returns the status to fail with, or 0 to go on.
static rsmi_status_t enter(const char *call, const char *args) {
	logcall("%s%s%s", call, *args ? " " : "", args);
	const char *h = getenv("GPUINIT_FAKE_RSMI_HANG");
	if (h && strcmp(h, call) == 0) {
		logcall("%s hang", call);
		hang();
	}
	const char *c = getenv("GPUINIT_FAKE_RSMI_CRASH");
	if (c && strcmp(c, call) == 0) *(volatile int *)0 = 1;
	const char *f = getenv("GPUINIT_FAKE_RSMI_FAIL_CALL");
	if (f && strcmp(f, call) == 0) {
		int times = envint("GPUINIT_FAKE_RSMI_FAIL_TIMES", -1);
		if (times < 0 || fail_seen < times) {
			fail_seen++;
			return envint("GPUINIT_FAKE_RSMI_FAIL_CODE", 6);
		}
	}
	return 0;
}

// device checks what every device call does first.
static rsmi_status_t device(const char *call, uint32_t dv) {
	char args[32];
	snprintf(args, sizeof args, "%u", dv);
	rsmi_status_t r = enter(call, args);
	if (r) return r;
	if (!initialized) {
		logcall("before-init %s", call);
		return INVALID_ARGS;
	}
	return dv >= (uint32_t)ndevices() ? INVALID_ARGS : 0;
}

rsmi_status_t rsmi_init(uint64_t flags) {
	rsmi_status_t r = enter("rsmi_init", "");
	if (r) return r;
	if (flags) return INVALID_ARGS;
	if ((r = fake_init("GPUINIT_FAKE_RSMI_INIT", envint("GPUINIT_FAKE_RSMI_INIT", 0)))) return r;
	initialized++;
	return 0;
}

rsmi_status_t rsmi_shut_down(void) {
	rsmi_status_t r = enter("rsmi_shut_down", "");
	if (r) return r;
	if (!initialized) return INIT_ERROR;
	if (--initialized == 0) started[0] = started[1] = 0;
	return 0;
}

#ifndef GPUINIT_FAKE_RSMI_OMIT_rsmi_version_get
rsmi_status_t rsmi_version_get(rsmi_version_t *v) {
	rsmi_status_t r = enter("rsmi_version_get", "");
	if (r) return r;
	if (!v) return INVALID_ARGS;
	static const rsmi_version_t versions[3] = {{1, 0, 0, "0"}, {7, 2, 0, "7.2.0"}, {7, 8, 0, "7.8.0+fake"}};
	*v = versions[layout()];
	return 0;
}
#endif

rsmi_status_t rsmi_num_monitor_devices(uint32_t *n) {
	rsmi_status_t r = enter("rsmi_num_monitor_devices", "");
	if (r) return r;
	if (!n) return INVALID_ARGS;
	*n = initialized ? (uint32_t)ndevices() : 0; // 5.2.3 answers 0 before a successful init
	return 0;
}

// rsmi_dev_pci_id_get's BDFID: domain << 32 | bus << 8 | device << 3 | function.
rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid) {
	rsmi_status_t r = device("rsmi_dev_pci_id_get", dv);
	if (r) return r;
	if (!bdfid) return INVALID_ARGS;
	unsigned dom, bus, dev, fn;
	if (sscanf(bus_of(dv), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return 6;
	*bdfid = (uint64_t)dom << 32 | bus << 8 | dev << 3 | fn;
	return 0;
}

rsmi_status_t rsmi_status_string(rsmi_status_t s, const char **str) {
	if (!str) return INVALID_ARGS;
	static const char *names[] = {"RSMI_STATUS_SUCCESS: fake", "RSMI_STATUS_INVALID_ARGS: fake", "RSMI_STATUS_NOT_SUPPORTED: fake",
	                              "RSMI_STATUS_FILE_ERROR: fake", "RSMI_STATUS_PERMISSION: fake", "RSMI_STATUS_OUT_OF_RESOURCES: fake",
	                              "RSMI_STATUS_INTERNAL_EXCEPTION: fake", "RSMI_STATUS_INPUT_OUT_OF_BOUNDS: fake",
	                              "RSMI_STATUS_INIT_ERROR: fake"};
	*str = s >= 0 && s < (int)(sizeof names / sizeof names[0]) ? names[s] : "RSMI_STATUS_UNKNOWN_ERROR: fake";
	return 0;
}

rsmi_status_t rsmi_event_notification_init(uint32_t dv) {
	rsmi_status_t r = device("rsmi_event_notification_init", dv);
	if (r) return r;
	started[dv] = 1;
	return 0;
}

rsmi_status_t rsmi_event_notification_mask_set(uint32_t dv, uint64_t mask) {
	rsmi_status_t r = device("rsmi_event_notification_mask_set", dv);
	if (r) return r;
	logcall("mask %u 0x%llx", dv, (unsigned long long)mask);
	if (!started[dv]) return INIT_ERROR;
	masks[dv] = mask;
	return 0;
}

rsmi_status_t rsmi_event_notification_stop(uint32_t dv) {
	rsmi_status_t r = device("rsmi_event_notification_stop", dv);
	if (r) return r;
	if (!started[dv]) return INVALID_ARGS;
	started[dv] = 0;
	return 0;
}

// next_event reads the next complete line of the events file not yet
// delivered, into line; 0 if there is none yet.
__attribute__((unused)) static int next_event(char *line, size_t len) { return fake_next_line("GPUINIT_FAKE_RSMI_EVENTS", &events_read, line, len); }

// deliver fills entry n of data from line "<bus> <event> <message>": 1 if it
// went to a started device whose mask has the event's bit, else 0 (dropped).
__attribute__((unused)) static int deliver(const char *line, unsigned char *data, uint32_t n) {
	char bus[32];
	unsigned ev;
	int off = 0;
	if (sscanf(line, "%31s %u %n", bus, &ev, &off) < 2 || ev == 0 || ev > 64) return 0;
	for (uint32_t i = 0; i < (uint32_t)ndevices(); i++) {
		if (strcmp(bus, bus_of(i)) != 0 || !started[i] || !(masks[i] & 1ULL << (ev - 1))) continue;
		unsigned char *e = data + (size_t)n * stride();
		uint32_t ev32 = ev;
		memcpy(e, &i, 4);
		memcpy(e + 4, &ev32, 4);
		memset(e + 8, 0, msg_size());
		size_t len = strcspn(line + off, "\n");
		memcpy(e + 8, line + off, len < msg_size() ? len : msg_size()); // no NUL when it fills the field
		logcall("deliver %u %u", i, ev);
		return 1;
	}
	return 0;
}

#ifndef GPUINIT_FAKE_RSMI_OMIT_rsmi_event_notification_get
// get_lines is rsmi_event_notification_get's wait, over the lines watch w
// sees: it returns the events delivered as soon as there are any, fails or
// hangs as a line says, or answers NO_DATA at timeout_ms.
static rsmi_status_t get_lines(struct fake_lines *w, int timeout_ms, uint32_t room, uint32_t *num, void *data) {
	struct timespec start = {0, 0};
	for (long waited = (long)fake_elapsed_ms(&start);; waited = (long)fake_elapsed_ms(&start)) {
		char line[512];
		while (*num < room && next_event(line, sizeof line)) {
			if (strncmp(line, "hang", 4) == 0) {
				logcall("rsmi_event_notification_get hang");
				hang();
			}
			if (strncmp(line, "error ", 6) == 0) {
				logcall("rsmi_event_notification_get error %d", atoi(line + 6));
				return atoi(line + 6);
			}
			*num += (uint32_t)deliver(line, data, *num);
		}
		if (*num > 0) return 0;
		if (waited >= timeout_ms) return NO_DATA;
		fake_lines_wait(w, (unsigned long)(timeout_ms - waited));
	}
}

// rsmi_event_notification_get blocks until a line of the events file ends
// the wait, or timeout_ms: it takes a line as soon as it is appended and
// uses no CPU before (fakecommon.h's fake_lines), so that neither a test's
// latency nor a test of the watch's own CPU use measures the fake.
rsmi_status_t rsmi_event_notification_get(int timeout_ms, uint32_t *num, void *data) {
	rsmi_status_t r = enter("rsmi_event_notification_get", "");
	if (r) return r;
	if (!num || !data || *num == 0) return INVALID_ARGS;
	uint32_t room = *num;
	*num = 0;
	int cap = envint("GPUINIT_FAKE_RSMI_WAIT_MAX_MS", 0);
	if (cap > 0 && timeout_ms > cap) timeout_ms = cap;
	struct fake_lines w = fake_lines_watch("GPUINIT_FAKE_RSMI_EVENTS");
	r = get_lines(&w, timeout_ms, room, num, data);
	fake_lines_done(&w);
	return r;
}
#endif
