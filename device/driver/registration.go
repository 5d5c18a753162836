package driver

// Registration is what a backend tells package device about itself when it
// registers (device.Register): how to open it, and everything device and rng
// would otherwise decide by the backend's name.
type Registration struct {
	// Name is what device.Open takes: "cuda", "hip", "sim". It must not be
	// empty or "auto".
	Name string
	// Open returns the backend. A registry calls it at most once with
	// success (at Open of the name, or when auto first tries the backend),
	// never with a lock held, and retries it after a failure. It must not
	// load or initialize the driver: that is Init's work. Nil when
	// Unavailable is set.
	Open func() (Backend, error)
	// Unavailable says why this build cannot have the backend, such as
	// "this binary was built without cgo". Open must then be nil: device.Open
	// of the name fails with that reason, and auto lists it among the
	// backends it passed over.
	Unavailable string
	// GPU marks a GPU platform, which auto tries in AutoRank order. sim is
	// not one.
	GPU bool
	// AutoRank orders auto's candidates, lowest first, then by Name.
	AutoRank int
	// Ordering is how the backend's device generators lay out Philox's
	// stream, so that a CPU can draw the same values (rng.Generators.GenerateOnHost).
	Ordering Ordering
	// Visibility is which variables choose the backend's devices, and how
	// they are read, for device.Runtime.DeviceMap.
	Visibility Visibility
	// Present reports whether the host shows the vendor's GPU without
	// loading or calling anything (device nodes, a loaded kernel module),
	// with the evidence, for a message. It tells "not yet" from "no GPU
	// here" when the driver finds no device: the device nodes of a GPU the
	// driver will find soon exist already. Nil means unknown, taken as no.
	Present func() (present bool, evidence string)
	// Env lists the GPUINIT_* variables the backend reads, each with its
	// meaning, its default and a check of its value. device.Open checks
	// every one of them that is set, so that a bad value is an error of Open
	// naming the variable, never a failure found later or a silent default.
	// A GPUINIT_* variable that no registered backend lists, nor package
	// device itself reads, is an error of Open too.
	Env []EnvVar
	// Classify turns a raw code that a server's engine got from its own
	// driver call op into a *DriverError: its name, hint, sentinel and
	// whether it is sticky. It works before the driver is loaded (from the
	// backend's code table), and is safe from many goroutines. Nil leaves
	// such codes unclassified.
	Classify func(op string, code int) *DriverError
}

// Ordering is how a backend's device generators lay out Philox4x32-10's
// stream for a seed and an offset.
type Ordering int

const (
	// OrderingCURAND is cuRAND's default ordering: 65536 interleaved
	// subsequences, four values from each in turn (rng/philox.FillCURAND).
	// It is the zero value.
	OrderingCURAND Ordering = iota
	// OrderingSequential is rocRAND's: one sequential stream
	// (rng/philox.FillSequential).
	OrderingSequential
)

// String is "curand" or "sequential".
func (o Ordering) String() string {
	if o == OrderingSequential {
		return "sequential"
	}
	return "curand"
}

// Visibility is the family of variables that choose a backend's devices.
type Visibility int

const (
	// VisibilityNone: no variable chooses the devices. It is the zero
	// value.
	VisibilityNone Visibility = iota
	// VisibilityCUDA: CUDA_VISIBLE_DEVICES, numbered under
	// CUDA_DEVICE_ORDER, as the CUDA driver reads them.
	VisibilityCUDA
	// VisibilityROCm: ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (or
	// CUDA_VISIBLE_DEVICES) over what ROCr left, as ROCm reads them.
	VisibilityROCm
)

// EnvVar is a GPUINIT_* environment variable that gpuinit reads: one row of
// the table that device.Registry.Settings lists and README.md prints.
type EnvVar struct {
	Name string
	// Doc says what the variable sets, in a sentence for a user: what it
	// takes and what it does.
	Doc string
	// Default is what the variable means when it is unset or blank.
	Default string
	// Check returns an error wrapping ErrBadSetting, naming the variable,
	// for a value the backend cannot use; nil accepts any value. It is
	// called only where the variable is set and not blank, and must not
	// load a library or call a driver.
	Check func(value string) error
}
