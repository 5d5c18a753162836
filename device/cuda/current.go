//go:build linux && cgo && !nocuda

package cuda

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// primaryContext is a device's primary context: the one the CUDA runtime and
// the libraries built on it (cudart, cuBLAS, cuRAND, llama.cpp) share with the
// driver API in this process.
type primaryContext struct {
	dev cuDevice
	ctx cuContext
}

// primarySlot holds a device's primary context once retained.
type primarySlot struct {
	pc atomic.Pointer[primaryContext] // read without mu once set
	mu sync.Mutex                     // serializes the retain
}

// primaries has a slot per device, made at Init (the devices do not change
// after it): what Do and the generators use, each device's retained once, at
// its first use, and kept for the life of the process.
var primaries []primarySlot

// retainedPrimary returns device ordinal's primary context, retaining it at
// the first call. The steady path takes no lock; the first call for a device
// holds only that device's lock while the driver creates the context. A
// failed retain is not remembered: the next call tries again.
func retainedPrimary(ordinal int) (*primaryContext, error) {
	slot := &primaries[ordinal]
	if pc := slot.pc.Load(); pc != nil {
		return pc, nil
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if pc := slot.pc.Load(); pc != nil {
		return pc, nil
	}
	pc, err := retainPrimaryContext(ordinal)
	if err != nil {
		return nil, err
	}
	slot.pc.Store(pc)
	return pc, nil
}

// retainPrimaryContext retains device ordinal's primary context
// (cuDevicePrimaryCtxRetain), creating it if no one has. cuInit must have
// succeeded.
func retainPrimaryContext(ordinal int) (*primaryContext, error) {
	dev, r := api.deviceGet(ordinal)
	if err := check("cuDeviceGet", r); err != nil {
		return nil, err
	}
	ctx, r := primaryCtxRetain(dev)
	if err := check("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, err
	}
	return &primaryContext{dev: dev, ctx: ctx}, nil
}

// do makes the context current on a locked OS thread, runs f there, and
// restores the thread's previous context, whatever f does (panic included).
// f must not start goroutines that use the context.
func (p *primaryContext) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, r := swapContext(p.ctx)
	if err := check("cuCtxSetCurrent", r); err != nil {
		return err
	}
	defer setContext(prev)
	return f()
}

// Do runs fn on a locked OS thread with device ordinal's primary context
// current, and restores the thread's previous context afterwards, even if fn
// panics (the panic goes on). The primary context is retained at the first Do
// or generator for the device and kept for the life of the process; later
// calls take no lock to find it. The CUDA runtime
// (cudart, and cuBLAS, cuDNN or llama.cpp's CUDA backend on top of it) uses
// this same primary context, so work fn does through them lands in it.
func (b *Backend) Do(ordinal int, fn func() error) error {
	if err := checkOrdinal("cuCtxSetCurrent", ordinal); err != nil {
		return err
	}
	pc, err := retainedPrimary(ordinal)
	if err != nil {
		return err
	}
	return pc.do(fn)
}
