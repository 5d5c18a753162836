package device

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// DefaultCallDeadline is how long a call into a device's driver may run
// after init before the device is taken as hung. Such calls are Do's
// function, a generator's draw, and MemoryInfo.
const DefaultCallDeadline = 60 * time.Second

// The names of the calls the Runtime watches. They are variables so that a
// slot can point at one without an allocation per call.
var (
	opDo         = "Do"
	opMemoryInfo = "MemoryInfo"
	opNewGen     = "NewGenerator"
	opSetSeed    = "Generator.SetSeed"
	opSetOffset  = "Generator.SetOffset"
	opGenerate   = "Generator.Generate"
	opCloseGen   = "Generator.Close"
)

// SetCallDeadline sets how long a call into a device's driver may run after
// init before the device is taken as hung. The watched calls are Do's
// function, a generator's calls, and Memory. The deadline is
// [DefaultCallDeadline] unless set. Zero or less turns the watch off.
//
// SetCallDeadline is safe to call from any goroutine, before Init or after.
// It turns the watch on or off either way. Calls in flight are held to the
// new deadline from the watch's next look. A call is timed from when the
// watch first sees it, so one begun while the watch was off gets the whole
// deadline. After [Runtime.Shutdown] it has no effect: the watch has stopped.
func (r *Runtime) SetCallDeadline(d time.Duration) {
	if d <= 0 {
		d = -1 // off; 0 stays "not set"
	}
	r.callDeadline.Store(int64(d))
	if w := r.calls.Load(); w != nil {
		w.SetDeadline(max(d, 0))
	}
}

// callDeadlineNow is the deadline calls are held to; 0 when the watch is off.
func (r *Runtime) callDeadlineNow() time.Duration {
	switch d := r.callDeadline.Load(); {
	case d < 0:
		return 0
	case d > 0:
		return time.Duration(d)
	}
	return DefaultCallDeadline
}

// hung loses a device whose call has run past the deadline.
func (r *Runtime) hung(ordinal int, op string, took, deadline time.Duration) {
	r.lose(ordinal, LossDeadline, &DriverError{Backend: r.Name(), Op: op, Name: "call past its deadline",
		Message:  fmt.Sprintf("%s on device %d has run for %s, past the call deadline of %s", op, ordinal, took.Round(time.Millisecond), deadline),
		Sentinel: driver.ErrDeviceHung,
		Hint:     "the driver call has not returned: the GPU may be hung (check dmesg for Xid errors); the thread in it cannot be freed, so restart the process"})
}

// watched runs fn as the call op on device ordinal, under the call deadline.
// A lost device refuses it with its LostDevice; after Shutdown it returns
// ErrClosed.
func (r *Runtime) watched(ordinal int, op *string, fn func() error) error {
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	n, ok := r.closing.enterCall(ordinal)
	if !ok {
		return ErrClosed
	}
	defer r.closing.leaveCall(n)
	w := r.calls.Load()
	if w == nil {
		return fn()
	}
	s := w.Begin(ordinal, op)
	defer w.End(s)
	return fn()
}

// Do initializes on first use, then runs fn on a locked OS thread with
// device ordinal current. Afterwards it restores the thread's previous
// device or context, even if fn panics. The panic goes on after the
// restore. Do is for a server's own cgo engines, whose calls use the
// thread's current device. fn must not start goroutines that expect it.
//
// For CUDA the device's primary context is made current. It is retained
// once, at the first Do or generator for the device, and kept for the life
// of the process. The CUDA runtime (cudart, and cuBLAS or llama.cpp on top
// of it) shares that primary context with the driver API. So what fn does
// through them lands in the same context. A backend without devices to make
// current (sim) runs fn on the locked thread. A backend that does not
// implement [driver.DeviceRunner] gets an error wrapping [ErrNotSupported].
//
// fn runs under the call deadline ([Runtime.SetCallDeadline]). Past it, the
// device is lost as hung ([driver.ErrDeviceHung]) and readiness fails. Later
// calls on the device are refused at once with its [LostDevice]. fn itself
// goes on, since a driver call cannot be interrupted. A Do on a lost device
// returns its LostDevice without running fn.
// A nil ctx panics, naming Do.
func (r *Runtime) Do(ctx context.Context, ordinal int, fn func() error) error {
	nilContext(ctx, "Do")
	if err := r.Init(ctx); err != nil {
		return err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	dr, ok := driver.Capability[driver.DeviceRunner](r.Backend())
	if !ok {
		return fmt.Errorf("device: backend %s cannot make a device current: %w", r.Name(), ErrNotSupported)
	}
	return r.watched(ordinal, &opDo, func() error { return dr.Do(ordinal, fn) })
}

// NewGenerator initializes on first use and creates device ordinal's Philox
// generator. It goes through the backend's [driver.GeneratorBackend]; rng's
// Generators use it. A backend without generators gets an error wrapping
// [ErrNotSupported].
//
// Every call on the generator runs under the call deadline, as Do's
// function does. Past it, the device is lost as hung. On a lost device the
// calls are refused with its [LostDevice], Close included. Close then leaves
// the generator to the process's end rather than call a driver that may not
// return. Like the backend's, the generator is not safe for concurrent use.
// A nil ctx panics, naming NewGenerator.
func (r *Runtime) NewGenerator(ctx context.Context, ordinal int) (driver.Generator, error) {
	nilContext(ctx, "NewGenerator")
	if err := r.Init(ctx); err != nil {
		return nil, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return nil, err
	}
	gb, ok := driver.Capability[driver.GeneratorBackend](r.Backend())
	if !ok {
		return nil, fmt.Errorf("device: backend %s has no device generators: %w", r.Name(), ErrNotSupported)
	}
	var g driver.Generator
	err := r.watched(ordinal, &opNewGen, func() (err error) {
		g, err = gb.NewGenerator(ordinal)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &watchedGenerator{r: r, ordinal: ordinal, g: g}, nil
}

// watchedGenerator is a backend's generator whose calls the Runtime watches.
type watchedGenerator struct {
	r       *Runtime
	ordinal int
	g       driver.Generator
}

func (w *watchedGenerator) SetSeed(seed uint64) error {
	return w.r.watched(w.ordinal, &opSetSeed, func() error { return w.g.SetSeed(seed) })
}

func (w *watchedGenerator) SetOffset(offset uint64) error {
	return w.r.watched(w.ordinal, &opSetOffset, func() error { return w.g.SetOffset(offset) })
}

func (w *watchedGenerator) Generate(dst []uint32) error {
	return w.r.watched(w.ordinal, &opGenerate, func() error { return w.g.Generate(dst) })
}

func (w *watchedGenerator) Close() error {
	return w.r.watched(w.ordinal, &opCloseGen, w.g.Close)
}

var opCanary = "canary"

// Canary proves that device ordinal still does work. It makes a round trip
// through the driver: allocate 4 bytes, set them on the device, copy them
// back, free them. The round trip runs under the call deadline, like any
// call after init.
//
// A sticky failure, or a pattern that comes back wrong, loses the device
// ([LossCanary]). Any other failure is counted against it. A lost device's
// Canary returns its [LostDevice] at once. Where the backend has no canary,
// Canary returns an error wrapping [ErrNotSupported]. One canary runs per
// device at a time; another call meanwhile fails at once.
//
// The Runtime initializes first if needed, waiting no longer than ctx.
// Canary waits for the round trip no longer than ctx either. A call that
// hangs goes on in the driver, and the call deadline loses its device.
// A nil ctx panics, naming Canary.
func (r *Runtime) Canary(ctx context.Context, ordinal int) error {
	nilContext(ctx, "Canary")
	if err := r.Init(ctx); err != nil {
		return err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	cr, ok := driver.Capability[driver.CanaryRunner](r.Backend())
	if !ok {
		return fmt.Errorf("device: backend %s has no canary: %w", r.Name(), ErrNotSupported)
	}
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	// One round trip per device at a time: a canary stuck in the driver is
	// not joined by another each period.
	if since, busy := r.canaries.LoadOrStore(ordinal, time.Now()); busy {
		return fmt.Errorf("device: the canary on device %d started at %s is still running", ordinal, since.(time.Time).Format(time.RFC3339Nano))
	}
	done := make(chan error, 1) // the round trip may outlive the wait
	go func() {
		defer r.canaries.Delete(ordinal)
		done <- r.watched(ordinal, &opCanary, func() error { return cr.Canary(ordinal) })
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("device: the canary on device %d is still running: %w", ordinal, context.Cause(ctx))
	}
	var lost LostDevice
	var de *DriverError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lost):
		return err
	case errors.As(err, &de) && de.Sticky:
		return r.lose(ordinal, LossCanary, de)
	}
	r.count(ordinal)
	return err
}

// Memory initializes on first use and reports device ordinal's free and
// total memory in bytes, read live. It also says where the figures came
// from ([driver.MemorySource]). It never creates a context and never
// allocates device memory.
//
// CUDA reads NVML, or the driver where the device's primary context is
// already active. A MIG instance reads its own slice, by its UUID. HIP reads
// amdgpu's sysfs VRAM counters. For an APU it reads the GTT pool, or the
// host's MemAvailable and MemTotal where those bind. A GPU that shares the
// host's memory (Jetson, GB10) reports the host's MemAvailable and MemTotal.
// NVML reports the host's RAM as its free memory there, or nothing, and
// cudaMemGetInfo tracks MemFree, which the page cache eats. While CUDA's
// integrated attribute cannot be read, such a GPU's memory is unknown.
// Where no source gives a true figure, the error wraps [ErrNotSupported] and
// says why. The answer is "unknown", never a wrong number.
//
// A lost device's read is refused with its [LostDevice], which wraps
// [ErrDeviceLost], without a call into the driver. Memory is safe for
// concurrent use. Only the first call per device allocates. The backend's
// read runs under the call deadline, as Do's function does. A read that
// panics releases its watch as it unwinds.
// A nil ctx panics, naming Memory.
func (r *Runtime) Memory(ctx context.Context, ordinal int) (driver.Memory, error) {
	nilContext(ctx, "Memory")
	return r.memory(ctx, ordinal)
}

func (r *Runtime) memory(ctx context.Context, ordinal int) (driver.Memory, error) {
	if err := r.Init(ctx); err != nil {
		return driver.Memory{}, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return driver.Memory{}, err
	}
	b := r.Backend()
	read := func() (driver.Memory, error) {
		if mr, ok := driver.Capability[driver.MemoryReader](b); ok {
			return mr.ReadMemory(ordinal)
		}
		mr, ok := driver.Capability[driver.MemoryReporter](b)
		if !ok {
			return driver.Memory{}, fmt.Errorf("device: backend %s cannot read free memory: %w", r.Name(), ErrNotSupported)
		}
		free, total, err := mr.MemoryInfo(ordinal)
		return driver.Memory{Free: free, Total: total}, err
	}
	// As with Do's function, a lost device refuses the read. The slot is
	// released however the read ends, a panic included.
	var m driver.Memory
	err := r.watched(ordinal, &opMemoryInfo, func() (err error) {
		m, err = read()
		return err
	})
	return m, err
}
