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
//   - a static call of a function that, with the call's arguments, calls such a
//     value as it runs, directly or through the calls it makes: the callee's
//     parameter (sync.Once.Do's f), a field reached from one (the receiver's
//     onEvict), or a value it finds itself. It is reported at the call, naming
//     the chain (see below);
//   - in a locked helper, a function that runs with its callers' lock held
//     (its name ends in Locked, its doc says the lock must be held, or every
//     call of it in the package holds a lock), what it calls from outside,
//     reported once at the call in the helper, naming a caller that holds the
//     lock, rather than at each call of the helper;
//   - the deferred calls that run at a return while a lock is held: defer fn()
//     after defer mu.Unlock(), a deferred closure that notifies and then
//     unlocks (defer func() { cb(); mu.Unlock() }()), and defer cb() where the
//     function returns with the lock still held;
//   - the outside calls of a goroutine that the lock holder starts and then
//     waits for with the lock held, in the same function: a receive from a
//     channel the goroutine sends on or closes, or a WaitGroup's Wait that it
//     is Done with;
//   - with -interfaces, a method call on an interface value that is a
//     parameter, a field, a package variable or an element (ctx.Err()).
//
// A chain names the functions called on the way to the code from outside:
//
//	c.removeOldest() // call of c.removeOldest (it calls c.onEvict, a field: removeOldest → removeElement → c.onEvict) while c.mu is held; ...
//
// Not reported: calls of functions and methods that call nothing from outside,
// local closures that call nothing from outside, go statements whose goroutine
// is not waited for under the lock, and calls made after the lock is
// released, in the function or in a callee that releases its caller's lock
// first.
//
// # Proven re-entry
//
// Where the code that runs under a held mutex is the module's own, it is
// followed instead of trusted, and a path that locks the held mutex again is
// reported as a class of its own, on by default (-reentry=false turns it
// off), with the path and "deadlocks if it runs":
//
//	c = cache.New(func(k string) string { return c.Get("a") }) // call of cache.New passes a func literal, which package cache calls while c.mu is held (cache.go:27), and it locks it again; deadlocks if it runs: Get → c.loader → (main's closure) → Get → c.mu.Lock
//	if c.Len() > 100 { // call of c.Len while c.mu is held locks it again; deadlocks if it runs: Put → Len → c.mu.Lock
//
// The code followed is a static call of the module's function (a direct
// self-deadlock), a function value whose every value the package's stores
// show, and the module's code passed to or stored in a way into another
// package that it calls under a lock (an obligation). A function value is
// followed to where it comes from, whichever way that is written: a field
// or package variable through every store in the package (composite
// literals, a config struct's field, a package variable set in main or
// init), a parameter through every call of a function that only the package
// calls (an unexported one; in a command, which nothing imports, an
// exported constructor, option or setter too), locals, captured variables,
// method values, and the results of the package's functions:
//
//	cache = NewCache(func(k string) int { return cache.Get("base") + 1 }) // in package main: Get → c.loader → (main's closure) → Get → c.mu.Lock
//	q.SetHook(func(v int) { q.Push(v + 1) })                            // Push → q.hook → (main's closure) → Push → q.mu.Lock
//
// Where the values are not all known (a parameter of an exported function
// of a package others can import, an exported field there, a value from
// another module), the call is reported as a call of code from outside, as
// above, and not followed. Each
// function's locks are summarized, through the static calls it makes, and
// exported as an Acquires fact for the packages that call it. An RLock
// followed by a Lock of the same RWMutex is reported, and so is an RLock
// followed by another RLock, which deadlocks once a writer waits between them
// ("deadlocks if it runs while a writer waits"), as sync.RWMutex's
// documentation says.
//
// The same mutex means: the same package variable; or, for a static call, the
// same field reached from the same value (c.mu held, c.Len() locks c.mu); or,
// behind a function value or an obligation, the same field of the same named
// type, whichever instance, since the analysis cannot tell instances apart
// there. A mutex of an object the code allocates itself (new(Cache),
// &Cache{}) is not the held one. Not followed: interface method calls (an
// implementation built elsewhere), calls of function values inside the
// followed code, goroutines (go c.Get(k) waits for the lock, it does not
// deadlock the holder), TryLock, code of other modules and the standard
// library, reflection. A function that unlocks its caller's mutex before it
// locks it (a wait: mu.Unlock(); defer mu.Lock()) takes nothing new.
//
// # Locks
//
// Lock, RLock, and TryLock and TryRLock on the branch where they succeeded, of
// sync.Mutex and sync.RWMutex, embedded ones included (s.Lock() locks s.Mutex),
// and Lock of a sync.Locker (c.L.Lock() on a sync.Cond). A sync.Cond's L is the
// mutex it was made with (sync.NewCond(&s.mu), sync.Cond{L: &mu}), so
// c.L.Lock() and s.mu.Unlock() take and release one lock, and c.Wait() leaves
// it held as it found it. A mutex is named by its
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
//     (maps.Keys(m), t.All());
//   - the result of a function, of this package or another, that only ever
//     returns visible code (a close or stop function it builds, a
//     context.CancelFunc it passes on): carried by its CallSummary fact;
//   - across the module: an exported package variable or field of an internal
//     package that its package sets only to visible code (var TimeNow =
//     time.Now), carried by a VisibleHook fact, and the results of calling
//     such a hook when they are visible code too, unless a package that the
//     user imports, directly or not, sets it to code from outside (a public
//     package's func SetSleep(f func()) { clock.Sleep = f }), as its
//     OutsideHooks fact says; an exported hook of a public package stays
//     from outside;
//   - a field of an object the package made itself, from visible code only
//     (c.lru = lru.New(c.onEvicted)), and a struct value only the package
//     reaches (var pool = sync.Pool{New: ...}), as seen by the callee's
//     CallSummary (Get calls p.New);
//   - an element of a map in an unexported field that the package makes and
//     fills only with visible code (handlers it wraps itself), and of a slice
//     a function builds by appending visible code (in the closures it makes
//     too, for a closure that ranges over it);
//   - a parameter that reaches a store or call only where a comparison said it
//     is nil (if cb != nil { cb = c.wrapped }), and the parameter of a func
//     literal called once where it is made (defer func(f func()) { hook = f }(hook));
//   - an element of an unexported package variable, a slice, array or map,
//     that the package fills only with visible code (literals, make, appends)
//     and otherwise only reads: a table of its own environment-variable
//     readers ({os.LookupEnv, lookupFile});
//   - the exported fields, package variables and functions of a command
//     (package main) or an external test package, which no package imports:
//     they are judged as unexported ones are. An exported name of a package
//     that others can import is its API and stays from outside, even where
//     only the module stores there (the analysis sees the module, not its
//     importers), except a package variable stored only by its initializer
//     (next);
//   - an exported package variable of a package others can import (not an
//     internal one, whose hooks are judged above) that the package stores
//     only in its initializer, with its own visible code, and whose address
//     it never hands out (var Library = String("APP_LIBRARY"), String
//     returning a closure over os.Getenv): the package's own code until
//     someone assigns it. Its calls under the package's locks are left to
//     whoever assigns it, as an Obligations fact on the variable (see
//     Internal packages): a package that stores in it, of the module or an
//     importer's, is reported where it stores code from outside, and as a
//     proven re-entry where the module's code it stores locks a held mutex
//     again. The module's other packages judge it by its VisibleHook fact,
//     as a hook of an internal package: it is from outside where they, or
//     a package of the module they import, store code from outside in it
//     (an OutsideHooks fact). An importer that assigns it must know that
//     what it stores runs under those locks: lockedcall tells it where it
//     analyzes the importer with the variable's facts (as go vet does), and
//     nothing does where it does not;
//   - a field of a package of another module that is unexported, whose
//     address stays in its package, and that the package fills only with its
//     own code, through its setters' parameters, or from its config
//     struct's exported fields (gorilla/websocket's handlePong, set by its
//     constructor to its own no-op; a cache's keyToHash, stored from
//     Config.KeyToHash and set to the package's own hash where that is
//     nil): the dependency's default, where the calling package and the
//     module's packages it imports call no setter with code that may be
//     from outside and store no such code in those config fields
//     (FieldSetter and SetterCalls facts).
//
// # Internal packages
//
// Only its module can call the exported API of an internal package, and the
// package is analyzed before the module's packages that call it. A function
// value that such a package calls under a lock, and that can only be its own
// code or have come in through that API, is not reported there. The ways in
// are a parameter of an exported function or method, an exported field of
// one of its types, and an exported package variable; the value may reach
// the call through unexported fields and variables the package stores it in,
// parameters of its unexported functions, the results of its getters, the
// closures it builds, and sync/atomic.Pointer fields it stores a pointer to a
// variable in. The package exports an Obligations fact on each way in ("what
// you pass as param 4 runs in Close → t.onClose while t.mu is held"), and on
// the methods of its own interfaces that such a method implements. Each
// package of the module checks its calls of those functions and methods, and
// its stores in those fields and variables:
//
//	newTr, err := transport.NewHTTP2Client(ctx, cc.ctx, addr, copts, onClose) // silent: onClose is the caller's own closure
//	return pool.New(onEvict) // call of pool.New passes onEvict (a parameter), which package pool calls while p.mu is held (pool.go:29: Evict → p.onEvict); ...
//	InTapHandle: s.opts.inTapHandle, // s.opts.inTapHandle (a field) is stored in transport.ServerConfig.InTapHandle, which package transport calls while ...
//
// An internal caller that passes on what comes in through its own exported
// API leaves the obligation on its own way in. A method that implements an
// interface another package declares is reached through it by callers that
// see none of this: its parameters stay from outside, unless the interface
// is of an internal package of the module that promises (a Promises fact)
// that every call of the method in that package passes the module's own
// code. A func literal stored only in unexported fields gets, as parameters,
// what the package's calls of those fields pass. A finding that a directive
// suppresses stays where it is, and is not passed on. A package that others
// can import leaves obligations only on its exported package variables that
// its initializer alone stores (see What counts as outside).
//
// The result of a method call on an interface of an internal package of the
// module is visible code when every implementation the package can see (the
// types of the module's packages it imports, and its own) returns visible
// code there, and there is one: an xDS watch's cancel function.
//
// # The -interfaces flag
//
// It is off by default. On the standard library of Go 1.26.8 it reports 160
// findings, 99 of them interface method calls, against 60 in the default mode
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
// # Cost
//
// Each function is summarized once, from its callees' summaries, and a
// summary holds at most eight outside calls with chains of at most eight
// functions, so the work stays linear in the size of the package. Functions
// that call each other (a → b → a, or a function that calls itself) are
// summarized together, again while any of their summaries changes and at
// most eight times, so that each lists what the whole cycle calls. Other
// packages' summaries come from CallSummary facts; a callee's outside calls
// that it finds by itself (its own table's elements, its package variables)
// are not carried across packages.
//
// The analyzer builds the package's SSA form itself, as buildssa does but
// without ctrlflow and inspect, whose control-flow graphs and inspector it
// would not read. It exports its own NoReturn fact for the functions that
// never return, so that the form is buildssa's, instruction for instruction.
// With -factsonly it computes the facts alone and reports nothing, for a
// package analyzed only for the packages that import it: the locked helpers
// and the obligations of the packages called serve findings alone, and are
// left out unless the package is internal. The lockedcall command sets the
// flag where go vet analyzes a dependency; another driver that analyzes
// dependencies for their facts may set it too. The facts are the same with
// and without it, and from one run to the next: questions that depend on each
// other's answers are asked in source order, never in a map's order.
//
// # Limits
//
//   - Across packages, only the outside calls a callee reaches from its
//     parameters (its receiver's fields included) are followed; what another
//     package calls from its own tables and variables is its business.
//   - A function value that holds the package's own code (a field set to
//     c.clientHandshake, a hook set to a package function) is visible, and
//     what that code calls is not followed.
//   - Obligations are checked at static calls, calls of the package's own
//     interface methods, and stores in exported fields and variables. A
//     function with obligations used as a value, a promoted method called
//     through an embedding type, a struct with obligated fields copied in
//     whole, and a method value are not checked; nor is an exported type of
//     an internal package that another package converts to an interface of
//     a third (only the package's own conversions, and the interfaces of the
//     packages it imports, are seen).
//   - A promise covers the calls of the interface method in its own package:
//     a call of it in another package, with code from outside, is not seen by
//     the implementations that trust the promise.
//   - The implementations of an internal interface that a package can see are
//     those of the module's packages it imports and its own: one in a package
//     above it, returning code from outside, is not seen.
//   - A value that the module passes into an internal package through a map,
//     a slice, or the result of an interface method that no rule covers stays
//     from outside there.
//   - An exported hook of an internal package is visible by what its own
//     package, the package using it, and the packages that one imports,
//     directly or not, store (OutsideHooks facts name the hooks set to code
//     from outside); a store by a package of the module that the user does
//     not import (a sibling package, a test of a third package) is not seen.
//   - The result of an interface method call is from outside, even where every
//     implementation is the module's own, unless the interface is of an
//     internal package of the module (see Internal packages).
//   - Interface dispatch is checked only with -interfaces, one call deep, and
//     summaries do not follow interface calls.
//   - Mutexes are identified by access path, so aliases (p := &o.mu) are
//     different mutexes, and a mutex reached through a call (lockFor(k).Lock())
//     is only matched with the same SSA value.
//   - Elements of slices and maps are from outside, except a map in an
//     unexported field that the package makes itself and fills only with
//     visible code, and a slice a function (and its closures) builds by
//     appending visible code; a map handed to a function (other than as an interface value) counts as
//     filled elsewhere.
//   - Parameters of a local closure are from outside unless the closure is
//     called directly where the lock is held, called once where it is made,
//     or (in an internal package) only stored in unexported fields.
//   - A locked helper's doc comment is matched by phrase ("must be called
//     with", "caller must hold", "must be held"), which can misread a comment.
//   - Summaries are of what a function may call as it runs, whatever it holds
//     then; a call made after the function released its caller's lock on
//     every path is left out, one released on some paths is not.
//   - A cycle of calls whose summaries still change after eight rounds (a
//     walk down x.next, x.next.next, ...) keeps what the eighth found.
//   - A goroutine handoff is seen only within one function: a func literal
//     started with go, and a receive from its channel or a WaitGroup Wait,
//     both with the lock held. A goroutine started elsewhere, a callback sent
//     to a worker over a channel, or a wait in a callee is not seen.
//   - Locked helpers are recognized by name (…Locked), by doc comments that
//     say a lock must be held, or by every call in the package holding one;
//     a documented helper without such a call names no lock ("a lock is
//     held").
//   - A deferred call's registration order is taken as block order; a defer in
//     a loop counts once, and deferred calls are checked at returns, not where
//     a panic unwinds.
//   - A helper that locks on some paths only (a TryLock wrapper) exports no fact.
//   - Proven re-entry follows static calls only, and behind a function value
//     or an obligation it matches mutexes by field and type: a child's mutex
//     of the same type as its parent's held one, reached through a
//     function value, is reported as the same.
//   - A dependency's field is trusted to hold its default where the calling
//     package and the module's packages it imports call none of its setters
//     with code from outside and store none in its config fields: a setter
//     called, or a config filled, by a package that the caller does not
//     import (the module's users, a sibling package) is not seen, and
//     neither is a config struct copied in whole from one the module did
//     not fill (a parameter's *cfg).
//   - An exported package variable of a public package is the package's
//     own code only where its initializer is its only store: one that
//     init() or a setter stores is its API, from outside. A store in it is
//     checked only where lockedcall analyzes the storing package; a
//     package of the module that the caller does not import (a sibling,
//     the module's users) may store in it unseen by the caller.
//   - Proven re-entry behind a function value follows what the package's
//     stores show, eight values and eight steps deep at most; a value that
//     comes from where the stores do not show (another module, a map or
//     slice element, the result of a call of another package) is left out.
//   - Reflection, unsafe and go:linkname are not modelled.
package lockedcall
