// Package lockedcall defines an Analyzer that reports a call into code the
// calling function cannot see, made while a sync.Mutex or sync.RWMutex is held.
//
// Go's mutexes are not reentrant. If code that holds a lock calls a function
// that someone else supplied, and that function calls back into code that takes
// the same lock, the goroutine deadlocks on itself:
//
//	func (o *Once) doSlow(f func()) {
//		o.m.Lock()
//		defer o.m.Unlock()
//		if o.done.Load() == 0 {
//			defer o.done.Store(1)
//			f() // call of f (a parameter) while o.m is held; if f re-enters, this deadlocks
//		}
//	}
//
// PyTorch's _lazy_call and _lazy_init had this shape (fixed in PR #182948), and
// so did Open Policy Agent (open-policy-agent/opa#5273).
//
// # What is reported
//
// A call of a function value that comes from outside the function (a
// parameter, a struct field, a map, slice or array element, a package
// variable, the result of a call, a value received from a channel) made while
// a mutex is held. Also:
//
//   - defer fn() registered after defer mu.Unlock(): deferred calls run last in,
//     first out, so fn runs before the unlock;
//   - for v := range seq over an iterator seq from outside, reported at the
//     for; the loop body, which the iterator calls, is checked as running under
//     the lock, whatever the iterator (a package-level iterator function too);
//   - a call of a local closure that calls such a value while the caller's lock
//     is still held, reported where the closure is called, naming what it calls;
//   - with -interfaces, a method call on an interface value that is a
//     parameter, a field, a package variable or an element (ctx.Err()).
//
// Not reported: static calls of functions and methods, local closures that call
// nothing from outside, go statements (the goroutine does not run under the
// caller's lock), and calls made after the lock is released.
//
// # Locks
//
// Lock, RLock, and TryLock and TryRLock on the branch where they succeeded, of
// sync.Mutex and sync.RWMutex, embedded ones included (s.Lock() locks s.Mutex),
// and Lock of a sync.Locker (c.L.Lock() on a sync.Cond). A mutex is named by its
// access path from a parameter, a package variable or a local: o.mu,
// registry.mu, s.Mutex. A deferred Unlock keeps the mutex held to the end of the
// function; a deferred Lock (mu.Unlock(); defer mu.Lock()) takes it back there.
// The same holds for a deferred call of a locking helper or of a local closure:
// what it does to mutexes happens when the function returns.
//
// A function that returns, on every path, with a mutex reached from one of its
// parameters or from a package variable locked, or with such a mutex of its
// caller's unlocked, exports a LockEffects fact saying so ("acquires receiver
// field mu"). The fact is applied where the function is called, in its package
// and in packages that import it, so that locking helpers such as
//
//	func (i *Initializer) lock()   { i.mu.Lock(); ... }
//	func (i *Initializer) unlock() { ...; i.mu.Unlock() }
//
// count as locking and unlocking i.mu.
//
// # Held on some path
//
// The check is a forward dataflow over the function's SSA control-flow graph. A
// call is reported when some path from the function's entry reaches it with the
// mutex locked and not unlocked since ("may be held"). Each block starts from
// the union of what its predecessors end with, so a branch that unlocks and
// returns early adds nothing to the code after the branch, while the path that
// kept the lock still reaches it. A lock taken under a condition
// (if shared { mu.Lock() }) is held at the calls after it, which is a real
// deadlock whenever the condition holds; "held on every path" would miss it.
// The price is a lock released under a condition correlated with the one it was
// taken under, which stays held for the analysis; none of the findings on the
// standard library came from that. Facts take the stricter view: an effect is
// exported only when it happens on every path that returns.
//
// # What counts as outside
//
// Some values look like code from outside but hold only code the package wrote,
// because only the package can set them. They are treated as visible:
//
//   - an unexported field or package variable whose every assignment in the
//     package stores visible code (a static function, a method value of a
//     concrete type, a closure that calls nothing from outside, nil) and whose
//     address is never handed out: test hooks, c.handshakeFn = c.clientHandshake;
//   - a parameter of an unexported function that is called at least once, only
//     directly, and with visible code as that argument at every call site;
//   - the cancel and stop functions of package context and signal.NotifyContext;
//     what sync.OnceFunc, OnceValue and OnceValues return, judged by their
//     argument; an iterator returned by a static call given no function values
//     (maps.Keys(m), t.All()).
//
// # The -interfaces flag
//
// It is off by default. On the standard library of Go 1.26.8 it reports 94
// findings, 82 of them interface method calls, against 11 in the default mode
// (see FINDINGS.md in this module). Most
// are I/O done under a lock on purpose, to serialize it: log.Logger's out.Write,
// Close of a net.Conn, database/sql calls into its driver. Their implementations
// could re-enter, but rarely do, and at that rate a team turns the check off. Turn
// it on to audit code whose lock guards calls on interfaces the caller supplies,
// such as a context.Context: gpuinit's lazy once called ctx.Err() under its mutex.
//
// # Suppressing a finding
//
// Write //lockedcall:ok followed by the reason on the line of the call, or
// alone on the line above it. The reason is required: a bare //lockedcall:ok is
// reported itself. golangci-lint's //nolint:lockedcall (and //nolint:all,
// //nolint) are honoured too.
//
// # Limits
//
//   - Static calls are not followed: helper() that runs a stored callback is not
//     reported when called under a lock; only lock effects cross calls.
//   - Function values stored by another package (its fields, its variables) are
//     from outside, whatever that package stores in them.
//   - Interface dispatch is checked only with -interfaces, one call deep.
//   - Mutexes are identified by access path, so aliases (p := &o.mu) are
//     different mutexes, and a mutex reached through a call (lockFor(k).Lock())
//     is only matched with the same SSA value.
//   - Elements of slices and maps are from outside even when the package fills
//     them with its own closures.
//   - Parameters of a local closure are from outside unless the closure is
//     called directly where the lock is held.
//   - Code run by another goroutine while the lock holder waits for it (a
//     callback handed over on a channel) is not seen.
//   - A helper that locks on some paths only (a TryLock wrapper) exports no fact.
//   - Reflection, unsafe and go:linkname are not modelled.
package lockedcall
