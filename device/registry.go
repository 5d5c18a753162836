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
			return nil, fmt.Errorf("%w: no GPU backend is registered in this binary; forgotten import? import _ %q",
				ErrNotCompiled, backendsPackage)
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
		return fmt.Errorf("%w: backend %s is not in this binary: %s", ErrNotCompiled, name, reg.Unavailable)
	case shippedPackages[name] != "":
		return fmt.Errorf("%w: backend %s is not registered (forgotten import?): import _ %q for every backend, or _ %q for this one",
			ErrNotCompiled, given, backendsPackage, shippedPackages[name])
	}
	if want := g.Suggest(name); want != "" {
		return fmt.Errorf("%w: unknown backend %s: did you mean %q? (backend names are %s, in lower case)",
			ErrBadSetting, given, want, strings.Join(g.Known(), ", "))
	}
	return fmt.Errorf("%w: unknown backend %s: the backends are %s", ErrBadSetting, given, strings.Join(g.Known(), ", "))
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
