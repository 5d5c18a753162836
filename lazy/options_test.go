package lazy

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithQueuedFailuresAQueuedFailureIsItsCallsOwn: a queued function that
// fails or panics is reported, the ones after it run, and the
// initialization succeeds; init's own failure and a Goexit still fail it.
func TestWithQueuedFailuresAQueuedFailureIsItsCallsOwn(t *testing.T) {
	ctx := context.Background()
	var reported []*DeferredError
	i := New(nil, WithQueuedFailures(func(d *DeferredError) { reported = append(reported, d) }))
	var ran []string
	bad := errors.New("bad ordinal")
	require.NoError(t, i.Call(ctx, func(context.Context) error { ran = append(ran, "first"); return nil }))
	require.NoError(t, i.Call(ctx, func(context.Context) error { return bad }))
	require.NoError(t, i.Call(ctx, func(context.Context) error { panic("boom") }))
	require.NoError(t, i.Call(ctx, func(context.Context) error { ran = append(ran, "last"); return nil }))
	require.NoError(t, i.Init(ctx), "one caller's bad call fails no one else")
	assert.Equal(t, Ready, i.State())
	assert.Equal(t, []string{"first", "last"}, ran, "the calls after the failures ran, in order")
	require.Len(t, reported, 2)
	assert.ErrorIs(t, reported[0], bad)
	assert.Contains(t, reported[0].Site, "options_test.go:")
	var pe *PanicError
	assert.ErrorAs(t, reported[1], &pe)
	assert.Equal(t, bad, i.Call(ctx, func(context.Context) error { return bad }), "a call that runs at once returns its error")

	initFails := New(func(context.Context) error { return bad }, WithQueuedFailures(func(*DeferredError) {}))
	assert.ErrorIs(t, initFails.Init(ctx), bad, "init's own failure still fails the initialization")

	goexit := New(nil, WithQueuedFailures(func(*DeferredError) {}))
	require.NoError(t, goexit.Call(ctx, func(context.Context) error { runtime.Goexit(); return nil }))
	assert.ErrorIs(t, goexit.Init(ctx), ErrGoexit, "a Goexit ends the queue's goroutine: the initialization fails")

	panicking := New(nil, WithQueuedFailures(func(*DeferredError) { panic("report broke") }))
	require.NoError(t, panicking.Call(ctx, func(context.Context) error { return bad }))
	err := panicking.Init(ctx)
	require.ErrorAs(t, err, &pe, "a report that panics fails the initialization rather than hang it")
	assert.True(t, strings.Contains(err.Error(), "report broke"))
}
