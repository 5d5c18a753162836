// Package lazy runs a one-time initialization on first use and replays the work
// queued before it, without ever running user code under its own lock.
//
// An Initializer starts Uninitialized. Call queues functions until then; Init runs
// the init function once, then the queued functions in the order Call queued them,
// and only then reports Ready. From then on Call runs its function at once, on the
// caller's goroutine, with no lock and no allocation. If init or a queued function
// fails, panics or calls runtime.Goexit, the Initializer is Failed for good: every
// later Init and Call returns the memoized error, which names the call site that
// queued the failing work and lists the queued work that never ran.
//
// Re-entry does not deadlock. The init function and queued functions may call
// Init and Call on the same Initializer, from their own goroutine or from
// goroutines they start with the context they were given: such a Call runs at
// once, such an Init returns nil (or ErrReentrantInit from inside init itself).
// Go has no goroutine-local storage, so the context carries a marker; a call
// with a foreign context (context.Background()) is still recognized when it
// comes from the goroutine that runs the initialization.
//
// The limit, stated plainly: a callback that starts a goroutine with a foreign
// context (context.Background(), or a request's) and then waits for that
// goroutine's Init deadlocks, as a re-entrant sync.Once.Do does: nothing marks
// the goroutine as part of the initialization. Such a goroutine's Call never
// blocks (it is queued behind the callback), but a callback that waits for a
// queued Call to run waits for itself. The rule that avoids it: pass on the ctx
// the callback was given. The watchdog reports such a hang with every
// goroutine's stack. Also, a re-entrant Init from a queued function returns nil
// because init has succeeded by then; a queued function after it can still fail
// the initialization, and the outer Init then returns that failure.
//
// No code of the caller's runs while the Initializer holds its mutex: not init,
// not queued or immediate functions, and not the caller's Context methods.
//
// # Failures
//
// A failure is memoized and typed. An init function's failure is an
// [*InitError]; every later Init returns it, and Call wraps it. A queued
// function's failure is a [*DeferredError]: it names the call site that
// queued the function, and lists the queued work that never ran. A panic is
// a [*PanicError] with the stack where it happened, never memoized as
// success. A function that calls runtime.Goexit fails with [ErrGoexit].
//
// [WithQueuedFailures] makes a queued function's failure its own. The
// function's [*DeferredError] goes to a report function, and the work queued
// after it runs. That suits a queue of callers' requests that came early, as
// a GPU runtime's is. Without it a queued failure fails the initialization
// for every caller, which suits work that is part of being initialized.
//
// # The watchdog
//
// The watchdog logs a slow phase: init, or one queued function, running past
// [WithWatchdog]'s threshold ([DefaultWatchdog] by default). It logs once per
// function, at slog's warning level, with the phase, the call site, the time
// elapsed and every goroutine's stack (the attribute [StacksKey]). It only
// reports: it never delays, interrupts or crashes Init.
package lazy
