package main

import (
	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// maxTaintedSlice is the most devices a ResourceSlice with a tainted device
// may hold (128 without taints).
const maxTaintedSlice = 64

// vendors are the vendor attribute's values by gpuinit backend.
var vendors = map[string]string{"cuda": "nvidia", "hip": "amd", "sim": "gpuinit-sim"}

// resources are the pool of the node's devices as ResourceSlices, each
// device with its attributes, its memory, and the taint of its health now.
func resources(pool, backend string, devices []device.Info, feed *drahealth.Feed) resourceslice.DriverResources {
	var all []resourceapi.Device
	for _, d := range devices {
		id, ok := feed.ID(d.Ordinal)
		if !ok {
			continue
		}
		all = append(all, describe(id.Device, backend, d))
	}
	feed.Taint(pool, all)
	var slices []resourceslice.Slice
	for len(all) > 0 {
		n := min(len(all), maxTaintedSlice)
		slices = append(slices, resourceslice.Slice{Devices: all[:n:n]})
		all = all[n:]
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{pool: {Slices: slices}}}
}

// describe is device d, named name, as a ResourceSlice lists it. A MIG
// slice is a device of its own, with its profile and its parent GPU.
func describe(name, backend string, d device.Info) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	str := func(key resourceapi.QualifiedName, v string) {
		if v != "" {
			attrs[key] = resourceapi.DeviceAttribute{StringValue: &v}
		}
	}
	str("vendor", vendors[backend])
	str("uuid", d.UUID)
	str("productName", d.Name)
	str("architecture", d.Arch)
	if d.MIG == nil {
		str("resource.kubernetes.io/pciBusID", d.PCIBusID)
		str("type", "gpu")
	} else {
		str("type", "mig")
		str("parentUUID", d.MIG.ParentUUID)
		str("parentPCIBusID", d.MIG.ParentPCIBusID)
		str("profile", d.MIG.Profile)
	}
	out := resourceapi.Device{Name: name, Attributes: attrs}
	if d.TotalMemory > 0 {
		out.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(int64(d.TotalMemory), resource.BinarySI)},
		}
	}
	return out
}
