package drahealth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// DefaultTimeout is the kubelet's default health check timeout: a device not
// reported within it becomes Unknown.
const DefaultTimeout = 30 * time.Second

// Options configure a Feed. The zero value, but for Pool, is the default.
type Options struct {
	// Name names the devices; nil is ByUUID(Pool).
	Name Namer
	// Pool is ByUUID's pool where Name is nil: the node's name.
	Pool string
	// Degraded is what a Degraded device reports: HealthStatusHealthy (the
	// default, "") or HealthStatusUnhealthy, with the reason in the message
	// either way. A degraded GPU still works (a row remap waits for a
	// reset, PCIe replays run high, the driver asks for a drain), so by
	// default it stays Healthy: what acts on Unhealthy (an operator's
	// alert, a controller that restarts the pod) would stop work that
	// runs. Its taint (NoSchedule, see TaintFor) keeps new pods off it.
	Degraded kubeletplugin.HealthStatus
	// Timeout is the HealthCheckTimeout every report carries: whole seconds,
	// at least 1 s; 0 is DefaultTimeout.
	Timeout time.Duration
	// Resend is how often every device is sent again though nothing
	// changed: below Timeout; 0 is a third of Timeout.
	Resend time.Duration
}

// Feed turns a Source's device health into the kubelet plugin's health
// reports: its WatchHealthStatus is kubeletplugin.DRAPlugin's. Its methods
// are safe for concurrent use; each call of WatchHealthStatus is one stream
// of its own.
type Feed struct {
	src      Source
	devices  []device.Info
	ids      []ID
	index    map[int]int // ordinal -> index in devices
	degraded kubeletplugin.HealthStatus
	timeout  time.Duration
	resend   time.Duration
}

// ErrBadOption is wrapped by NewFeed's error for an option it cannot use.
var ErrBadOption = errors.New("bad option")

// NewFeed returns the Feed of devices (a Runtime's Devices, MIG slices
// included) from src. It fails where a device cannot be named, two share a
// name, or an option cannot be used (wrapping ErrBadOption, naming it).
func NewFeed(src Source, devices []device.Info, opts Options) (*Feed, error) {
	f := &Feed{src: src, devices: devices, degraded: opts.Degraded, timeout: opts.Timeout, resend: opts.Resend}
	if f.degraded == "" {
		f.degraded = kubeletplugin.HealthStatusHealthy
	}
	if f.degraded != kubeletplugin.HealthStatusHealthy && f.degraded != kubeletplugin.HealthStatusUnhealthy {
		return nil, fmt.Errorf("drahealth: Options.Degraded %q: want Healthy or Unhealthy: %w", opts.Degraded, ErrBadOption)
	}
	if f.timeout == 0 {
		f.timeout = DefaultTimeout
	}
	if f.timeout < time.Second || f.timeout%time.Second != 0 {
		return nil, fmt.Errorf("drahealth: Options.Timeout %v: want whole seconds, at least 1s (the wire carries seconds): %w", opts.Timeout, ErrBadOption)
	}
	if f.resend == 0 {
		f.resend = f.timeout / 3
	}
	if f.resend < 0 || f.resend >= f.timeout {
		return nil, fmt.Errorf("drahealth: Options.Resend %v: want more than 0 and less than the timeout %v: %w", opts.Resend, f.timeout, ErrBadOption)
	}
	name := opts.Name
	if name == nil {
		name = ByUUID(opts.Pool)
	}
	ids, err := nameAll(devices, name)
	if err != nil {
		return nil, fmt.Errorf("drahealth: %w", err)
	}
	f.ids = ids
	f.index = make(map[int]int, len(devices))
	for i, d := range devices {
		f.index[d.Ordinal] = i
	}
	return f, nil
}

// ID is the pool and name of the device with this ordinal; false for one
// that is not the Feed's.
func (f *Feed) ID(ordinal int) (ID, bool) {
	i, ok := f.index[ordinal]
	if !ok {
		return ID{}, false
	}
	return f.ids[i], true
}

// Resend is how often every device is sent again: Options.Resend or its
// default.
func (f *Feed) Resend() time.Duration { return f.resend }

// WatchHealthStatus sends reports until ctx ends, then returns nil: first
// every device, then the devices whose health or message changed at each
// change of the Source, and every device again each Options.Resend. Every
// report reads the Source afresh: a device whose watch is stuck goes out as
// Unknown at the next re-send at the latest. It never blocks once ctx has
// ended, and never fails.
func (f *Feed) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	snap := f.src.Health()
	sent := f.build(snap)
	if !send(ctx, reports, sent) {
		return nil
	}
	resend := time.NewTicker(f.resend)
	defer resend.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-snap.Changed:
			snap = f.src.Health()
			now := f.build(snap)
			var changed []kubeletplugin.DeviceHealth
			for i := range now {
				if now[i].Health != sent[i].Health || now[i].Message != sent[i].Message {
					changed = append(changed, now[i])
				}
			}
			sent = now
			if len(changed) > 0 && !send(ctx, reports, changed) {
				return nil
			}
		case <-resend.C:
			snap = f.src.Health()
			sent = f.build(snap)
			if !send(ctx, reports, sent) {
				return nil
			}
		}
	}
}

// Report is every device's health now, as WatchHealthStatus's first report.
func (f *Feed) Report() kubeletplugin.DeviceHealthReport {
	return kubeletplugin.DeviceHealthReport{Devices: f.build(f.src.Health())}
}

// send sends devices as one report, or gives up when ctx ends first.
func send(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport, devices []kubeletplugin.DeviceHealth) bool {
	select {
	case <-ctx.Done():
		return false
	case reports <- kubeletplugin.DeviceHealthReport{Devices: devices}:
		return true
	}
}

// build is every device's report from snap, in the Feed's order.
func (f *Feed) build(snap Snapshot) []kubeletplugin.DeviceHealth {
	now := time.Now()
	out := make([]kubeletplugin.DeviceHealth, len(f.devices))
	for i, id := range f.ids {
		out[i] = kubeletplugin.DeviceHealth{PoolName: id.Pool, DeviceName: id.Device, LastUpdated: now,
			HealthCheckTimeout: f.timeout, Health: kubeletplugin.HealthStatusUnknown, Message: noState}
	}
	for _, s := range snap.Devices {
		if i, ok := f.index[s.Ordinal]; ok {
			out[i].Health, out[i].Message = status(s, f.degraded)
		}
	}
	return out
}
