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
// would for a cold child. It never touches a driver before them. EOF, with
// no orders, makes it exit quietly.

// ordersFD is a pre-started child's end of its orders pipe.
const ordersFD = 4

// maxOrders bounds the orders a child reads: an environment, a backend and
// a folder.
const maxOrders = 4 << 20

// orders is what a pre-started child is told to do.
type orders struct {
	Backend string   `json:"backend"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
}

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
// orders. A child that died while it waited gives no answer, as a cold one
// that died would. Run on a used or closed Warm is an error.
func (w *Warm) Run(ctx context.Context, c Child) (Report, error) {
	w.mu.Lock()
	s := w.s
	w.s = nil
	w.mu.Unlock()
	if s == nil {
		return Report{}, errors.New("preflight: the pre-started child was used or closed")
	}
	dir, _ := os.Getwd()
	b, err := json.Marshal(orders{Backend: c.Backend, Env: childEnv(c, c.Backend), Dir: dir})
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
	<-wrote // done: the child is gone, or the deadline passed
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
	defer s.rd.Close()
	_ = s.orders.Close() // EOF: a child that reads it exits by itself
	return s.p.Stop(ctx)
}

// awaitOrders is a pre-started child's wait for its orders. It applies their
// environment and folder, and returns their backend. Without orders (the
// parent closed the pipe, or died) it exits 0: nobody needs its check.
func awaitOrders() string {
	f := os.NewFile(ordersFD, "gpuinit preflight orders")
	b, err := io.ReadAll(io.LimitReader(f, maxOrders))
	_ = f.Close()
	var o orders
	if err != nil || len(b) == 0 || json.Unmarshal(b, &o) != nil || o.Backend == "" {
		os.Exit(0)
	}
	os.Clearenv()
	for _, kv := range o.Env {
		// Past the first byte: an entry may start with "=" (Windows' "=C:").
		if i := strings.IndexByte(kv[min(1, len(kv)):], '='); i >= 0 {
			_ = os.Setenv(kv[:i+1], kv[i+2:])
		}
	}
	if o.Dir != "" {
		if err := os.Chdir(o.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "gpuinit: the preflight child cannot enter the parent's folder %s: %v\n", o.Dir, err)
		}
	}
	return o.Backend
}
