package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// A child's process start (the exec, the dynamic loader, the Go runtime and
// the package inits) takes 10 ms or more, and a loaded machine stretches it.
// A pre-started child pays it before the first initialization needs the
// child: it is started with EnvChild empty and a second pipe on descriptor
// 4, runs its package inits, and blocks reading its orders there. Its orders
// name the backend and carry the environment and working directory of the
// moment they are given, so that a variable set after the start counts as it
// would for a cold child. What a process reads only as it starts does not:
// the dynamic loader's LD_LIBRARY_PATH and LD_PRELOAD, the Go runtime's
// GODEBUG and GOTRACEBACK, and what package inits read. It never touches a
// driver before its orders. EOF, with no orders, makes it exit quietly.

// ordersFD is a pre-started child's end of its orders pipe.
const ordersFD = 4

// maxOrders bounds the orders a child reads: an environment, a backend and
// a folder.
const maxOrders = 4 << 20

// orders is what a pre-started child is told to do. The environment and the
// folder go as bytes (base64 in JSON): they need not be UTF-8.
type orders struct {
	Backend string   `json:"backend"`
	Env     [][]byte `json:"env"`
	Dir     []byte   `json:"dir"`
}

// errOlderChild is a pre-started child that answered without its orders: a
// program built before pre-started children, which read the empty backend
// as a backend's name.
var errOlderChild = errors.New("preflight: the pre-started child answered without its orders")

// Warm is a child started ahead of its check. Its zero value is not usable:
// Prestart makes one. Run uses it once; Close ends it unused. Both are safe
// to call from any goroutine, and Close after Run does nothing.
type Warm struct {
	c Child // the template: Command, Deadline and Env; no Backend yet

	mu sync.Mutex // protects s
	s  *started   // nil once used or closed
}

// Prestart starts a child for c, whose Backend is ignored, that waits for
// Run. It returns why it could not, as Run would have.
func Prestart(c Child) (*Warm, error) {
	c.Backend, c.Attempt, c.Command, c.Env = "", 0, slices.Clone(c.Command), slices.Clone(c.Env)
	s, err := start(c, "")
	if err != nil {
		return nil, err
	}
	return &Warm{c: c, s: s}, nil
}

// Matches reports whether w was started for c's program, deadline and
// environment additions: only then does Run check as Run(ctx, c) would.
func (w *Warm) Matches(c Child) bool {
	return slices.Equal(w.c.Command, c.Command) && w.c.Deadline == c.Deadline && slices.Equal(w.c.Env, c.Env)
}

// Run gives w its orders, to check c.Backend with this process's
// environment and folder as they are now, and returns what Run(ctx, c)
// would. Its deadline counts from its ArmedLine, written once it has its
// orders. A child that died while it waited, which never touched a driver,
// says nothing about the host: Run then runs a cold child, as it does for a
// program that does not wait for orders. Run on a used or closed Warm is an
// error.
func (w *Warm) Run(ctx context.Context, c Child) (Report, error) {
	w.mu.Lock()
	s := w.s
	w.s = nil
	w.mu.Unlock()
	if s == nil {
		return Report{}, errors.New("preflight: the pre-started child was used or closed")
	}
	if s.p.Exited() {
		_ = s.end(ctx) // reaped already: nothing to wait for
		return Run(ctx, c)
	}
	dir, _ := os.Getwd()
	o := orders{Backend: c.Backend, Dir: []byte(dir)}
	for _, kv := range childEnv(c, c.Backend) {
		o.Env = append(o.Env, []byte(kv))
	}
	b, err := json.Marshal(o)
	if err != nil {
		b = nil // the child reads EOF and exits: judged as a child without a report
	}
	pipe := s.orders
	s.orders = nil
	// The orders go as the child is judged, so that its bound to arm counts
	// from now, as a cold child's counts from its start. The pipe holds 64
	// KiB; a larger environment waits for the child to read it. A child that
	// died cannot read: EPIPE at once. One whose package inits hang is
	// judged hung at its bound, and the write gives up then too.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_ = pipe.SetWriteDeadline(time.Now().Add(StartBound(c.Deadline)))
		_, _ = pipe.Write(b)
		_ = pipe.Close()
	}()
	rep, err := s.finish(ctx, c)
	// The child is judged: a write still blocked (a grandchild holds the
	// pipe, say) gives up now.
	_ = pipe.SetWriteDeadline(time.Now())
	<-wrote
	if errors.Is(err, errOlderChild) {
		return Run(ctx, c)
	}
	return rep, err
}

// Close ends w if Run did not take it: it kills the child, which has touched
// no driver, and waits for it until ctx ends. It returns ctx's error if the
// child outlived ctx; it is then left to its reaper.
func (w *Warm) Close(ctx context.Context) error {
	w.mu.Lock()
	s := w.s
	w.s = nil
	w.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.end(ctx)
}

// awaitOrders is a pre-started child's wait for its orders on f. It applies their
// environment and folder, and returns their backend. Without orders (the
// parent closed the pipe, or died) it exits 0: nobody needs its check.
func awaitOrders(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, maxOrders))
	_ = f.Close()
	var o orders
	if err != nil || len(b) == 0 || json.Unmarshal(b, &o) != nil || o.Backend == "" {
		os.Exit(0)
	}
	os.Clearenv()
	for _, entry := range o.Env {
		kv := string(entry)
		// Past the first byte: an entry may start with "=" (Windows' "=C:").
		if i := strings.IndexByte(kv[min(1, len(kv)):], '='); i >= 0 {
			_ = os.Setenv(kv[:i+1], kv[i+2:])
		}
	}
	if len(o.Dir) > 0 {
		// Relative paths in the settings mean what they mean to the parent,
		// or the child does not check.
		if err := os.Chdir(string(o.Dir)); err != nil {
			fmt.Fprintf(os.Stderr, "gpuinit: the preflight child cannot enter the parent's folder %q: %v\n", o.Dir, err)
			os.Exit(2)
		}
	}
	return o.Backend
}
