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

// Do runs fn on a locked OS thread with device ordinal current (hipSetDevice)
// and restores the thread's previous device afterwards, even if fn panics (the
// panic goes on).
func (b *Backend) Do(ordinal int, fn func() error) error {
	if _, err := checkOrdinal("hipSetDevice", ordinal); err != nil {
		return err
	}
	return onDevice(ordinal, fn)
}
