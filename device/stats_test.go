package device_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// TestStatsAreTheCallersToKeep: what Stats returns is the caller's. A caller
// that changes every slice, map and pointed-to struct of one Stats changes
// nothing another caller reads.
func TestStatsAreTheCallersToKeep(t *testing.T) {
	rt, s := openSim(t)
	yes, n := true, uint64(3)
	s.InjectHealthEvent(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindCounters,
		Counters: &healthwatch.Counters{ECCEnabled: &yes, ECCCorrected: &n, ThrottleReasons: []string{"power"}}})
	s.InjectHealthEvent(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindFabric, Action: healthwatch.Degrade,
		Message: "limited", Fabric: &healthwatch.FabricState{State: 3, Words: "limited"}})
	s.InjectXid(0, 13) // counted
	require.NoError(t, rt.ReportError(0, errors.New("a timeout of the engine's own")))
	s.InjectXid(1, 79) // lost
	before := waitStats(t, rt, "every kind of state", func(st device.Stats) bool {
		h := st.Health[0]
		return len(st.Lost) == 1 && len(st.ErrorCounts) == 1 && h.Counters != nil && h.Counters.ECCEnabled != nil &&
			h.Fabric != nil && len(h.Conditions) > 0 && len(h.Counted) > 0
	})
	require.NotEmpty(t, before.Devices)
	want := device.CloneStats(before) // owned here, whatever Stats shares

	mine := rt.Stats()
	changed := scribble(reflect.ValueOf(&mine).Elem())
	assert.Greater(t, changed, 20, "the scribble reached the state's leaves")
	assert.NotEqual(t, want, mine, "the scribble changed the caller's copy")
	assert.Equal(t, want, rt.Stats(), "another caller reads what it read before")
}

// TestStatsCopyEveryField: clone leaves nothing shared, however many fields
// the types it copies grow. Every field of a Stats is set, and every slice,
// map and pointer made. The copy equals it, and changing every leaf of the
// copy leaves it as it was. Errors are shared, as errors are.
func TestStatsCopyEveryField(t *testing.T) {
	var full, want device.Stats
	scribble(reflect.ValueOf(&full).Elem())
	scribble(reflect.ValueOf(&want).Elem())
	require.Equal(t, want, full, "the scribble is repeatable")
	require.NotNil(t, full.Health[0].Counters.PCIeReplays, "it reached the counters")

	copied := device.CloneStats(full)
	require.Equal(t, full, copied, "the copy has every field")
	scribble(reflect.ValueOf(&copied).Elem())
	assert.Equal(t, want, full, "changing the copy changed the original")
}

var errorType = reflect.TypeFor[error]()

// scribble changes every exported leaf under v that is not an error: it makes
// nil pointers, slices and maps hold one value, and moves every number,
// string and bool. It returns how many leaves it changed. Applied to a zero
// value it fills it, the same way each time.
func scribble(v reflect.Value) int {
	t := v.Type()
	if t.Kind() != reflect.Interface && t.Implements(errorType) || !v.CanSet() {
		return 0 // errors are shared values; unexported fields are not the caller's
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return scribble(v.Elem())
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(t, 1, 1))
		}
		n := 0
		for i := range v.Len() {
			n += scribble(v.Index(i))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		if v.Len() == 0 {
			v.SetMapIndex(reflect.Zero(t.Key()), reflect.Zero(t.Elem()))
		}
		n := 0
		for _, k := range v.MapKeys() {
			e := reflect.New(t.Elem()).Elem()
			e.Set(v.MapIndex(k))
			n += scribble(e)
			v.SetMapIndex(k, e)
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += scribble(v.Field(i))
		}
		return n
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	default: // interfaces, channels, funcs: none in Stats but errors and Changed's
		return 0
	}
	return 1
}
