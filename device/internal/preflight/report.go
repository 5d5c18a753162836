// Package preflight runs a preflight child and speaks its protocol: the
// parent starts the child with EnvChild naming the backend and a pipe of its
// own on file descriptor 3, and reads one JSON report there; the child (this
// same binary, in Serve) checks the backend and writes the report. A child
// that gives no answer (it hung past its deadline, crashed, panicked, or
// exited without a report) becomes a *NoAnswer, which names how it died from
// the Go runtime's own report on its stderr. A child started ahead
// (Prestart) has EnvChild empty and reads its orders, the backend among
// them, on descriptor 4 before it checks. It knows nothing of package
// device's Runtime: device hands Serve the check to run.
package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
)

// EnvChild marks a preflight child: it names the backend to check, or is
// empty for a child started ahead, which waits for its orders (Prestart).
// The parent sets it in the child's environment; nothing else should.
const EnvChild = "GPUINIT_PREFLIGHT_CHILD"

// fd is the child's end of its report pipe.
const fd = 3

// schema names the report's layout, which a parent and a child of different
// builds must agree on.
const schema = "gpuinit-preflight/v1"

// Report is what a child found.
type Report struct {
	Schema        string         `json:"schema"`
	Backend       string         `json:"backend"`
	DriverVersion int            `json:"driver_version,omitempty"`
	Devices       []string       `json:"devices,omitempty"` // names, by ordinal
	Error         *ReportedError `json:"error,omitempty"`
}

// NewReport is a report of backend, ready to fill.
func NewReport(backend string) Report { return Report{Schema: schema, Backend: backend} }

// ReportedError carries a failure across the pipe, so that the parent
// classifies it as the child saw it.
type ReportedError struct {
	Message string `json:"message"`
	Kind    string `json:"sentinel,omitempty"` // the sentinel it wraps, as drivercodes.KindOf names it
	// A *driver.DriverError's fields, when it was one.
	Driver  bool   `json:"driver,omitempty"`
	Backend string `json:"backend,omitempty"`
	Op      string `json:"op,omitempty"`
	Code    int    `json:"code,omitempty"`
	Name    string `json:"name,omitempty"`
	Hint    string `json:"hint,omitempty"`
	Text    string `json:"text,omitempty"` // DriverError.Message
	Detail  string `json:"detail,omitempty"`
	Sticky  bool   `json:"sticky,omitempty"`
}

// ErrorOf is err, for the pipe.
func ErrorOf(err error) *ReportedError {
	re := &ReportedError{Message: err.Error(), Kind: drivercodes.KindOf(err)}
	var de *driver.DriverError
	if errors.As(err, &de) {
		re.Driver, re.Backend, re.Op, re.Code, re.Name, re.Hint, re.Text, re.Detail, re.Sticky =
			true, de.Backend, de.Op, de.Code, de.Name, de.Hint, de.Message, de.Detail, de.Sticky
	}
	return re
}

// Rebuild is the child's error in the parent: a *driver.DriverError again
// where it was one, matching the same sentinel.
func (re *ReportedError) Rebuild() error {
	sentinel := drivercodes.KindSentinel(re.Kind)
	switch {
	case re.Driver:
		return &driver.DriverError{Backend: re.Backend, Op: re.Op, Code: re.Code, Name: re.Name, Message: re.Text,
			Detail: re.Detail, Hint: re.Hint, Sentinel: sentinel, Sticky: re.Sticky}
	case sentinel != nil:
		return &reported{msg: re.Message, sentinel: sentinel}
	}
	return errors.New(re.Message)
}

// reported is a child's error that was not a *driver.DriverError: its
// message, and the sentinel it matched.
type reported struct {
	msg      string
	sentinel error
}

func (r *reported) Error() string { return r.msg }
func (r *reported) Unwrap() error { return r.sentinel }

// writeReport writes rep as a child does, for readReport. JSON carries only
// valid UTF-8: a string that is not (a device's name from a C buffer, say)
// arrives with U+FFFD for each invalid byte.
func writeReport(w io.Writer, rep Report) error { return json.NewEncoder(w).Encode(rep) }

// readReport decodes a child's report, at most max bytes of it.
func readReport(r io.Reader, max int64) (Report, error) {
	var rep Report
	if err := json.NewDecoder(io.LimitReader(r, max)).Decode(&rep); err != nil {
		return Report{}, err
	}
	if rep.Schema != schema {
		return Report{}, fmt.Errorf("the report's schema is %q, this build reads %q", rep.Schema, schema)
	}
	if len(rep.Devices) == 0 {
		rep.Devices = nil // "devices":[] and none are one report: the writer leaves an empty list out
	}
	return rep, nil
}
