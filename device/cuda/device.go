//go:build linux && cgo && !nocuda

package cuda

import (
	"fmt"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// CUdevice_attribute values, from cuda.h (stable across CUDA releases).
const (
	attrMultiprocessorCount    = 16
	attrIntegrated             = 18
	attrPCIBusID               = 33
	attrPCIDeviceID            = 34
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrPCIDomainID            = 50
	attrPageableMemoryAccess   = 88
)

// describe reads what driver.Info holds for one device; the caller has
// checked the ordinal.
func describe(ordinal int) (driver.Info, error) {
	dev, r := api.deviceGet(ordinal)
	if err := check("cuDeviceGet", r); err != nil {
		return driver.Info{}, err
	}
	info := driver.Info{Ordinal: ordinal}
	var err error
	if info.Name, r = api.deviceGetName(dev); r != 0 {
		return driver.Info{}, check("cuDeviceGetName", r)
	}
	if info.TotalMemory, r = api.deviceTotalMem(dev); r != 0 {
		return driver.Info{}, check("cuDeviceTotalMem_v2", r)
	}
	var bus, slot, domain, integrated int
	// In a fixed order, so that the calls, and the attribute a failure names,
	// are the same on every run.
	for _, a := range [...]struct {
		attr int
		dst  *int
	}{
		{attrComputeCapabilityMajor, &info.ComputeMajor}, {attrComputeCapabilityMinor, &info.ComputeMinor},
		{attrMultiprocessorCount, &info.Multiprocessors}, {attrIntegrated, &integrated},
		{attrPCIBusID, &bus}, {attrPCIDeviceID, &slot}, {attrPCIDomainID, &domain},
	} {
		if *a.dst, r = api.deviceGetAttribute(a.attr, dev); r != 0 {
			return driver.Info{}, check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a.attr), r)
		}
	}
	info.Integrated = integrated != 0
	info.Arch = fmt.Sprintf("sm_%d%d", info.ComputeMajor, info.ComputeMinor)
	info.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", domain, bus, slot)
	if info.UUID, err = uuidOf(dev); err != nil {
		return driver.Info{}, err
	}
	// A driver too old to know the attribute (before CUDA 10) has no
	// pageable memory access to report.
	if v, r := api.deviceGetAttribute(attrPageableMemoryAccess, dev); r == 0 {
		info.PageableMemoryAccess = v != 0
	}
	if strings.HasPrefix(info.UUID, "MIG-") {
		info.MIG = migOf(info.UUID)
	}
	return info, nil
}

// uuidOf spells the device's UUID as nvidia-smi does: "GPU-" and the 16 bytes
// as 8-4-4-4-12 hex digits, or "MIG-" for a MIG instance. cuDeviceGetUuid_v2
// gives a MIG instance its own UUID while the older call gives its parent
// GPU's, so a device whose two answers differ is a MIG instance.
func uuidOf(dev cuDevice) (string, error) {
	b, v2, r := deviceUUID(dev)
	if r == notLoaded {
		return "", nil // neither call exists in this driver: the field stays empty
	}
	if err := check("cuDeviceGetUuid_v2", r); err != nil {
		return "", err
	}
	prefix := "GPU-"
	if v2 {
		if parent, r := deviceUUIDv1(dev); r == 0 && parent != b {
			prefix = "MIG-"
		}
	}
	return prefix + fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
