//go:build linux && cgo && !nohip

package hip

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutFollowsTheLibrarysVersion(t *testing.T) {
	for _, c := range []struct {
		version smiRelease
		want    smiLayout
	}{
		{smiRelease{Major: 1}, layoutLegacy}, // Debian 12's 5.2.3, built from a tarball
		{smiRelease{Major: 5, Minor: 9}, layoutLegacy},
		{smiRelease{Major: 7, Minor: 1}, layoutLegacy}, // ROCm 6.1.1
		{smiRelease{Major: 7, Minor: 2}, layoutRingHang},
		{smiRelease{Major: 7, Minor: 4, Patch: 9}, layoutRingHang}, // ROCm 6.3
		{smiRelease{Major: 7, Minor: 5}, layoutKernel},
		{smiRelease{Major: 7, Minor: 8}, layoutKernel},
		{smiRelease{Major: 8}, layoutKernel},
	} {
		assert.Equal(t, c.want, layoutFor(c.version), "version %s", c.version)
	}
	assert.Equal(t, uint64(0xf), layoutLegacy.mask(), "events 1 to 4")
	assert.Equal(t, uint64(0x1f), layoutRingHang.mask(), "and ring hang 5")
	assert.Equal(t, uint64(0xf), layoutKernel.mask(), "5 is the kernel's migrate-start: not asked for")
}

// entries lays out events as a library of l writes them.
func entries(l smiLayout, events ...smiEvent) []byte {
	raw := make([]byte, len(events)*l.entrySize())
	for i, e := range events {
		b := raw[i*l.entrySize():]
		binary.NativeEndian.PutUint32(b[0:], e.index)
		binary.NativeEndian.PutUint32(b[4:], e.event)
		copy(b[8:8+l.msgSize], e.message) // no NUL where the message fills the field
	}
	return raw
}

func TestDecodeReadsEachLayoutBounded(t *testing.T) {
	for _, l := range []smiLayout{layoutLegacy, layoutRingHang, layoutKernel} {
		t.Run(l.name, func(t *testing.T) {
			full := strings.Repeat("x", l.msgSize)
			in := []smiEvent{{0, 1, "pid 42 address 0x1000"}, {1, 3, full}, {1, 4, ""}}
			raw := entries(l, in...)
			got := l.decode(raw, 3)
			assert.Equal(t, in, got, "a message that fills its field is read to the field's end, not into the next entry")
			assert.Len(t, l.decode(raw, 9), 3, "never past the buffer, whatever the count says")
			assert.Len(t, l.decode(raw[:len(raw)-1], 3), 2, "a partial entry is not read")
		})
	}
	t.Run("each layout's own entry size", func(t *testing.T) {
		assert.Equal(t, 72, layoutLegacy.entrySize())
		assert.Equal(t, 104, layoutKernel.entrySize())
		assert.Equal(t, maxEntrySize, layoutKernel.entrySize())
	})
}

func TestEventsMapToTheirVerdicts(t *testing.T) {
	type want struct {
		kind   healthwatch.Kind
		action healthwatch.Action
	}
	for _, c := range []struct {
		layout smiLayout
		event  uint32
		want   *want // nil: not an event the watch asked for
	}{
		{layoutLegacy, smiVMFault, &want{healthwatch.KindVMFault, healthwatch.Count}},
		{layoutLegacy, smiThermal, &want{healthwatch.KindThermal, healthwatch.Count}},
		{layoutLegacy, smiPreReset, &want{healthwatch.KindReset, healthwatch.Lose}},
		{layoutLegacy, smiPostReset, &want{healthwatch.KindReset, healthwatch.Recover}},
		{layoutLegacy, 5, nil},
		{layoutRingHang, smiRingHang, &want{healthwatch.KindRingHang, healthwatch.Lose}},
		{layoutRingHang, smiPreReset, &want{healthwatch.KindReset, healthwatch.Lose}},
		{layoutKernel, 5, nil}, // migrate-start
		{layoutKernel, smiPostReset, &want{healthwatch.KindReset, healthwatch.Recover}},
		{layoutKernel, 0, nil},
	} {
		ev, ok := c.layout.healthEvent(1, smiEvent{index: 0, event: c.event, message: "said"})
		if c.want == nil {
			assert.False(t, ok, "event %d under %s", c.event, c.layout.name)
			continue
		}
		require.True(t, ok, "event %d under %s", c.event, c.layout.name)
		assert.Equal(t, c.want.kind, ev.Kind)
		assert.Equal(t, c.want.action, ev.Action)
		assert.Equal(t, 1, ev.Ordinal)
		assert.Equal(t, int(c.event), ev.Code)
		assert.Contains(t, ev.Message, "(ROCm SMI: said)")
		if ev.Kind == healthwatch.KindReset && ev.Action == healthwatch.Lose {
			assert.Contains(t, ev.Message, "reset is in progress")
		}
	}
}

// FuzzDecode checks decode and healthEvent on any bytes a library writes,
// under each layout: no entry past the buffer or the count, no message past
// its field, each message text fit for a status, a log line and a
// Kubernetes condition (valid UTF-8, no control character, trimmed), the
// entries laid out again decoding the same, and each event a verdict that
// says the message.
func FuzzDecode(f *testing.F) {
	f.Add(entries(layoutLegacy, smiEvent{0, 1, "pid 42 address 0x1000"}, smiEvent{1, 3, ""}), 2, uint8(0))
	f.Add(entries(layoutKernel, smiEvent{2, 4, "reset seq 3"}, smiEvent{0, 5, strings.Repeat("x", 96)}), 2, uint8(2))
	f.Add(entries(layoutRingHang, smiEvent{1, 5, "ring gfx_0.0.0 timeout\n"}), 1, uint8(1))
	f.Add([]byte{1, 2, 3}, 9, uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, n int, which uint8) {
		l := []smiLayout{layoutLegacy, layoutRingHang, layoutKernel}[which%3]
		got := l.decode(raw, n)
		if len(got) > max(n, 0) || len(got) > len(raw)/l.entrySize() {
			t.Fatalf("%d entries from %d bytes, count %d", len(got), len(raw), n)
		}
		for _, e := range got {
			if len(e.message) > l.msgSize || e.message != strings.TrimSpace(e.message) || !utf8.ValidString(e.message) ||
				strings.IndexFunc(e.message, unicode.IsControl) >= 0 {
				t.Fatalf("message %q", e.message)
			}
			ev, ok := l.healthEvent(3, e)
			if !ok {
				continue
			}
			if ev.Code != int(e.event) || ev.Ordinal != 3 || ev.Name == "" || e.message != "" && !strings.Contains(ev.Message, e.message) {
				t.Fatalf("%+v reads as %+v", e, ev)
			}
		}
		if again := l.decode(entries(l, got...), len(got)); !reflect.DeepEqual(again, got) {
			t.Fatalf("laid out again, %v decodes as %v", got, again)
		}
	})
}
