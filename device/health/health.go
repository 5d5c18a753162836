package health

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device"
)

// The paths Mount serves: the Open Inference Protocol's, and gpuinit's status.
const (
	LivePath   = "/v2/health/live"
	ReadyPath  = "/v2/health/ready"
	StatusPath = "/gpuinit/status"
)

// DefaultInitDeadline is how long initialization may run before liveness
// fails. It is long enough for a cold cuInit on a large host. It is short
// enough that a hung driver does not hold a GPU for ever.
const DefaultInitDeadline = 5 * time.Minute

// An Option configures a Health in New.
type Option func(*Health)

// WithoutAutoInit stops the first readiness probe from starting Init. The
// Runtime then initializes only when the server first uses it.
func WithoutAutoInit() Option { return func(h *Health) { h.autoInit = false } }

// WithInitDeadline sets how long the in-process part of the initialization
// may run before liveness fails. That part is the driver's init in this
// process, then the queued work. The same deadline, counted from when the
// initialization began, is how long a not-yet failure waits before it
// fails liveness. Zero or less never fails liveness for time.
func WithInitDeadline(d time.Duration) Option { return func(h *Health) { h.deadline = d } }

// WithRestartOnDeviceLoss makes liveness fail once a device is lost. The
// orchestrator then restarts the process. A sticky error leaves the device
// unusable until then.
func WithRestartOnDeviceLoss() Option { return func(h *Health) { h.restartOnLoss = true } }

// WithDegradedNotReady makes readiness fail while a device is degraded
// ([healthwatch.VerdictDegraded]). Degraded means a pending row remap, a PCIe
// replay storm, a drain the driver asks for, or a fabric at limited
// capacity. The orchestrator then moves traffic off the pod while the
// device still works. By default a degraded device keeps the pod ready. Its
// work still runs, and the status and gpuprobe's labels say what needs
// attention. A lost device fails readiness either way. A device whose
// health is unknown never does.
func WithDegradedNotReady() Option { return func(h *Health) { h.degradedNotReady = true } }

// WithCPUFallback says that the server serves without a GPU where the host
// has none. Once the initialization has failed with class no-gpu
// ([device.FallBackToCPU]), readiness is 200. The status says degraded,
// with the reason. A needs-operator or not-yet failure keeps readiness at
// 503 with the reason. So a broken driver or a typo never hides behind the
// CPU. Liveness is unchanged.
func WithCPUFallback() Option { return func(h *Health) { h.cpuFallback = true } }

// WithLogger sets the logger for the state changes Health observes. The
// default is [slog.Default] at the time of logging.
func WithLogger(l *slog.Logger) Option { return func(h *Health) { h.logger = l } }

// Health answers the orchestrator's questions about one Runtime.
type Health struct {
	rt               *device.Runtime
	autoInit         bool
	deadline         time.Duration
	restartOnLoss    bool
	degradedNotReady bool
	cpuFallback      bool
	canaryPeriod     time.Duration
	logger           *slog.Logger

	ctx    context.Context // cancelled by Close: the background Init stops waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup // the background Init's goroutine

	mu      sync.Mutex // protects following fields: Close and startInit agree
	started bool
	closed  bool

	observed atomic.Int32               // the last lazy.State logged
	lost     atomic.Int32               // how many lost devices were logged
	snap     atomic.Pointer[snapshot]   // read once, when initialization finished
	failed   atomic.Pointer[verdict]    // made once, when a probe first sees the failure
	lossSeen atomic.Pointer[losses]     // remade when the number of lost devices changes
	canary   canaries                   // the readiness canary's results, WithCanary
	memory   memoryReads                // the status's reads of free memory
	healthJS atomic.Pointer[healthJSON] // the devices' health as JSON, for one view
}

// snapshot is what Health reads of the Runtime once it has finished
// initializing. No probe reads it again.
type snapshot struct {
	at             time.Time
	driverVersion  int
	runtimeVersion int
	devices        []Device
	visibility     map[string]string
}

// New returns a Health over rt. Nothing is started until the first probe.
// It registers its Close with [device.Runtime.RegisterOnShutdown], so rt's
// Shutdown stops it too.
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

// Close stops the background Init from waiting, and waits for its
// goroutine and the canary's. The initialization itself goes on: a driver
// call cannot be interrupted. Probes still answer after Close, but start
// nothing. Close always returns nil.
func (h *Health) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// Mount registers Live, Ready and Status on mux at LivePath, ReadyPath and
// StatusPath, for GET and HEAD.
func (h *Health) Mount(mux *http.ServeMux) {
	mux.Handle("GET "+LivePath, h.Live())
	mux.Handle("GET "+ReadyPath, h.Ready())
	mux.Handle("GET "+StatusPath, h.Status())
}

var (
	okBody    = []byte("ok\n")
	readyBody = []byte("ready\n")
)

// Ready answers 200 "ready" when the Runtime is Ready and no device is
// lost. Otherwise it answers 503 with the reason as text. It never blocks.
func (h *Health) Ready() http.Handler { return probeHandler(h.Readiness, readyBody) }

// Live answers 200 "ok" while the process can still become or stay useful.
// Otherwise it answers 503 with the reason as text. It never calls into the
// Runtime's initialization or its backend.
func (h *Health) Live() http.Handler { return probeHandler(h.Liveness, okBody) }

// probeHandler answers 200 with body when check passes. Otherwise it
// answers 503 with its reason as text. It allocates nothing: the header
// values are shared, never changed.
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

// startInit starts Init in the background, once, unless Close was called.
// It reports whether initialization is under way.
func (h *Health) startInit() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if !h.started {
		// Start now, under mu. A Close racing with this probe then cannot
		// stop an initialization the probe reports as started. The
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
