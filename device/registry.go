package device

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// EnvBackend names the backend Open("") picks; unset or empty means "auto".
const EnvBackend = "GPUINIT_BACKEND"

// shipped is the one list of the backends this module ships: their names, the
// package that registers each, and, for GPU backends, auto's order.
var shipped = []struct {
	name, pkg string
	gpu       bool
}{
	{"cuda", "github.com/gpuinit/gpuinit/device/cuda", true},
	{"hip", "github.com/gpuinit/gpuinit/device/hip", true},
	{"sim", "github.com/gpuinit/gpuinit/device/sim", false},
}

// backendsPkg registers every shipped backend the build can have.
const backendsPkg = "github.com/gpuinit/gpuinit/device/backends"

// AutoOrder returns the GPU backends "auto" tries, in order: cuda, then hip.
func AutoOrder() []string {
	var names []string
	for _, s := range shipped {
		if s.gpu {
			names = append(names, s.name)
		}
	}
	return names
}

// Known returns every backend name Open accepts in some build: "auto", the
// shipped backends and any other registered in this binary, sorted after
// "auto".
func Known() []string {
	names := Backends()
	for _, s := range shipped {
		if !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
	}
	slices.Sort(names)
	return append([]string{"auto"}, names...)
}

func isGPU(name string) bool { return slices.Contains(AutoOrder(), name) }

// Register makes a backend available to Open under name. Backends call it from
// an init function. open is called at most once per process with success (at
// Open, or for GPU backends at the first Init, or at the first DriverVersion
// or RuntimeVersion of a Runtime opened by name), never with a lock held; it must
// not call Open for its own name. Register panics if name is empty or "auto",
// if open is nil, or if name is already registered, as database/sql.Register
// does: these are programming errors, found at start-up.
func Register(name string, open func() (Backend, error)) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	switch {
	case name == "" || name == "auto":
		panic(fmt.Sprintf("device: Register: %q is not a backend name", name))
	case open == nil:
		panic("device: Register: nil opener for backend " + name)
	case registry.openers[name] != nil:
		panic("device: Register: backend " + name + " registered twice")
	}
	if registry.openers == nil {
		registry.openers = map[string]func() (Backend, error){}
	}
	registry.openers[name] = open
	delete(registry.unavailable, name)
}

// RegisterUnavailable records that backend name was imported but this build
// cannot have it, and why (for example "built without cgo"). Open(name) then
// fails with ErrNotCompiled and that reason, and "auto" reports it among the
// backends it passed over. A later Register of the name wins.
func RegisterUnavailable(name, why string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.openers[name] != nil {
		return
	}
	if registry.unavailable == nil {
		registry.unavailable = map[string]string{}
	}
	registry.unavailable[name] = why
}

// Backends lists the registered backend names, sorted. Backends marked
// unavailable are not listed.
func Backends() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var names []string
	for n := range registry.openers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Open returns the process's Runtime for the named backend, creating it on
// first use. It never initializes anything and makes no driver call. The name ""
// reads GPUINIT_BACKEND, and falls back to "auto".
//
// "auto" is resolved at the first Init, not here: the first GPU backend whose
// driver loads and reports a device, in AutoOrder; Name reports the choice
// after Init. The process has one GPU runtime: Open(""), Open("auto") and
// Open("cuda") made before its first Init return the same Runtime, so its
// driver is initialized once, with one queue; naming a GPU backend pins the
// choice to it. After the choice, Open of the chosen backend returns the GPU
// runtime, and Open of another gets a Runtime of its own. One window remains:
// a GPU backend named while the first Init is choosing gets a Runtime of its
// own even if it becomes the choice. The cuda and hip backends then still
// initialize their driver once (their Init is memoized per process), but the
// two Runtimes keep separate queues; open the runtime before the first Init,
// or after it, to have one.
//
// A backend that is not in this binary gets an error wrapping ErrNotCompiled
// that says why: the import that registers it, or the reason the build could
// not have it. If the backend's opener fails (a bad configuration), nothing is
// cached and a later Open tries again.
func Open(name string) (*Runtime, error) {
	if name == "" {
		name = strings.TrimSpace(os.Getenv(EnvBackend))
	}
	if name == "" {
		name = "auto"
	}
	if name == "auto" || isGPU(name) {
		return openGPU(name)
	}
	if err := checkAvailable(name); err != nil {
		return nil, err
	}
	if r := cachedRuntime(name); r != nil {
		return r, nil
	}
	b, err := openBackend(name)
	if err != nil {
		return nil, err
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if r := registry.runtimes[name]; r != nil { // another Open made it meanwhile
		return r, nil
	}
	r := New(b)
	if registry.runtimes == nil {
		registry.runtimes = map[string]*Runtime{}
	}
	registry.runtimes[name] = r
	return r, nil
}

// openGPU is Open for "auto" and the GPU backends.
func openGPU(name string) (*Runtime, error) {
	if name != "auto" {
		if err := checkAvailable(name); err != nil {
			return nil, err
		}
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if r := registry.runtimes[name]; r != nil {
		return r, nil
	}
	if registry.runtimes == nil {
		registry.runtimes = map[string]*Runtime{}
	}
	gpu := registry.gpu
	if name == "auto" {
		if gpu == nil {
			var candidates []string
			for _, n := range AutoOrder() {
				if registry.openers[n] != nil || registry.unavailable[n] != "" {
					candidates = append(candidates, n)
				}
			}
			if len(candidates) == 0 {
				return nil, fmt.Errorf("%w: no GPU backend is registered in this binary (auto tries %s); forgotten import? import _ %q",
					ErrNotCompiled, strings.Join(AutoOrder(), ", then "), backendsPkg)
			}
			gpu = newGPURuntime(candidates)
			registry.gpu = gpu
		}
		registry.runtimes[name] = gpu
		return gpu, nil
	}
	if gpu != nil && gpu.selector.pin(name) {
		registry.runtimes[name] = gpu
		return gpu, nil
	}
	r := newGPURuntime([]string{name})
	registry.runtimes[name] = r
	if gpu == nil {
		registry.gpu = r
	}
	return r, nil
}

// chose records that the GPU runtime r resolved to backend name, so that a
// later Open(name) returns r, unless name already has a Runtime of its own.
func chose(r *Runtime, name string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.runtimes[name] == nil {
		registry.runtimes[name] = r
	}
}

func cachedRuntime(name string) *Runtime {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.runtimes[name]
}

// checkAvailable returns nil if name is registered, else the ErrNotCompiled
// error that says why it is not.
func checkAvailable(name string) error {
	registry.mu.Lock()
	registered, why := registry.openers[name] != nil, registry.unavailable[name]
	registry.mu.Unlock()
	switch {
	case registered:
		return nil
	case why != "":
		return fmt.Errorf("%w: backend %s is not in this binary: %s", ErrNotCompiled, name, why)
	}
	for _, s := range shipped {
		if s.name == name {
			return fmt.Errorf("%w: backend %q is not registered (forgotten import?): import _ %q for every backend, or _ %q for this one",
				ErrNotCompiled, name, backendsPkg, s.pkg)
		}
	}
	return fmt.Errorf("%w: unknown backend %q: not registered in this binary (forgotten import?); known: %s",
		ErrNotCompiled, name, strings.Join(Known(), ", "))
}
