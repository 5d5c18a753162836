//go:build cuda && cgo

package cuda

/*
#include <cuda.h>
*/
import "C"

import "runtime"

// PrimaryContext is a device's primary context: the one the CUDA runtime and
// the libraries built on it (cuRAND, cuBLAS) share with the driver API in this
// process. Retain it before use and Release it once done.
type PrimaryContext struct {
	dev C.CUdevice
	ctx C.CUcontext
}

// RetainPrimaryContext retains device ordinal's primary context
// (cuDevicePrimaryCtxRetain). cuInit must have succeeded.
func RetainPrimaryContext(ordinal int) (*PrimaryContext, error) {
	var p PrimaryContext
	if err := check("cuDeviceGet", C.cuDeviceGet(&p.dev, C.int(ordinal))); err != nil {
		return nil, err
	}
	if err := check("cuDevicePrimaryCtxRetain", C.cuDevicePrimaryCtxRetain(&p.ctx, p.dev)); err != nil {
		return nil, err
	}
	return &p, nil
}

// Do makes the context current on a locked OS thread, runs f there, and
// restores the thread's previous context. f must not start goroutines that use
// the context.
func (p *PrimaryContext) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev C.CUcontext
	if err := check("cuCtxGetCurrent", C.cuCtxGetCurrent(&prev)); err != nil {
		return err
	}
	if err := check("cuCtxSetCurrent", C.cuCtxSetCurrent(p.ctx)); err != nil {
		return err
	}
	defer C.cuCtxSetCurrent(prev)
	return f()
}

// Release releases the context (cuDevicePrimaryCtxRelease).
func (p *PrimaryContext) Release() error {
	return check("cuDevicePrimaryCtxRelease", C.cuDevicePrimaryCtxRelease(p.dev))
}
