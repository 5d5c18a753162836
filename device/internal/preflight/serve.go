package preflight

import (
	"fmt"
	"os"
	"sync/atomic"
)

// served records that this process called Serve, so that its own
// executable, started again, serves the preflight too: only then is it the
// preflight's default child.
var served atomic.Bool

// Served reports whether this process called Serve.
func Served() bool { return served.Load() }

// ArmedLine is what a child writes to its stderr as its check starts: its
// deadline counts from there, not from its process start, which a loaded
// machine can stretch by seconds (hangcheck.Limits.Armed). Run leaves the
// line out of the stderr it reports.
const ArmedLine = "gpuinit: the preflight check starts"

// Arm tells the parent that the child's check starts: its deadline counts
// from now. Serve calls it; a test's child that stands in for a driver
// calls it where its check would start.
func Arm() { fmt.Fprintln(os.Stderr, ArmedLine) }

// Serve makes this process a preflight child if it was started as one: it
// runs check for the backend EnvChild names, writes the report to the
// parent's pipe, and exits. With EnvChild empty it is a pre-started child:
// it first waits for its orders (see Prestart). Otherwise it returns at
// once.
func Serve(check func(backend string) Report) {
	served.Store(true)
	name, ok := os.LookupEnv(EnvChild)
	if !ok {
		return
	}
	pipe := os.NewFile(fd, "gpuinit preflight report")
	if !isPipe(pipe) {
		fmt.Fprintf(os.Stderr, "gpuinit: %s=%q is set but file descriptor %d is not the parent's pipe: this process is not a preflight child; unset the variable\n",
			EnvChild, name, fd)
		os.Exit(2)
	}
	if name == "" { // a pre-started child: its orders name the backend
		orders := os.NewFile(ordersFD, "gpuinit preflight orders")
		if !isPipe(orders) {
			fmt.Fprintf(os.Stderr, "gpuinit: %s is set and empty but file descriptor %d is not the parent's orders pipe: this process is not a preflight child; unset the variable\n",
				EnvChild, ordersFD)
			os.Exit(2)
		}
		name = awaitOrders(orders)
	}
	Arm()
	_ = writeReport(pipe, check(name))
	_ = pipe.Close()
	os.Exit(0)
}

// isPipe reports whether f is a pipe, as the parent's are.
func isPipe(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeNamedPipe != 0
}
