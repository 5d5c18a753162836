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
// returns for each name. Its zero value is ready to use, and it is safe for
// concurrent use.
//
// DefaultRegistry is the one the package-level functions use, and the one
// backends register with from their init functions, as http.DefaultServeMux
// and flag.CommandLine are. A test, or a program that brings backends of its
// own, makes another: its Runtimes and choices are its own.
type Registry struct {
	mu       sync.Mutex                     // protects following fields
	backends map[string]driver.Registration // by name, from Register
	opened   map[string]*opening            // backends opened, or being opened

	runtimes runtimeTable // the Runtime each name gets
}

// DefaultRegistry is the process's registry: the backends imported into the
// binary register with it.
var DefaultRegistry = &Registry{}

// Register makes a backend available to DefaultRegistry's Open; see
// Registry.Register.
func Register(reg driver.Registration) { DefaultRegistry.Register(reg) }

// Open returns DefaultRegistry's Runtime for the named backend; see
// Registry.Open.
func Open(name string) (*Runtime, error) { return DefaultRegistry.Open(name) }

// Register makes a backend available to Open under reg.Name. Backends call it
// from an init function (on DefaultRegistry, through the package-level
// Register). A registration with Unavailable set records that the backend
// was imported but this build cannot have it, and why: Open of the name then
// fails with ErrNotCompiled and that reason, and auto lists it among the
// backends it passed over. A later registration with an Open replaces an
// unavailable one.
//
// Register panics if the name is empty or "auto", if reg has neither Open
// nor Unavailable (or both), or if the name already has an Open, as
// database/sql.Register does: these are programming errors, found at
// start-up.
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

// Backends lists the backends Open can open, sorted. Backends registered as
// unavailable are not listed.
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
// backend, unavailable ones too (Open reports why they are not here), sorted.
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

// AutoOrder lists the GPU backends "auto" tries, in order (cuda, then hip
// for the shipped ones), unavailable ones included.
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

// Open returns the registry's Runtime for the named backend, creating it on
// first use; later calls with the name return the same Runtime. It never
// initializes anything and makes no driver call: a named backend's Open (the
// registration's, which only makes the backend value) runs here, so that a
// bad configuration (GPUINIT_SIM_* that do not parse) is an error from Open.
// Open also checks every GPUINIT_* variable that is set, package device's own
// and those the backends it may open read (driver.Registration.Env): a value
// that cannot be used (a deadline that does not parse, a library file or a
// host root that is not there) or a misspelt variable's name is an error
// wrapping ErrBadSetting that names it. The name "" reads GPUINIT_BACKEND,
// and falls back to "auto".
//
// "auto" is resolved at the first Init, not here: the first GPU backend, in
// AutoOrder, whose driver loads and reports a device, with the others'
// reasons in PassedOver. Name reports the choice after Init, and from then on
// Open of the chosen name returns auto's Runtime too, unless that name was
// opened before (see the package documentation for what two Runtimes over one
// backend share).
//
// A backend that is not in this binary gets an error wrapping ErrNotCompiled
// that says why: the import that registers it, or the reason the build could
// not have it. A name that is no backend's gets one wrapping ErrBadSetting,
// with the name meant where the case or an alias was wrong. If the backend's Open fails, nothing is kept and a later Open
// tries again.
func (g *Registry) Open(name string) (*Runtime, error) {
	fromEnv := false
	if name == "" {
		name, fromEnv = strings.TrimSpace(os.Getenv(envBackend)), true
	}
	if name == "" {
		name = "auto"
	}
	if r := g.runtimes.get(name); r != nil {
		return r, nil
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
		return g.runtimes.add(name, newRuntime(g, candidates, true, nil)), nil
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
	return g.runtimes.add(name, newRuntime(g, []driver.Registration{reg}, false, b)), nil
}

// notCompiled is Open's error for a name without an Open: why the build
// lacks it, or the import that would register it.
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
// as an alias ("CUDA", "rocm", "Sim"): a registered or shipped backend's
// name, "auto", or "" when name means none. Open's error for an unknown name
// says the same; a program that checks a flag or a variable before opening
// anything can say it first. It is safe for concurrent use.
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
