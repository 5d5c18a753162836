package lazy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/stretchr/testify/assert"
)

// doorScenarios are the caller's contexts that Init must deal with before it
// takes its mutex: each would leave the mutex held, or deadlock, if Init
// called into the context under the lock. They run in child processes, like
// the re-entry scenarios, because that failure is a hang.
func doorScenarios() map[string]func() error {
	return map[string]func() error{
		"door/err-reenters-call": func() error {
			i := New(nil)
			var queued atomic.Int32
			ctx := &hostileContext{Context: context.Background(), reenter: func() {
				_ = i.Call(context.Background(), func(context.Context) error { queued.Add(1); return nil })
			}}
			return expect(i.Init(ctx), nil, queued.Load() >= 1, "the Call made from ctx.Err ran")
		},
		"door/err-reenters-init": func() error {
			i := New(nil)
			var inner error = errors.New("Err was not called")
			ctx := &hostileContext{Context: context.Background(), reenter: func() {
				inner = i.Init(context.Background())
			}}
			return expect(i.Init(ctx), nil, inner == nil, fmt.Sprintf("the Init made from ctx.Err returned %v", inner))
		},
		"door/value-reenters-while-initializing": func() error {
			release := make(chan struct{})
			i := New(func(context.Context) error { <-release; return nil })
			started := make(chan error, 1)
			go func() { started <- i.Init(context.Background()) }()
			for i.State() != Initializing {
				time.Sleep(time.Millisecond)
			}
			ctx := &hostileContext{Context: context.Background(), reenter: func() {
				_ = i.Call(context.Background(), func(context.Context) error { return nil })
				_ = i.State()
			}}
			time.AfterFunc(50*time.Millisecond, func() { close(release) })
			if err := i.Init(ctx); err != nil {
				return err
			}
			return <-started
		},
		"door/err-error-reenters": func() error {
			// Init wraps ctx.Err()'s error, whose Error method is the
			// caller's code too: formatting it under the lock would hang.
			i := New(nil)
			var inner error = errors.New("Error was not called")
			ctx := errContext{Context: context.Background(), err: reenteringError{func() { inner = i.Init(context.Background()) }}}
			err := i.Init(ctx)
			if inner != nil { // before anything here calls err.Error itself
				return fmt.Errorf("the Init made from Error returned %v", inner)
			}
			var re reenteringError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "not started") {
				return fmt.Errorf("Init returned %v, want the context's error wrapped", err)
			}
			return nil
		},
		"door/nil-context": func() error {
			//lint:ignore SA1012 a nil Context is the case under test
			return panicsAtTheDoor(nil, "Init", false)
		},
		"door/embedded-nil-context": func() error {
			return panicsAtTheDoor(struct{ context.Context }{}, "Init", false)
		},
		"door/embedded-nil-context-init-while-initializing": func() error {
			return panicsAtTheDoor(struct{ context.Context }{}, "Init", true)
		},
		"door/embedded-nil-context-call-while-initializing": func() error {
			return panicsAtTheDoor(struct{ context.Context }{}, "Call", true)
		},
	}
}

// errContext is a Context whose Err reports err.
type errContext struct {
	context.Context
	err error
}

func (c errContext) Err() error { return c.err }

// reenteringError is an error whose Error method runs reenter.
type reenteringError struct{ reenter func() }

func (e reenteringError) Error() string { e.reenter(); return "re-entering error" }

// panicsAtTheDoor checks that Init(ctx), or Call(ctx, f) for op "Call",
// panics with a message that names op and says what is wrong, and that the
// Initializer still works afterwards: nothing was left held. With
// initializing, the call comes while another caller's init runs.
func panicsAtTheDoor(ctx context.Context, op string, initializing bool) error {
	release := make(chan struct{})
	i := New(func(context.Context) error { <-release; return nil })
	first := make(chan error, 1)
	if initializing {
		go func() { first <- i.Init(context.Background()) }()
		for i.State() != Initializing {
			time.Sleep(time.Millisecond)
		}
	}
	msg := func() (v any) {
		defer func() { v = recover() }()
		if op == "Call" {
			_ = i.Call(ctx, func(context.Context) error { return nil })
		} else {
			_ = i.Init(ctx)
		}
		return nil
	}()
	s, _ := msg.(string)
	if !strings.Contains(s, "lazy: "+op) || !strings.Contains(s, "Context") {
		return fmt.Errorf("%s(%#v) panicked with %v, want a message about the Context", op, ctx, msg)
	}
	var ran atomic.Int32
	if err := i.Call(context.Background(), func(context.Context) error { ran.Add(1); return nil }); err != nil {
		return err
	}
	close(release)
	if initializing {
		if err := <-first; err != nil {
			return err
		}
	}
	return expect(i.Init(context.Background()), nil, ran.Load() == 1, "the Initializer works after the panic")
}

func TestCallersContextNeverRunsUnderTheMutex(t *testing.T) {
	var names []string
	for name := range doorScenarios() {
		names = append(names, name)
	}
	slices.Sort(names)
	for name, r := range runEach(t, names, "fixed", 30*time.Second) {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, hangcheck.OK, r.Verdict, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		})
	}
}
