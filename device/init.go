package device

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
	"github.com/gpuinit/gpuinit/device/internal/watch"
	"github.com/gpuinit/gpuinit/lazy"
)

// The lifecycle of a Runtime, in order. Open (in registry.go) makes it and
// touches nothing. The first Init runs initialize. That brings a backend up
// (bringup.go), then starts the watches. Shutdown stops all of it.

// Init initializes the backend on first call and returns the memoized
// result. It runs the driver's init, reads the device information, then
// runs the work queued by LazyCall. A queued call's failure is its own, not
// Init's. See [lazy.Initializer.Init] for cancellation and re-entry. After
// Shutdown, Init returns [ErrClosed].
// A nil ctx panics, naming Init.
func (r *Runtime) Init(ctx context.Context) error {
	nilContext(ctx, "Init")
	if r.closed() {
		return ErrClosed
	}
	return r.said(r.init.Init(ctx))
}

// said is err as the Runtime says it. The memoized initialization failure
// gets its one form, made once: the *failure initialize returned, which
// errors.As finds lazy's *InitError in. Its message drops lazy's prefix
// and the queued calls that never ran, so that it has one prefix: the
// backend's. Anything else is returned as it is.
func (r *Runtime) said(err error) error {
	ie, ok := err.(*lazy.InitError)
	if !ok {
		return err
	}
	if f := r.saidFailure.Load(); f != nil && f.memo == ie {
		return f
	}
	f := &failure{causes: []error{ie.Err}} // ErrClosed, which says its prefix
	if !strings.HasPrefix(ie.Err.Error(), "device: ") {
		// A panic, or an init that called runtime.Goexit: lazy's words, which
		// say neither the prefix nor what failed.
		f.msg = "device: the initialization failed: " + ie.Err.Error()
	}
	if inner, ok := ie.Err.(*failure); ok {
		copied := *inner
		f = &copied
	}
	f.memo = ie
	r.saidFailure.CompareAndSwap(nil, f)
	return r.saidFailure.Load()
}

// Start starts the initialization in the background, if nothing has, and
// returns at once. It returns nil when the initialization is under way or
// finished. When ctx is already done, it starts nothing and returns an error
// wrapping ctx.Err(). After Shutdown it returns [ErrClosed]. See
// [lazy.Initializer.Start].
// A nil ctx panics, naming Start.
func (r *Runtime) Start(ctx context.Context) error {
	nilContext(ctx, "Start")
	if r.closed() {
		return ErrClosed
	}
	return r.init.Start(ctx)
}

// LazyCall runs fn now if the Runtime is initialized. Otherwise it queues fn
// to run right after initialization. It never initializes. See
// [lazy.Initializer.Call].
//
// A queued fn's failure is its own call's. It does not fail the
// initialization, which every caller shares. It is recorded with the call
// site that queued it, in Stats' FailedCalls and the health status. The
// caller's package says it back as its kind of call has it. In rng, the
// next call of the same method returns it.
//
// PyTorch instead raises the failure from whatever call initializes. It
// re-runs the whole queue at the next one, so a failure there stops every
// later caller too. One request's bad ordinal must not take the GPU from
// every other request for the life of the process.
//
// After Shutdown, LazyCall returns [ErrClosed].
// A nil ctx panics, naming LazyCall.
func (r *Runtime) LazyCall(ctx context.Context, fn lazy.Func) error {
	nilContext(ctx, "LazyCall")
	if r.closed() {
		return ErrClosed
	}
	return r.init.CallDepth(ctx, 1, fn)
}

// LazyCallDepth is LazyCall for wrappers. The call site recorded for a
// queued fn is depth frames above LazyCallDepth's caller.
// A nil ctx panics, naming LazyCallDepth.
func (r *Runtime) LazyCallDepth(ctx context.Context, depth int, fn lazy.Func) error {
	nilContext(ctx, "LazyCallDepth")
	if r.closed() {
		return ErrClosed
	}
	return r.init.CallDepth(ctx, depth+1, fn)
}

// initialize is the Runtime's init function. It tries each candidate in
// order, through a preflight child first if the preflight is on. The first
// that gives at least one device is the Runtime's backend.
//
// With the preflight on, a candidate whose child failed for a reason that
// clears by itself (ClassNotYet) is tried again. Each retry runs in a fresh
// child, with capped backoff, until the preflight's RetryFor has passed.
// With one candidate, its own error is returned. With several, a
// *NoBackendError lists each one's. Every failure carries its class.
func (r *Runtime) initialize(ctx context.Context) error {
	if !r.closing.enterInit() {
		return ErrClosed
	}
	defer r.closing.leaveInit()
	ctx, unbind := r.closing.bind(ctx) // Shutdown kills a child under way and ends a wait
	defer unbind()
	err := r.bringUpFirst(ctx)
	if err != nil && r.closed() {
		// Shutdown ended it: whatever the backend made of its ended ctx,
		// this is no failure of the GPU's.
		return ErrClosed
	}
	return err
}

// watchAfterInit starts what watches the devices once init has found them.
// That is the call watch, and the backend's health watch with the record of
// losses.
//
// Shutdown may run meanwhile. It marks the Runtime closed before it looks
// for the watch, and this stores the watch before it looks at closed: so
// one of the two sees the other. A watch Shutdown canceled never starts.
func (r *Runtime) watchAfterInit(b driver.Backend, n int) {
	r.closing.countCalls(n)
	r.startWatching(n)
	w := watch.NewHealthWatch(r.Name(), n, r.republish, r.callDeadlineNow)
	if !r.watch.CompareAndSwap(nil, w) {
		return
	}
	r.republish()
	if !r.closed() {
		w.Start(b)
	}
}

// startWatching starts the call watch over n devices, once the
// initialization has found them. The watch may start off; SetCallDeadline
// can turn it on later. The Runtime owns the watch, and Shutdown stops it.
func (r *Runtime) startWatching(n int) {
	if r.closed() {
		return
	}
	w := watch.NewCallWatch(n, r.callDeadlineNow(), r.hung, func(int) { r.republish() })
	if !r.calls.CompareAndSwap(nil, w) {
		w.Close()
		return
	}
	// A SetCallDeadline between the read above and the store saw no watch:
	// read again now that it can see this one.
	w.SetDeadline(r.callDeadlineNow())
	if r.closed() { // Shutdown ran meanwhile and may have missed w
		w.Close()
	}
}

// settings is what a Runtime is told before its first Init. That is the
// driver floors (RequireDriverVersion) and the preflight (UsePreflight).
type settings struct {
	mu        sync.Mutex // protects following fields
	floors    map[string]int
	preflight *Preflight // nil: off, unless GPUINIT_PREFLIGHT says on
	read      bool       // initialization has read them: too late to change
	// warm is the child Preflight.Prestart started, until the
	// initialization takes it, after the settings, or Shutdown ends it.
	warm *preflight.Warm
}

// readSettings returns the floors by backend name and the preflight, with
// GPUINIT_PREFLIGHT applied. It marks them read. A later
// RequireDriverVersion or UsePreflight then fails instead of being ignored.
// It also hands over the pre-started child, if any: the caller uses it or
// ends it.
func (r *Runtime) readSettings() (floors map[string]int, p *Preflight, warm *preflight.Warm, err error) {
	r.settings.mu.Lock()
	r.settings.read = true
	floors, p = maps.Clone(r.settings.floors), r.settings.preflight
	r.settings.mu.Unlock()
	p, err = preflightFromEnv(p)
	// The child is handed over last, with nothing left to fail or panic.
	r.settings.mu.Lock()
	warm, r.settings.warm = r.settings.warm, nil
	r.settings.mu.Unlock()
	return floors, p, warm, err
}

// visibilityVariables are the environment variables that choose which GPUs
// a process sees, and how they are numbered or targeted.
var visibilityVariables = []string{
	"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
	"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "HSA_OVERRIDE_GFX_VERSION",
}

// readVisibility reads the visibility variables that are set, with their
// values. An empty value hides every device.
func readVisibility() map[string]string {
	seen := map[string]string{}
	for _, name := range visibilityVariables {
		if v, ok := os.LookupEnv(name); ok {
			seen[name] = v
		}
	}
	return seen
}

// endWarm ends the pre-started child that no initialization took, waiting
// for it until ctx ends. It reports whether it left the child to its reaper
// then. Shutdown calls it after marking the Runtime closed, so that
// UsePreflight starts no other.
func (r *Runtime) endWarm(ctx context.Context) (abandoned bool) {
	r.settings.mu.Lock()
	w := r.settings.warm
	r.settings.warm = nil
	r.settings.mu.Unlock()
	return w != nil && w.Close(ctx) != nil
}

// RequireDriverVersion raises the oldest version of backend's driver this
// Runtime accepts to version. It is for a server whose own engine's runtime
// needs more than the backend does. The version is in that backend's own
// numbering: for CUDA, 12040 is 12.4; for HIP, it is hipDriverGetVersion's.
// backend must be one the Runtime can initialize: its own, or one of auto's
// candidates. version must be positive. Anything else is refused with an
// error, since it would never apply.
//
// The floor is checked after the backend's Init, for every Runtime, whichever
// first initialized the process's driver. Under auto, a candidate below it is
// passed over like one that failed. A named backend fails with an error
// wrapping [ErrDriverMismatch] that names both versions.
//
// RequireDriverVersion must be called before the first Init. Once
// initialization has read the floors, it changes nothing and returns an
// error. After Shutdown it returns [ErrClosed].
func (r *Runtime) RequireDriverVersion(backend string, version int) error {
	if !slices.ContainsFunc(r.candidates, func(reg driver.Registration) bool { return reg.Name == backend }) {
		names := make([]string, len(r.candidates))
		for i, reg := range r.candidates {
			names[i] = fmt.Sprintf("%q", reg.Name)
		}
		return fmt.Errorf("device: RequireDriverVersion(%q, %d): the %s runtime initializes only %s, so that floor would never apply",
			backend, version, r.Name(), strings.Join(names, " or "))
	}
	if version <= 0 {
		return fmt.Errorf("device: RequireDriverVersion(%q, %d): want a positive version in the %s driver's numbering (CUDA: 12040 for 12.4)",
			backend, version, backend)
	}
	if r.closed() {
		return ErrClosed
	}
	r.settings.mu.Lock()
	defer r.settings.mu.Unlock()
	if r.settings.read {
		return fmt.Errorf("device: RequireDriverVersion(%q, %d) on a runtime that has started initializing: call it before the first Init", backend, version)
	}
	if r.settings.floors == nil {
		r.settings.floors = map[string]int{}
	}
	r.settings.floors[backend] = max(r.settings.floors[backend], version)
	return nil
}

// checkDriverFloor applies the floor need (0: none) to b, which Init has
// initialized. Backends check their own floor before initializing the
// driver. But they initialize once per process, so a second Runtime's floor
// could reach no check there. This check holds for every Runtime and
// backend.
func checkDriverFloor(b driver.Backend, name string, need int) error {
	if need == 0 {
		return nil
	}
	v, err := b.DriverVersion()
	if err != nil {
		return fmt.Errorf("device: checking the %s driver against RequireDriverVersion(%d): %w", name, need, err)
	}
	if v < need {
		return &DriverError{Backend: name, Op: "DriverVersion", Sentinel: driver.ErrDriverTooOld,
			Message: fmt.Sprintf("the driver reports %d, this runtime requires %d (RequireDriverVersion)", v, need),
			Hint:    "upgrade the driver, or lower the version passed to RequireDriverVersion"}
	}
	return nil
}

// maxFailedCalls bounds the queued calls' failures a Runtime keeps. It keeps
// the first ones, which say the most, and counts the rest.
const maxFailedCalls = 16

// failedCalls are the failures of calls queued before initialization. Each
// is its own call's (see LazyCall). They are published for Stats without a
// lock.
type failedCalls struct {
	mu      sync.Mutex // serializes add
	kept    atomic.Pointer[[]*lazy.DeferredError]
	dropped atomic.Int64
}

// add records one failure. lazy calls it on the initialization's goroutine.
func (f *failedCalls) add(d *lazy.DeferredError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []*lazy.DeferredError
	if p := f.kept.Load(); p != nil {
		kept = *p
	}
	if len(kept) == maxFailedCalls {
		f.dropped.Add(1)
		return
	}
	next := append(kept[:len(kept):len(kept)], d)
	f.kept.Store(&next)
}

// snapshot is what add has kept, shared, and how many more failed.
func (f *failedCalls) snapshot() ([]*lazy.DeferredError, int) {
	var kept []*lazy.DeferredError
	if p := f.kept.Load(); p != nil {
		kept = *p
	}
	return kept, int(f.dropped.Load())
}

// queuedCallFailed records a queued call's failure, and logs it with the
// call site through the Runtime's logger: its caller was never told, since
// LazyCall had returned nil when it queued it. lazy calls it on the
// initialization's goroutine.
func (r *Runtime) queuedCallFailed(d *lazy.DeferredError) {
	r.failedCalls.add(d)
	slog.New(runtimeHandler{r}).LogAttrs(context.Background(), slog.LevelWarn,
		"gpuinit: a call queued before initialization failed when it ran; the initialization and the other calls went on",
		slog.String("backend", r.Name()), slog.String("site", d.Site), slog.Any("err", d.Err))
}
