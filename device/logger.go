package device

import (
	"context"
	"log/slog"

	"github.com/gpuinit/gpuinit/lazy"
)

// An Option configures the Runtime that [Open] or [New] returns.
type Option func(*Runtime)

// WithLogger sets the logger of the Runtime's own warnings. The
// initialization's watchdog warns through it when the initialization, or
// one call queued before it, runs past [lazy.DefaultWatchdog]: a driver call
// that hangs, or a deadlock. A call queued with LazyCall that fails when it
// runs is logged through it too, with the site that queued it. The warning's message is one short line, and
// every goroutine's stack is its one [lazy.StacksKey] attribute, which a
// handler's ReplaceAttr may drop. Without WithLogger, or with a nil logger,
// the warnings go to [slog.Default] as it is at each warning.
//
// Open's Runtime is shared by every Open of its name: the logger one of
// them gives is the Runtime's from then on, for every warning not yet
// written, and an Open without WithLogger leaves it as it is. Warnings are
// written on the watchdog's goroutine, and nothing waits for them; see
// [lazy.WithLogger].
func WithLogger(l *slog.Logger) Option { return func(r *Runtime) { r.logger.Store(l) } }

// applyOptions applies opts to r, in order.
func (r *Runtime) applyOptions(opts []Option) *Runtime {
	for _, o := range opts {
		o(r)
	}
	return r
}

// watchdogLogger is the logger the Runtime gives its Initializer: it hands
// each record to the logger WithLogger set last, or to slog.Default's, read
// at each record, so that a later Open may still set it.
func (r *Runtime) watchdogLogger() lazy.Option {
	return lazy.WithLogger(slog.New(runtimeHandler{r}))
}

// runtimeHandler is watchdogLogger's slog.Handler.
type runtimeHandler struct{ r *Runtime }

func (h runtimeHandler) handler() slog.Handler {
	if l := h.r.logger.Load(); l != nil {
		return l.Handler()
	}
	return slog.Default().Handler()
}

func (h runtimeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.handler().Enabled(ctx, level)
}

func (h runtimeHandler) Handle(ctx context.Context, rec slog.Record) error {
	return h.handler().Handle(ctx, rec)
}

// WithAttrs and WithGroup bind to the logger set now: the Initializer
// calls neither.
func (h runtimeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.handler().WithAttrs(attrs)
}
func (h runtimeHandler) WithGroup(name string) slog.Handler { return h.handler().WithGroup(name) }
