// Package health serves liveness, readiness and status for an inference server
// whose GPUs a device.Runtime brings up, at the paths of KServe's Open
// Inference Protocol (which Triton and KServe implement): GET /v2/health/live
// and GET /v2/health/ready, plus a JSON status at /gpuinit/status.
//
// Readiness never blocks on initialization: it reads the Runtime's state and
// answers 200 when the Runtime is Ready and no device it serves is lost, else
// 503 with the reason (503 is what KServe answers for "not ready"). By default
// the first readiness probe starts Init in the background, once, since an
// orchestrator sends no traffic to a pod that is not ready, so a purely lazy
// pod would never become ready; WithoutAutoInit turns that off.
//
// Liveness never calls into the Runtime's initialization or its backend. It
// answers 503, so that the orchestrator restarts the process, when the
// initialization failed (failures are final), when it has run past its
// deadline (WithInitDeadline, default DefaultInitDeadline), or, with
// WithRestartOnDeviceLoss, when a device was lost after init. Pair it with a
// Kubernetes startupProbe on the readiness path whose failureThreshold ×
// periodSeconds exceeds the deadline, so that a slow cuInit is not killed
// early (see the README's example).
//
// A Health is safe for concurrent use. It logs, through log/slog, the state
// changes it observes. It holds no global state; Close releases the background
// initialization's waiter.
package health

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/lazy"
)

// The paths Mount serves: the Open Inference Protocol's, and gpuinit's status.
const (
	LivePath   = "/v2/health/live"
	ReadyPath  = "/v2/health/ready"
	StatusPath = "/gpuinit/status"
)

// DefaultInitDeadline is how long initialization may run before liveness
// fails: long enough for a cold cuInit on a large host, short enough that a
// hung driver does not hold a GPU for ever.
const DefaultInitDeadline = 5 * time.Minute

// An Option configures a Health in New.
type Option func(*Health)

// WithoutAutoInit stops the first readiness probe from starting Init: the
// Runtime initializes only when the server first uses it.
func WithoutAutoInit() Option { return func(h *Health) { h.autoInit = false } }

// WithInitDeadline sets how long initialization may run before liveness
// fails; zero or less never fails it for time.
func WithInitDeadline(d time.Duration) Option { return func(h *Health) { h.deadline = d } }

// WithRestartOnDeviceLoss makes liveness fail once a device is lost, so that
// the orchestrator restarts the process (a sticky error leaves the device
// unusable until then).
func WithRestartOnDeviceLoss() Option { return func(h *Health) { h.restartOnLoss = true } }

// WithLogger sets the logger for the state changes Health observes; the
// default is slog.Default() at the time of logging.
func WithLogger(l *slog.Logger) Option { return func(h *Health) { h.logger = l } }

// Health answers the orchestrator's questions about one Runtime.
type Health struct {
	rt            *device.Runtime
	autoInit      bool
	deadline      time.Duration
	restartOnLoss bool
	logger        *slog.Logger

	ctx    context.Context // cancelled by Close: the background Init stops waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup // the background Init's goroutine

	mu      sync.Mutex // protects following fields, so that Close and startInit agree
	started bool
	closed  bool

	observed atomic.Int32             // the last lazy.State logged
	lost     atomic.Int32             // how many lost devices were logged
	snap     atomic.Pointer[snapshot] // read once, when initialization finished
}

// snapshot is what Health reads of the Runtime once it has finished
// initializing, so that no probe reads it again.
type snapshot struct {
	at             time.Time
	driverVersion  int
	runtimeVersion int
	devices        []Device
	visibility     map[string]string
}

// New returns a Health over rt. Nothing is started until the first probe.
func New(rt *device.Runtime, opts ...Option) *Health {
	h := &Health{rt: rt, autoInit: true, deadline: DefaultInitDeadline}
	for _, o := range opts {
		o(h)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.observed.Store(-1)
	return h
}

// Close stops the background Init from waiting (the initialization itself goes
// on: a driver call cannot be interrupted) and waits for its goroutine. Probes
// still answer after Close, but start nothing.
func (h *Health) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// Mount registers Live, Ready and Status on mux at LivePath, ReadyPath and
// StatusPath, for GET (and HEAD).
func (h *Health) Mount(mux *http.ServeMux) {
	mux.Handle("GET "+LivePath, h.Live())
	mux.Handle("GET "+ReadyPath, h.Ready())
	mux.Handle("GET "+StatusPath, h.Status())
}

var (
	okBody    = []byte("ok\n")
	readyBody = []byte("ready\n")
)

// Ready answers 200 "ready" when the Runtime is Ready and no device is lost,
// else 503 with the reason as text. It never blocks.
func (h *Health) Ready() http.Handler { return probeHandler(h.Readiness, readyBody) }

// Live answers 200 "ok" while the process can still become or stay useful,
// else 503 with the reason as text. It never calls into the Runtime's
// initialization or its backend.
func (h *Health) Live() http.Handler { return probeHandler(h.Liveness, okBody) }

// probeHandler answers 200 with body when check passes, else 503 with its
// reason as text.
func probeHandler(check func() (bool, string), body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ok, reason := check(); !ok {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// Readiness reports whether the Runtime can serve now, and if not, why. With
// auto-init (the default) the first call starts Init in the background. It
// never blocks.
func (h *Health) Readiness() (ready bool, reason string) { return h.readiness(h.observe(true)) }

func (h *Health) readiness(state lazy.State) (ready bool, reason string) {
	switch state {
	case lazy.Ready:
		if !h.rt.AnyLost() {
			return true, ""
		}
		return false, lostReason(h.rt.Lost())
	case lazy.Uninitialized:
		if h.autoInit && h.startInit() {
			return false, "initializing: a probe started it"
		}
		return false, "not initialized: nothing has used the GPU yet, and probes do not start it"
	case lazy.Initializing:
		return false, h.initializingReason()
	}
	return false, "initialization failed: " + h.rt.Err().Error()
}

// Liveness reports whether the process can still become or stay useful, and
// if not, why. It reads the Runtime's state only.
func (h *Health) Liveness() (live bool, reason string) { return h.liveness(h.observe(false)) }

func (h *Health) liveness(state lazy.State) (live bool, reason string) {
	switch state {
	case lazy.Failed:
		return false, "initialization failed, for good: only a restart helps: " + h.rt.Err().Error()
	case lazy.Initializing:
		if h.deadline > 0 {
			if started, _ := h.rt.InitTimes(); !started.IsZero() && time.Since(started) > h.deadline {
				return false, fmt.Sprintf("initialization has run for %s, past its deadline of %s: %s",
					time.Since(started).Round(time.Millisecond), h.deadline, h.initializingReason())
			}
		}
	case lazy.Ready:
		if h.restartOnLoss && h.rt.AnyLost() {
			return false, "restart on device loss: " + lostReason(h.rt.Lost())
		}
	}
	return true, ""
}

func (h *Health) initializingReason() string {
	started, _ := h.rt.InitTimes()
	s := fmt.Sprintf("initializing for %s", time.Since(started).Round(time.Millisecond))
	if what, since, ok := h.rt.Running(); ok {
		s += fmt.Sprintf(": running %s for %s", what, time.Since(since).Round(time.Millisecond))
	}
	return s
}

func lostReason(lost []device.LostDevice) string {
	s := fmt.Sprintf("%d device(s) lost", len(lost))
	for _, l := range lost {
		s += "; " + l.Error()
	}
	return s
}

// startInit starts Init in the background, once, unless Close was called; it
// reports whether initialization is under way.
func (h *Health) startInit() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if !h.started {
		// Start now, under mu, so that a Close racing with this probe
		// cannot stop an initialization the probe reports as started; the
		// goroutine only waits for it, to log the outcome, until Close.
		if err := h.rt.Start(h.ctx); err != nil {
			return false
		}
		h.started = true
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			_ = h.rt.Init(h.ctx) // the outcome is logged by observe
			h.observe(true)
		}()
	}
	return true
}
