//go:build linux && cgo && !nohip

package hip

import goruntime "runtime"

// onDevice makes ordinal current on a locked OS thread, runs f there, and
// restores the thread's previous device, whatever f does.
func onDevice(ordinal int, f func() error) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	prev, r := swapDevice(ordinal)
	if err := check("hipSetDevice", r); err != nil {
		return err
	}
	defer setDevice(prev)
	return f()
}
