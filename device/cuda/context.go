//go:build linux && cgo && !nocuda

package cuda

import "runtime"

// primaryContext is a device's primary context: the one the CUDA runtime and
// the libraries built on it (cudart, cuBLAS, cuRAND, llama.cpp) share with the
// driver API in this process. Retain it before use and release it once done.
type primaryContext struct {
	dev cuDevice
	ctx cuContext
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

// release releases the context (cuDevicePrimaryCtxRelease_v2).
func (p *primaryContext) release() error {
	return check("cuDevicePrimaryCtxRelease_v2", primaryCtxRelease(p.dev))
}
