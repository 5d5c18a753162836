// Package drahealth feeds a gpuinit Runtime's device health to Kubernetes'
// Dynamic Resource Allocation: as the kubelet plugin's health reports, and as
// device taints on the driver's ResourceSlices.
//
// A [Feed] implements the WatchHealthStatus method of
// k8s.io/dynamic-resource-allocation/kubeletplugin's DRAPlugin by that
// method's rules: an initial report of every device, a report of the devices
// that changed at each change (it waits on the [Source]'s change channel and
// never polls for changes), and a re-send of every device within the
// kubelet's timeout. Each re-send reads the Source again and never repeats an
// old report, so a device whose health watch is stuck or stopped goes out as
// Unknown, never as the Healthy it last was. [TaintFor] and [Feed.Taint] turn the same states
// into [resourceapi.DeviceTaint]s, and [ByUUID] names gpuinit's devices as a
// driver publishes them.
//
// A [Source] is a Runtime of any vendor's backend through [FromRuntime], or
// anything else that can say, without blocking, what each device's verdict
// is and whether it can vouch for it now.
package drahealth
