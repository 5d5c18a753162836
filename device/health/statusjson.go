package health

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sync"

	"github.com/gpuinit/gpuinit/device"
)

// The status handler's body is mostly the devices' health. The health
// changes seldom, once per view of the Runtime (device.Stats.Changed() names
// the view), while the status is read often. So each device's health is
// encoded once per view, already indented at the depth it sits at in the
// document. Each request encodes the rest of the Status with a small
// placeholder where each health goes, and splices the cached bytes in. The
// bytes served are those json.Encoder with SetIndent("", "  ") writes for
// the whole Status (statusjson_test.go proves it).

// healthIndent is the prefix of the lines of a device's health in the
// status document: Status (0) > "devices" (1) > a device (2) > its fields
// (3). MarshalIndent leaves the first line, the opening brace, unprefixed.
const healthIndent = "      "

// healthPlaceholder stands in for each device's health while the rest of
// the Status is encoded. Its reason and why are the same non-empty words.
// DeviceHealthOf never makes such a health: it drops a why that repeats the
// reason. And no other type has its fields. So its bytes, which span
// several lines and so cannot lie inside a JSON string, match nothing in
// the document but the placeholders themselves.
var healthPlaceholder = &DeviceHealth{Reason: "gpuinit placeholder", Why: "gpuinit placeholder"}

// placeholderJSON is healthPlaceholder as the status document holds it,
// made at the first status served, not at every start of the process.
var placeholderJSON = sync.OnceValue(func() []byte {
	b, _ := json.MarshalIndent(healthPlaceholder, healthIndent, "  ") // it always encodes
	return b
})

// healthJSON is the health of one view's devices as JSON, indexed by
// ordinal, indented as the status document holds it. A view's health never
// changes, so a healthJSON is never changed once stored, and concurrent
// handlers share it.
type healthJSON struct {
	view      <-chan struct{} // the view's device.Stats.Changed()
	byOrdinal [][]byte
}

// healthJSONOf returns st's devices' health as JSON, encoded once per view.
func (h *Health) healthJSONOf(st device.Stats) *healthJSON {
	if c := h.healthJS.Load(); c != nil && c.view == st.Changed() {
		return c
	}
	c := &healthJSON{view: st.Changed(), byOrdinal: make([][]byte, len(st.Health))}
	for o, dh := range st.Health {
		// A health that does not encode (a NaN rate) stays nil: it is left
		// in the Status, which then fails to encode as it did before.
		c.byOrdinal[o], _ = json.MarshalIndent(DeviceHealthOf(dh), healthIndent, "  ")
	}
	// A handler that read an older view may store it after this one. The
	// next handler then misses and encodes its own view again: the key
	// keeps the bytes right, whichever is stored.
	h.healthJS.Store(c)
	return c
}

// writeStatus writes s to w as the status handler serves it: as indented
// JSON, ending in a newline. st is the stats s was read from (snapshot).
func (h *Health) writeStatus(w io.Writer, s Status, st device.Stats) {
	var spliced [][]byte // the cached health of each placeholder, in order
	if st.Changed() != nil {
		c := h.healthJSONOf(st)
		s.Devices = slices.Clone(s.Devices) // the caller's s keeps its health
		for i := range s.Devices {
			if o := s.Devices[i].Ordinal; s.Devices[i].Health != nil && o >= 0 && o < len(c.byOrdinal) && c.byOrdinal[o] != nil {
				s.Devices[i].Health = healthPlaceholder
				spliced = append(spliced, c.byOrdinal[o])
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if enc.Encode(s) != nil {
		return // nothing written, as json.Encoder writes nothing on failure
	}
	out := buf.Bytes()
	// One pass: the devices are encoded in order, so the i'th placeholder
	// found is the i'th device's health.
	for _, health := range spliced {
		at := bytes.Index(out, placeholderJSON())
		if at < 0 {
			panic("health: a device's health placeholder is missing from the status")
		}
		_, _ = w.Write(out[:at])
		_, _ = w.Write(health)
		out = out[at+len(placeholderJSON()):]
	}
	_, _ = w.Write(out)
}
