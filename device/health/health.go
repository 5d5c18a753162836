// Package health serves a GPU server's liveness, readiness and status.
//
// A [Health] answers for the [device.Runtime] that brings the server's GPUs
// up, at the paths of KServe's Open Inference Protocol (which Triton and
// KServe implement): GET /v2/health/live and GET /v2/health/ready, plus a JSON
// status at /gpuinit/status ([Health.Mount]).
//
// Readiness never blocks on initialization: it reads the Runtime's state and
// answers 200 when the Runtime is Ready and no device it serves is lost, else
// 503 with the reason (503 is what KServe answers for "not ready"). By default
// the first readiness probe starts the initialization in the background,
// since an orchestrator sends no traffic to a pod that is not ready, so a
// purely lazy pod would never become ready; [WithoutAutoInit] turns that off.
// A server that can serve on the CPU says so with [WithCPUFallback]: once
// initialization has failed because the host has no GPU
// ([device.FallBackToCPU]), readiness is 200 and the status says degraded. A
// GPU that is there but broken, or not ready yet, keeps readiness at 503.
//
// Liveness fails only where a restart of this process can help, by the
// failure's class ([device.ClassOf]): when the part of the initialization that
// runs in this process (the driver's init, then the queued work) has run past
// its deadline ([WithInitDeadline], default [DefaultInitDeadline]: the
// process is wedged); when the initialization failed for a reason that was
// expected to clear (not-yet: a fresh process may succeed) and the same
// deadline has passed since it started, so that the GPU had its time to come
// up; or, with [WithRestartOnDeviceLoss], when a device was lost after init. A
// failure of class no-gpu or needs-operator leaves it 200: a restart cannot
// help, and a Kubernetes pod must not crash-loop for it; readiness, the status
// and gpuprobe's metrics carry the class, so that an alert can fire. Preflight
// children and the waits between their retries never fail liveness: they run in
// other processes, under their own deadlines. Liveness is safe from the first
// second, so no Kubernetes startupProbe is needed: one on the readiness path
// would restart a pod whose host has no GPU, the crash loop this avoids (see
// the README's example).
//
// Both probes are allocation-free on every path but a failure's first
// answer, and never call the backend. A Health is safe for concurrent use. It
// logs, through [log/slog], the state changes it observes. It holds no global
// state; [Health.Close] releases the background initialization's waiter.
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// WithInitDeadline sets how long the in-process part of the initialization
// (the driver's init in this process, then the queued work) may run before
// liveness fails, and how long after the initialization began a not-yet
// failure fails it; zero or less never fails liveness for time.
func WithInitDeadline(d time.Duration) Option { return func(h *Health) { h.deadline = d } }

// WithRestartOnDeviceLoss makes liveness fail once a device is lost, so that
// the orchestrator restarts the process (a sticky error leaves the device
// unusable until then).
func WithRestartOnDeviceLoss() Option { return func(h *Health) { h.restartOnLoss = true } }

// WithCPUFallback says that the server serves without a GPU where the host
// has none: once the initialization has failed with class no-gpu
// ([device.FallBackToCPU]), readiness is 200 and the status says degraded,
// with the reason. A needs-operator or not-yet failure keeps readiness at 503
// with the reason, so that a broken driver or a typo never hides behind the
// CPU. Liveness is unchanged.
func WithCPUFallback() Option { return func(h *Health) { h.cpuFallback = true } }

// WithLogger sets the logger for the state changes Health observes; the
// default is slog.Default() at the time of logging.
func WithLogger(l *slog.Logger) Option { return func(h *Health) { h.logger = l } }

// Health answers the orchestrator's questions about one Runtime.
type Health struct {
	rt            *device.Runtime
	autoInit      bool
	deadline      time.Duration
	restartOnLoss bool
	cpuFallback   bool
	canaryPeriod  time.Duration
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
	failed   atomic.Pointer[verdict]  // made once, when a probe first sees the failure
	lossSeen atomic.Pointer[losses]   // remade when the number of lost devices changes
	canary   canaries                 // the readiness canary's results, WithCanary
	memory   memoryReads              // the status's reads of free memory
}

// verdict is what the probes answer about a failed initialization: its class
// and their reasons, made once.
type verdict struct {
	class             device.Class
	live              bool
	servesOnCPU       bool // WithCPUFallback, and the host has no GPU
	liveWhy, readyWhy string
	statusWhy         string // readyWhy without the error, which the status says once, in failure
}

// losses is the reason readiness gives for count lost devices.
type losses struct {
	count  int
	reason string
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
// It registers its Close with rt.RegisterOnShutdown, so that rt's Shutdown
// stops it too.
func New(rt *device.Runtime, opts ...Option) *Health {
	h := &Health{rt: rt, autoInit: true, deadline: DefaultInitDeadline}
	for _, o := range opts {
		o(h)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.observed.Store(-1)
	rt.RegisterOnShutdown(func(context.Context) error { return h.Close() })
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
// reason as text. It allocates nothing: the header values are shared, never
// changed.
func probeHandler(check func() (bool, string), body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := check()
		if ok {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
			return
		}
		h := w.Header()
		h["Content-Type"], h["X-Content-Type-Options"] = textPlain, noSniff
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, reason)
		_, _ = w.Write(newline)
	})
}

var (
	textPlain = []string{"text/plain; charset=utf-8"}
	noSniff   = []string{"nosniff"}
	newline   = []byte("\n")
)

// The reasons that never change.
const (
	startedReason    = "initializing: a probe started it"
	notStartedReason = "not initialized: nothing has used the GPU yet, and probes do not start it"
	closedReason     = "shut down: the runtime was shut down"
)

// Readiness reports whether the Runtime can serve now, and if not, why. With
// auto-init (the default) the first call starts Init in the background. It
// never blocks.
func (h *Health) Readiness() (ready bool, reason string) { return h.readiness(h.observe(true)) }

func (h *Health) readiness(st device.Stats) (ready bool, reason string) {
	if st.Closed {
		return false, closedReason
	}
	switch st.State {
	case lazy.Ready:
		if len(st.Lost) == 0 {
			return true, ""
		}
		return false, h.lostReason(st.Lost)
	case lazy.Uninitialized:
		if h.autoInit && h.startInit() {
			return false, startedReason
		}
		return false, notStartedReason
	case lazy.Initializing:
		if st.BringUp.Summary != "" {
			return false, st.BringUp.Summary
		}
		return false, startedReason
	}
	v := h.verdict(st)
	return v.servesOnCPU, v.readyWhy
}

// Liveness reports whether the process can still become or stay useful, and
// if not, why: whether a restart of it can help. It reads the Runtime's state
// only.
func (h *Health) Liveness() (live bool, reason string) { return h.liveness(h.observe(false)) }

func (h *Health) liveness(st device.Stats) (live bool, reason string) {
	switch st.State {
	case lazy.Failed:
		v := h.verdict(st)
		if !v.live {
			// Not yet: a restart helps once the GPU has had the init
			// deadline to come up, not before (a fresh process would only
			// fail the same way, and the orchestrator's restarts back off).
			// Without a deadline, never: nothing fails for time.
			if h.deadline <= 0 || time.Since(st.Started) <= h.deadline {
				return true, ""
			}
		}
		return v.live, v.liveWhy
	case lazy.Initializing:
		if b := st.BringUp; h.deadline > 0 && !b.InProcess.IsZero() && time.Since(b.InProcess) > h.deadline {
			return false, fmt.Sprintf("the in-process initialization has run for %s, past its deadline of %s: the process is wedged; %s",
				time.Since(b.InProcess).Round(time.Millisecond), h.deadline, runningReason(st))
		}
	case lazy.Ready:
		if h.restartOnLoss && len(st.Lost) > 0 {
			return false, "restart on device loss: " + h.lostReason(st.Lost)
		}
	}
	return true, ""
}

// verdict returns the probes' answers about the failed initialization, made
// at the first call.
func (h *Health) verdict(st device.Stats) *verdict {
	if v := h.failed.Load(); v != nil {
		return v
	}
	err := st.Err
	class := device.ClassOf(err)
	v := &verdict{class: class, live: class != device.NotYet, servesOnCPU: h.cpuFallback && device.FallBackToCPU(err)}
	why := class.Describe()
	var ev interface{ Evidence() string }
	if errors.As(err, &ev) && ev.Evidence() != "" {
		why = ev.Evidence()
	}
	prefix := ""
	if v.servesOnCPU {
		prefix = "degraded: serving without a GPU: "
	}
	v.statusWhy = fmt.Sprintf("%sinitialization failed (%s: %s)", prefix, class, why)
	v.readyWhy = fmt.Sprintf("%sinitialization failed (%s: %s): %v", prefix, class, class.Describe(), err) // err holds the evidence
	if !v.live {
		v.liveWhy = "initialization failed for a reason expected to clear (not-yet): a restart may succeed: " + err.Error()
	}
	h.failed.CompareAndSwap(nil, v)
	return h.failed.Load()
}

// runningReason says what the initialization runs now.
func runningReason(st device.Stats) string {
	s := st.BringUp.Summary
	if st.Running != "" && st.Running != "init" {
		s += fmt.Sprintf("; running %s for %s", st.Running, time.Since(st.RunningSince).Round(time.Millisecond))
	}
	return s
}

// lostReason is readiness's reason for the lost devices, remade only when
// their number changes.
func (h *Health) lostReason(lost []device.LostDevice) string {
	n := len(lost)
	if l := h.lossSeen.Load(); l != nil && l.count == n {
		return l.reason
	}
	l := &losses{count: n, reason: lostReason(lost)}
	h.lossSeen.Store(l)
	return l.reason
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
