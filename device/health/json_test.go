package health_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorOfReportsAutosLeadWhole: the kind, call, code and hint of auto's
// combined error are all its lead's, the backend that got furthest.
func TestErrorOfReportsAutosLeadWhole(t *testing.T) {
	noLibrary := &device.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcuda.so.1: not found",
		Hint: "install the NVIDIA driver", Sentinel: device.ErrDriverNotFound}
	noDevice := &device.DriverError{Backend: "hip", Op: "hipInit", Code: 100, Name: "hipErrorNoDevice",
		Hint: "check /dev/kfd", Sentinel: device.ErrNoDevice}
	mismatch := &device.DriverError{Backend: "hip", Op: "dlsym hipMalloc", Hint: "that file is not libamdhip64",
		Sentinel: device.ErrDriverMismatch}
	hung := &device.PreflightError{Backend: "hip", Hung: true}
	for _, tc := range []struct {
		name           string
		cuda, hip      error
		kind, op, hint string
	}{
		{"ROCm only: hip's driver answered", noLibrary, noDevice, "no-device", "hipInit", "check /dev/kfd"},
		{"a mismatched library beats a missing one", noLibrary, mismatch, "driver-mismatch", "dlsym hipMalloc", "that file is not libamdhip64"},
		{"neither library: the first tried", noLibrary, &device.DriverError{Backend: "hip", Op: "dlopen", Sentinel: device.ErrDriverNotFound},
			"no-driver", "dlopen", "install the NVIDIA driver"},
		{"a preflight child that hung leads a missing library", noLibrary, hung, "hang", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &device.NoBackendError{Tried: []device.BackendFailure{{Backend: "cuda", Err: tc.cuda}, {Backend: "hip", Err: tc.hip}}}
			e := health.ErrorOf(err)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.op, e.Op)
			assert.Equal(t, tc.hint, e.Hint, "never the other vendor's advice")
		})
	}
}

// TestDeviceHealthOfCopiesTheWatchsFields: the watch's own fields reach
// the JSON as they are. TestTheJSONCarriesEveryFieldOfDevicesTypes covers
// every field.
func TestDeviceHealthOfCopiesTheWatchsFields(t *testing.T) {
	h := device.DeviceHealth{Watched: true, Why: "why", Counted: map[string]int64{"xid 13": 1}, WatchError: "e",
		WatchErrors: 2, Hint: "hint", UnwatchedCalls: 3}
	assert.Equal(t, &health.DeviceHealth{Watched: true, Why: "why", Counted: map[string]int64{"xid 13": 1}, WatchError: "e",
		WatchErrors: 2, Hint: "hint", UnwatchedCalls: 3}, health.DeviceHealthOf(h))
}

// TestTheJSONCarriesEveryFieldOfDevicesTypes: DeviceOf, DeviceHealthOf and
// BringUpOf mirror device's types in the status's JSON layout. With every
// field of the Go type set, each to a value of its own, taking away any one
// of them changes the JSON key of its counterpart: the mirror's field of the
// same name, or the one renames gives, and no other key. A field added to device.Info,
// device.DeviceHealth or device.BringUp fails it until the mirror carries
// the field, or the test says why not. So does a mirror that swaps two.
func TestTheJSONCarriesEveryFieldOfDevicesTypes(t *testing.T) {
	t.Run("Info", func(t *testing.T) {
		carriesEveryField(t, func(d device.Info) any { return health.DeviceOf(d) },
			map[string]string{"ComputeMajor": "compute_capability", "ComputeMinor": "compute_capability"}, nil)
	})
	t.Run("DeviceHealth", func(t *testing.T) {
		carriesEveryField(t, func(h device.DeviceHealth) any { return health.DeviceHealthOf(h) },
			map[string]string{"ReplaysPerMinute": "pcie_replays_per_minute"}, map[string]string{
				"Ordinal": "the status nests the health in its device, which has the ordinal",
			})
	})
	t.Run("BringUp", func(t *testing.T) {
		carriesEveryField(t, func(b device.BringUp) any { return health.BringUpOf(b) },
			map[string]string{"LastErr": "last_error", "Next": "next_attempt"}, map[string]string{
				"Summary": "the one line a probe answers with; the JSON has each of its parts",
			})
	})
}

// carriesEveryField fails for each exported field of T whose value of's JSON
// does not carry under its counterpart's key, but those notCarried names
// with the reason.
func carriesEveryField[T any](t *testing.T, of func(T) any, renames, notCarried map[string]string) {
	t.Helper()
	var full T
	fill(reflect.ValueOf(&full).Elem(), new(int))
	whole := keysOf(t, of(full))
	mirror := reflect.TypeOf(of(full))
	if mirror.Kind() == reflect.Pointer {
		mirror = mirror.Elem()
	}
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		less := full
		reflect.ValueOf(&less).Elem().Field(i).SetZero()
		changed := changedKeys(whole, keysOf(t, of(less)))
		if why, skip := notCarried[f.Name]; skip {
			assert.Empty(t, changed, "%s.%s is left out of the JSON (%s)", typ, f.Name, why)
			continue
		}
		key, renamed := renames[f.Name]
		if !renamed {
			m, ok := mirror.FieldByName(f.Name)
			if !assert.True(t, ok, "%s has no counterpart of %s.%s", mirror, typ, f.Name) {
				continue
			}
			key, _, _ = strings.Cut(m.Tag.Get("json"), ",")
		}
		want := []string{key}
		if f.Name == "LastErr" { // BringUpOf gives the class only with the error
			want = append(want, "last_class")
		}
		assert.ElementsMatch(t, want, changed, "%s.%s is carried as %q, and only there", typ, f.Name, key)
	}
}

// keysOf is v's JSON object, key by key.
func keysOf(t *testing.T, v any) map[string]string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &raw))
	keys := map[string]string{}
	for k, v := range raw {
		keys[k] = string(v)
	}
	return keys
}

// changedKeys lists the keys whose values differ between a and b, or that
// one of them lacks.
func changedKeys(a, b map[string]string) []string {
	var changed []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			changed = append(changed, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			changed = append(changed, k)
		}
	}
	return changed
}

var (
	timeType  = reflect.TypeFor[time.Time]()
	errorType = reflect.TypeFor[error]()
)

// fill gives every exported leaf under v a value that is not zero, and
// every string, number and time one of its own, counted by *n, so that no
// two fields agree. Errors get one error. Enumerations (named integers)
// get 1, their first value past the zero one.
func fill(v reflect.Value, n *int) {
	t := v.Type()
	*n++
	switch {
	case !v.CanSet():
		return
	case t == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 5, 10, *n, 0, 0, time.UTC)))
		return
	case t == errorType:
		v.Set(reflect.ValueOf(errors.New("the driver failed")))
		return
	}
	enum := t.PkgPath() != ""
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		fill(v.Index(0), n)
	case reflect.Map:
		k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s %d", t.Name(), *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
		if enum {
			v.SetInt(1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	}
}
