// The hip backend's ROCm SMI side: the few librocm_smi64 calls its health
// watch makes, declared here so that no ROCm header is needed to build, one
// table of function pointers filled by dlsym at the first watch, and thin
// wrappers that call through it. A function the library lacks stays NULL;
// the Go side binds it as required, so no wrapper is reached with one.
#ifndef GPUINIT_RSMI_SHIM_H
#define GPUINIT_RSMI_SHIM_H

#include <stdint.h>

typedef int rsmi_status_t;
typedef struct { uint32_t major, minor, patch; const char *build; } gpuinit_rsmi_version_t;

struct gpuinit_rsmi {
	rsmi_status_t (*rsmi_init)(uint64_t);
	rsmi_status_t (*rsmi_shut_down)(void);
	rsmi_status_t (*rsmi_version_get)(gpuinit_rsmi_version_t *);
	rsmi_status_t (*rsmi_num_monitor_devices)(uint32_t *);
	rsmi_status_t (*rsmi_dev_pci_id_get)(uint32_t, uint64_t *);
	rsmi_status_t (*rsmi_status_string)(rsmi_status_t, const char **);
	rsmi_status_t (*rsmi_event_notification_init)(uint32_t);
	rsmi_status_t (*rsmi_event_notification_mask_set)(uint32_t, uint64_t);
	// The data is an array of rsmi_evt_notification_data_t, whose size
	// differs between releases: the Go side passes bytes and decodes them.
	rsmi_status_t (*rsmi_event_notification_get)(int, uint32_t *, void *);
	rsmi_status_t (*rsmi_event_notification_stop)(uint32_t);
};
extern struct gpuinit_rsmi gpuinit_rsmi;

static rsmi_status_t gpuinit_rsmiInit(void) { return gpuinit_rsmi.rsmi_init(0); }
static rsmi_status_t gpuinit_rsmiShutDown(void) { return gpuinit_rsmi.rsmi_shut_down(); }
static rsmi_status_t gpuinit_rsmiVersion(gpuinit_rsmi_version_t *v) { return gpuinit_rsmi.rsmi_version_get(v); }
static rsmi_status_t gpuinit_rsmiNumDevices(uint32_t *n) { return gpuinit_rsmi.rsmi_num_monitor_devices(n); }
static rsmi_status_t gpuinit_rsmiPCIID(uint32_t d, uint64_t *id) { return gpuinit_rsmi.rsmi_dev_pci_id_get(d, id); }
static rsmi_status_t gpuinit_rsmiStatusString(rsmi_status_t r, const char **s) { return gpuinit_rsmi.rsmi_status_string(r, s); }
static rsmi_status_t gpuinit_rsmiEventInit(uint32_t d) { return gpuinit_rsmi.rsmi_event_notification_init(d); }
static rsmi_status_t gpuinit_rsmiEventMask(uint32_t d, uint64_t m) { return gpuinit_rsmi.rsmi_event_notification_mask_set(d, m); }
static rsmi_status_t gpuinit_rsmiEventGet(int ms, uint32_t *n, void *data) { return gpuinit_rsmi.rsmi_event_notification_get(ms, n, data); }
static rsmi_status_t gpuinit_rsmiEventStop(uint32_t d) { return gpuinit_rsmi.rsmi_event_notification_stop(d); }

#endif
