// The fake NVML's MIG and identity calls: a MIG device handle (found by its
// MIG- UUID) knows its GPU- and compute-instance ids and its parent GPU;
// every handle has a UUID, a name and PCI info. Included by fakenvml.c.
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

static int is_device(nvmlDevice_t d) {
	for (int i = 0; i < 4; i++)
		if (d == &devices[i]) return 1;
	return 0;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *isMig) {
	logcall("nvmlDeviceIsMigDeviceHandle %s", d && is_device(d) ? d->uuid : "?");
	if (!initialized) return 1;
	if (!is_device(d) || !isMig) return 2;
	*isMig = (unsigned int)d->mig;
	return 0;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
	if (!initialized) return 1;
	if (!is_device(d) || !id) return 2;
	if (!d->mig) return 3; // NVML_ERROR_NOT_SUPPORTED on a whole GPU
	*id = (unsigned int)d->gi;
	return 0;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) {
	if (!initialized) return 1;
	if (!is_device(d) || !id) return 2;
	if (!d->mig) return 3;
	*id = (unsigned int)d->ci;
	return 0;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *parent) {
	if (!initialized) return 1;
	if (!is_device(mig) || !parent || !mig->mig) return 2;
	*parent = &devices[0];
	return 0;
}

// copyOut copies s into buf of len bytes, as NVML does: too small is
// NVML_ERROR_INSUFFICIENT_SIZE (7).
static nvmlReturn_t copyOut(const char *s, char *buf, unsigned int len) {
	if (!buf) return 2;
	if (strlen(s) + 1 > len) return 7;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
	if (!initialized) return 1;
	if (!is_device(d)) return 2;
	return copyOut(d->uuid, uuid, len);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
	if (!initialized) return 1;
	if (!is_device(d)) return 2;
	return copyOut(d->name, name, len);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
	if (!initialized) return 1;
	if (!is_device(d) || !pci) return 2;
	memset(pci, 0, sizeof *pci);
	snprintf(pci->busId, sizeof pci->busId, "%s", d->bus);
	return 0;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
	if (!initialized) return 1;
	if (!is_device(d) || !index) return 2;
	if (d->mig) return 3; // a MIG device has no index of its own
	*index = d == &devices[0] ? 0 : 1;
	return 0;
}
