// NVML's MIG and identity calls as the cuda backend makes them, in one cgo
// call per device, each optional (checked for NULL). Strings come back in
// fixed buffers that are NUL-terminated here, whatever NVML wrote.
#ifndef GPUINIT_NVML_MIG_H
#define GPUINIT_NVML_MIG_H

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} gpuinit_nvmlPciInfo;

// gpuinit_nvml_mig is what NVML says of a MIG device handle: r is the first
// failing call's nvmlReturn_t (0 if none), mig 0 for a whole GPU.
struct gpuinit_nvml_mig {
	nvmlReturn_t r;
	unsigned int mig, gi, ci;
	char name[96], parent_uuid[96], parent_bus[32];
};

static struct gpuinit_nvml_mig gpuinit_nvmlMIG(nvmlDevice_t d) {
	struct gpuinit_nvml_mig m;
	nvmlDevice_t parent = NULL;
	gpuinit_nvmlPciInfo pci;
	memset(&m, 0, sizeof m);
	if (!gpuinit_nvml.nvmlDeviceIsMigDeviceHandle || !gpuinit_nvml.nvmlDeviceGetGpuInstanceId ||
	    !gpuinit_nvml.nvmlDeviceGetComputeInstanceId || !gpuinit_nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle ||
	    !gpuinit_nvml.nvmlDeviceGetUUID || !gpuinit_nvml.nvmlDeviceGetPciInfo_v3) {
		m.r = GPUINIT_NVML_MISSING;
		return m;
	}
	if ((m.r = gpuinit_nvml.nvmlDeviceIsMigDeviceHandle(d, &m.mig)) != 0 || !m.mig) return m;
	if ((m.r = gpuinit_nvml.nvmlDeviceGetGpuInstanceId(d, &m.gi)) != 0) return m;
	if ((m.r = gpuinit_nvml.nvmlDeviceGetComputeInstanceId(d, &m.ci)) != 0) return m;
	if (gpuinit_nvml.nvmlDeviceGetName && gpuinit_nvml.nvmlDeviceGetName(d, m.name, sizeof m.name) != 0) m.name[0] = 0;
	if ((m.r = gpuinit_nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d, &parent)) != 0) return m;
	if ((m.r = gpuinit_nvml.nvmlDeviceGetUUID(parent, m.parent_uuid, sizeof m.parent_uuid)) != 0) return m;
	memset(&pci, 0, sizeof pci);
	if ((m.r = gpuinit_nvml.nvmlDeviceGetPciInfo_v3(parent, &pci)) != 0) return m;
	memcpy(m.parent_bus, pci.busId, sizeof m.parent_bus);
	m.name[sizeof m.name - 1] = m.parent_uuid[sizeof m.parent_uuid - 1] = m.parent_bus[sizeof m.parent_bus - 1] = 0;
	return m;
}

#endif
