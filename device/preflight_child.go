package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/errkind"
)

// EnvPreflightChild marks a preflight child: it names the backend to check.
// A Runtime sets it in the child's environment; nothing else should.
const EnvPreflightChild = "GPUINIT_PREFLIGHT_CHILD"

// servesPreflight records that this process called ServePreflight, so that
// its own executable, started again, serves the preflight too: only then is
// it the preflight's default child.
var servesPreflight atomic.Bool

// preflightFD is the child's end of its report pipe.
const preflightFD = 3

// reportSchema names the report's layout, which a parent and a child of
// different builds must agree on.
const reportSchema = "gpuinit-preflight/v1"

// ServePreflight makes this process a preflight child if it was started as
// one: it runs the backend's Init and device query, writes what happened to
// the pipe the parent gave it, and exits. Otherwise it returns at once, doing
// nothing. Package device/backends calls it from its init function, so that
// a server that imports it needs no code of its own; a server that registers
// its backends otherwise calls it first thing in main, after its backends'
// packages have registered them.
func ServePreflight() {
	servesPreflight.Store(true)
	name, ok := os.LookupEnv(EnvPreflightChild)
	if !ok {
		return
	}
	pipe := os.NewFile(preflightFD, "gpuinit preflight report")
	if info, err := pipe.Stat(); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		fmt.Fprintf(os.Stderr, "gpuinit: %s=%q is set but file descriptor %d is not the parent's pipe: this process is not a preflight child; unset the variable\n",
			EnvPreflightChild, name, preflightFD)
		os.Exit(2)
	}
	_ = json.NewEncoder(pipe).Encode(checkBackend(DefaultRegistry, name))
	_ = pipe.Close()
	os.Exit(0)
}

// report is what a preflight child found.
type report struct {
	Schema        string         `json:"schema"`
	Backend       string         `json:"backend"`
	DriverVersion int            `json:"driver_version,omitempty"`
	Devices       []string       `json:"devices,omitempty"` // names, by ordinal
	Error         *reportedError `json:"error,omitempty"`
}

// reportedError carries a failure across the pipe, so that the parent
// classifies it as the child saw it.
type reportedError struct {
	Message  string `json:"message"`
	Sentinel string `json:"sentinel,omitempty"` // the kind errkind names
	// A *DriverError's fields, when it was one.
	Driver  bool   `json:"driver,omitempty"`
	Backend string `json:"backend,omitempty"`
	Op      string `json:"op,omitempty"`
	Code    int    `json:"code,omitempty"`
	Name    string `json:"name,omitempty"`
	Hint    string `json:"hint,omitempty"`
	Text    string `json:"text,omitempty"` // DriverError.Message
	Sticky  bool   `json:"sticky,omitempty"`
}

// checkBackend is the child's work: open the backend from g, Init it, and
// read its devices.
func checkBackend(g *Registry, name string) report {
	rep := report{Schema: reportSchema, Backend: name}
	var b driver.Backend
	fail := func(err error) report {
		rep.Error = reportError(err)
		if b != nil && rep.DriverVersion == 0 {
			// What a driver that loaded but failed says of its version, for
			// the parent's account of the failure.
			rep.DriverVersion, _ = b.DriverVersion()
		}
		return rep
	}
	reg, ok := g.lookup(name)
	if !ok || reg.Open == nil {
		return fail(g.notCompiled(name, reg, ok, false))
	}
	opened, err := g.openBackend(reg)
	if err != nil {
		return fail(err)
	}
	b = opened
	if err := b.Init(context.Background()); err != nil {
		return fail(err)
	}
	rep.DriverVersion, _ = b.DriverVersion()
	n, err := b.Count()
	if err != nil {
		return fail(err)
	}
	if n <= 0 {
		return fail(fmt.Errorf("%w: %s: the driver initialized but reports %d devices", ErrNoDevice, name, n))
	}
	for i := range n {
		info, err := b.Device(i)
		if err != nil {
			return fail(err)
		}
		rep.Devices = append(rep.Devices, info.Name)
	}
	return rep
}

func reportError(err error) *reportedError {
	re := &reportedError{Message: err.Error(), Sentinel: errkind.Of(err)}
	var de *DriverError
	if errors.As(err, &de) {
		re.Driver, re.Backend, re.Op, re.Code, re.Name, re.Hint, re.Text, re.Sticky =
			true, de.Backend, de.Op, de.Code, de.Name, de.Hint, de.Message, de.Sticky
	}
	return re
}

// rebuild is the child's error in the parent: a *DriverError again where it
// was one, matching the same sentinel.
func (re *reportedError) rebuild() error {
	sentinel := errkind.Sentinel(re.Sentinel)
	switch {
	case re.Driver:
		return &DriverError{Backend: re.Backend, Op: re.Op, Code: re.Code, Name: re.Name, Message: re.Text,
			Hint: re.Hint, Sentinel: sentinel, Sticky: re.Sticky}
	case sentinel != nil:
		return &reported{msg: re.Message, sentinel: sentinel}
	}
	return errors.New(re.Message)
}

// reported is a child's error that was not a *DriverError: its message, and
// the sentinel it matched.
type reported struct {
	msg      string
	sentinel error
}

func (r *reported) Error() string { return r.msg }
func (r *reported) Unwrap() error { return r.sentinel }

// readReport decodes a child's report, at most max bytes of it.
func readReport(r io.Reader, max int64) (report, error) {
	var rep report
	if err := json.NewDecoder(io.LimitReader(r, max)).Decode(&rep); err != nil {
		return report{}, err
	}
	if rep.Schema != reportSchema {
		return report{}, fmt.Errorf("the report's schema is %q, this build reads %q", rep.Schema, reportSchema)
	}
	return rep, nil
}
