package device

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gpuinit/gpuinit/device/driver"
)

// envBackend names the backend Open("") picks; unset or empty means "auto".
const envBackend = "GPUINIT_BACKEND"

// A Registry holds the backends registered with it and the Runtime that Open
// returns for each name. Its zero value is ready to use. It is safe for
// concurrent use.
//
// [DefaultRegistry] is the one the package-level functions use. Backends
// register with it from their init functions. It plays the part of
// [net/http.DefaultServeMux] and [flag.CommandLine]. A test, or a program
// that brings backends of its own, makes another. Its Runtimes and choices
// are its own.
type Registry struct {
	mu       sync.Mutex                     // protects following fields
	backends map[string]driver.Registration // by name, from Register
	opened   map[string]*opening            // backends opened, or being opened

	runtimes runtimeTable // the Runtime each name gets
}

// DefaultRegistry is the process's registry. The backends imported into the
// binary register with it.
var DefaultRegistry = &Registry{}

// Register makes a backend available to DefaultRegistry's Open. See
// [Registry.Register].
func Register(reg driver.Registration) { DefaultRegistry.Register(reg) }

// Open returns DefaultRegistry's Runtime for the named backend. See
// [Registry.Open].
func Open(name string, opts ...Option) (*Runtime, error) { return DefaultRegistry.Open(name, opts...) }

// Register makes a backend available to Open under reg.Name. Backends call
// it from an init function, on DefaultRegistry through the package-level
// [Register].
//
// A registration with Unavailable set records that the backend was imported
// but this build cannot have it, and why. Open of the name then fails with
// [ErrNotCompiled] and that reason. Auto lists it among the backends it
// passed over. A later registration with an Open replaces an unavailable
// one. An unavailable one after an available one is ignored.
//
// Register panics if the name is empty or "auto". It panics if reg has
// neither Open nor Unavailable, or both. It panics if the name already has
// an Open. These are programming errors, found at start-up, as with
// [database/sql.Register].
func (g *Registry) Register(reg driver.Registration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch prev, dup := g.backends[reg.Name]; {
	case reg.Name == "" || reg.Name == "auto":
		panic(fmt.Sprintf("device: Register: %q is not a backend name", reg.Name))
	case (reg.Open == nil) == (reg.Unavailable == ""):
		panic("device: Register: backend " + reg.Name + " needs an Open or an Unavailable reason, not both")
	case dup && reg.Open == nil:
		return // unavailable after available, or twice: the first stands
	case dup && prev.Open != nil:
		panic("device: Register: backend " + reg.Name + " registered twice")
	}
	if g.backends == nil {
		g.backends = map[string]driver.Registration{}
	}
	g.backends[reg.Name] = reg
}

// Backends lists the backends Open can open, sorted. Backends registered
// as unavailable are not listed.
func (g *Registry) Backends() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for n, reg := range g.backends {
		if reg.Open != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Known lists every name Open accepts: "auto", then every registered
// backend, sorted. Unavailable ones are listed too; Open reports why they
// are not here.
func (g *Registry) Known() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.backends))
	for n := range g.backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return append([]string{"auto"}, names...)
}

// AutoOrder lists the GPU backends "auto" tries, in order, unavailable ones
// included. For the shipped ones that is cuda, then hip.
func (g *Registry) AutoOrder() []string {
	var names []string
	for _, reg := range g.gpuBackends() {
		names = append(names, reg.Name)
	}
	return names
}

// gpuBackends returns the registrations of the GPU backends, in auto's order.
func (g *Registry) gpuBackends() []driver.Registration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var regs []driver.Registration
	for _, reg := range g.backends {
		if reg.GPU {
			regs = append(regs, reg)
		}
	}
	slices.SortFunc(regs, func(a, b driver.Registration) int {
		if a.AutoRank != b.AutoRank {
			return a.AutoRank - b.AutoRank
		}
		return strings.Compare(a.Name, b.Name)
	})
	return regs
}

// registrations returns every registration, in no order.
func (g *Registry) registrations() []driver.Registration {
	g.mu.Lock()
	defer g.mu.Unlock()
	regs := make([]driver.Registration, 0, len(g.backends))
	for _, reg := range g.backends {
		regs = append(regs, reg)
	}
	return regs
}

func (g *Registry) lookup(name string) (driver.Registration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	reg, ok := g.backends[name]
	return reg, ok
}

// Open returns the registry's Runtime for the named backend. It creates the
// Runtime on first use. Later calls with the name return the same Runtime.
// The name "" reads GPUINIT_BACKEND, and falls back to "auto". opts
// configure the Runtime Open returns, the one it made before too, as
// [WithLogger] says.
//
// Open never initializes anything and makes no driver call. It does run a
// named backend's Open, the registration's, which only makes the backend
// value. So a bad configuration, such as GPUINIT_SIM_* that do not parse, is
// an error from Open. Open also checks every GPUINIT_* variable that is set:
// package device's own, and those the backends it may open read
// ([driver.Registration].Env). A value that cannot be used is an error
// wrapping [ErrBadSetting] that names it. So is any other GPUINIT_* name
// ([Registry.Settings] lists those gpuinit reads), with the name meant where
// one is near.
// Unusable values include a deadline that does not parse, and a library file
// or a host root that is not there.
//
// "auto" is resolved at the first Init, not here. It chooses the first GPU
// backend, in AutoOrder, whose driver loads and reports a device. The
// others' reasons are in PassedOver. Name reports the choice after Init.
// From then on, Open of the chosen name returns auto's Runtime too, unless
// that name was opened before. The package documentation says what two
// Runtimes over one backend share.
//
// A backend that is not in this binary gets an error wrapping
// [ErrNotCompiled]. It says why: the import that registers the backend, or
// the reason the build could not have it. A name that is no backend's gets
// an error wrapping ErrBadSetting. It names the backend meant where the case
// or an alias was wrong. If the backend's Open fails, nothing is kept, and a
// later Open tries again.
func (g *Registry) Open(name string, opts ...Option) (*Runtime, error) {
	fromEnv := false
	if name == "" {
		name, fromEnv = strings.TrimSpace(os.Getenv(envBackend)), true
	}
	if name == "" {
		name = "auto"
	}
	if r := g.runtimes.get(name); r != nil {
		return r.applyOptions(opts), nil
	}
	if name == "auto" {
		candidates := g.gpuBackends()
		if err := g.checkEnv(candidates); err != nil {
			return nil, err
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("device: no GPU backend is registered in this binary; forgotten import? import _ %q: %w",
				backendsPackage, ErrNotCompiled)
		}
		return g.runtimes.add(name, newRuntime(g, candidates, true, nil)).applyOptions(opts), nil
	}
	reg, ok := g.lookup(name)
	if !ok || reg.Open == nil {
		return nil, g.notCompiled(name, reg, ok, fromEnv)
	}
	if err := g.checkEnv([]driver.Registration{reg}); err != nil {
		return nil, err
	}
	b, err := g.openBackend(reg)
	if err != nil {
		return nil, err
	}
	return g.runtimes.add(name, newRuntime(g, []driver.Registration{reg}, false, b)).applyOptions(opts), nil
}

// notCompiled is Open's error for a name without an Open. It says why the
// build lacks it, or the import that would register it.
func (g *Registry) notCompiled(name string, reg driver.Registration, registered, fromEnv bool) error {
	given := fmt.Sprintf("%q", name)
	if fromEnv {
		given = fmt.Sprintf("%s=%q", envBackend, name)
	}
	switch {
	case registered:
		return fmt.Errorf("device: backend %s is not in this binary: %s: %w", name, reg.Unavailable, ErrNotCompiled)
	case shippedPackages[name] != "":
		return fmt.Errorf("device: backend %s is not registered (forgotten import?): import _ %q for every backend, or _ %q for this one: %w",
			given, backendsPackage, shippedPackages[name], ErrNotCompiled)
	}
	if want := g.Suggest(name); want != "" {
		return fmt.Errorf("device: unknown backend %s: did you mean %q? (backend names are %s, in lower case): %w",
			given, want, strings.Join(g.Known(), ", "), ErrBadSetting)
	}
	return fmt.Errorf("device: unknown backend %s: the backends are %s: %w", given, strings.Join(g.Known(), ", "), ErrBadSetting)
}

// aliases are names users reach for that mean a backend.
var aliases = map[string]string{"rocm": "hip", "amd": "hip", "amdgpu": "hip", "nvidia": "cuda", "nv": "cuda", "simulated": "sim"}

// Suggest returns the backend name meant by name, given in another case or
// as an alias ("CUDA", "rocm", "Sim"). The result is a registered or shipped
// backend's name, "auto", or "" when name means none. Open's error for an
// unknown name says the same. A program that checks a flag or a variable
// before opening anything can say it first. It is safe for concurrent use.
func (g *Registry) Suggest(name string) string {
	lower := strings.ToLower(strings.TrimSpace(name))
	if lower == "auto" {
		return "auto"
	}
	if slices.Contains(g.Known(), lower) || shippedPackages[lower] != "" {
		return lower
	}
	if a := aliases[lower]; a != "" && (slices.Contains(g.Known(), a) || shippedPackages[a] != "") {
		return a
	}
	return ""
}

// The imports that register the shipped backends, named in Open's hints only.
const backendsPackage = "github.com/gpuinit/gpuinit/device/backends"

var shippedPackages = map[string]string{
	"cuda": "github.com/gpuinit/gpuinit/device/cuda",
	"hip":  "github.com/gpuinit/gpuinit/device/hip",
	"sim":  "github.com/gpuinit/gpuinit/device/sim",
}

// opening is one backend's Open call. done closes when it returns. A failed
// opening is forgotten once done, so that a later open tries again.
type opening struct {
	done chan struct{}
	b    driver.Backend
	err  error
}

// openBackend returns the registry's instance of reg's backend. It calls
// the backend's Open at most once at a time, and never with a lock held.
// Concurrent callers wait on a channel for the call in flight. A success is
// kept for the registry's life. A failure is returned to the callers that
// waited for it, then forgotten.
func (g *Registry) openBackend(reg driver.Registration) (driver.Backend, error) {
	if reg.Open == nil {
		return nil, g.notCompiled(reg.Name, reg, true, false)
	}
	g.mu.Lock()
	o := g.opened[reg.Name]
	if o == nil {
		o = &opening{done: make(chan struct{})}
		if g.opened == nil {
			g.opened = map[string]*opening{}
		}
		g.opened[reg.Name] = o
		g.mu.Unlock()
		g.finishOpening(reg, o)
	} else {
		g.mu.Unlock()
	}
	<-o.done
	return o.b, o.err
}

// finishOpening calls reg.Open and releases o's waiters whatever happens,
// runtime.Goexit included. After a Goexit, the deferred code sees o.err
// still set to the error that says so.
func (g *Registry) finishOpening(reg driver.Registration, o *opening) {
	defer func() {
		g.mu.Lock()
		if o.err != nil {
			delete(g.opened, reg.Name)
		}
		close(o.done)
		g.mu.Unlock()
	}()
	o.err = fmt.Errorf("device: opening backend %s: its Open called runtime.Goexit", reg.Name)
	o.b, o.err = callOpen(reg)
}

// callOpen calls a registration's Open. It turns a panic or a nil backend
// into an error, so that waiters are always released.
func callOpen(reg driver.Registration) (b driver.Backend, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, err = nil, fmt.Errorf("device: opening backend %s: its Open panicked: %v", reg.Name, v)
		}
	}()
	b, err = reg.Open()
	switch {
	case err != nil:
		return nil, fmt.Errorf("device: opening backend %s: %w", reg.Name, err)
	case b == nil:
		return nil, fmt.Errorf("device: opening backend %s: its Open returned no backend and no error", reg.Name)
	}
	return b, nil
}

// runtimeTable is which Runtime each name gets from one registry's Open. It
// is the first made for the name, kept until it shuts down. Auto's Runtime
// also becomes the chosen backend's once it has chosen, unless that name has
// one already.
//
// That is the one way a registry ends up with two Runtimes over one backend.
// Open("cuda") before auto's first Init has chosen, or while it chooses,
// gets a Runtime of its own. Open must not wait for a choice that may take
// as long as a driver's init. Auto must stay free to try hip after cuda. If
// auto then chooses cuda, the two share the backend, whose driver is
// initialized once per process. But each keeps its own queue, devices and
// reports. To have one Runtime, Open by name after the choice, or open ""
// everywhere.
type runtimeTable struct {
	mu     sync.Mutex // protects byName
	byName map[string]*Runtime
}

// get returns name's Runtime, or nil.
func (t *runtimeTable) get(name string) *Runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byName[name]
}

// add gives name the Runtime r, unless another Open gave it one meanwhile,
// or r is closed. It returns the Runtime name has now. Shutdown marks r
// closed before forget takes the lock, so a closed Runtime is never added
// back after forget.
func (t *runtimeTable) add(name string, r *Runtime) *Runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	if have := t.byName[name]; have != nil {
		return have
	}
	if r.closed() {
		return r
	}
	if t.byName == nil {
		t.byName = map[string]*Runtime{}
	}
	t.byName[name] = r
	return r
}

// forget removes r from every name it has. The next Open of the name makes a
// fresh Runtime, so a Runtime that was shut down is never handed out again.
func (t *runtimeTable) forget(r *Runtime) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, have := range t.byName {
		if have == r {
			delete(t.byName, name)
		}
	}
}
