package health_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusServesTheBytesTheEncoderWrites: the handler's body, with each
// device's health spliced in from the cache, is byte for byte what
// json.Encoder with SetIndent("", "  ") writes for the same snapshot. It
// holds with no signals, with every signal, and with a lost device, read in
// turn from one Health, so each new view's health replaces the last.
func TestStatusServesTheBytesTheEncoderWrites(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T)
		says   string // what the body must hold, that the last view's did not
	}{
		{"no signals", func(*testing.T) {}, `"verdict": "healthy"`},
		{"every signal", func(t *testing.T) {
			injectEverySignal(s)
			require.Eventually(t, func() bool {
				for _, d := range h.Snapshot().Devices {
					if d.Health == nil || d.Health.Fabric == nil || d.Health.Recovery != "drain" || len(d.Health.Counted) < 2 {
						return false
					}
				}
				return true
			}, 10*time.Second, time.Millisecond)
		}, `"description": "limited capacity"`},
		{"a lost device", func(t *testing.T) {
			s.LoseDevice(1, 719)
			err := rt.Do(context.Background(), 1, func() error { return nil })
			require.ErrorIs(t, rt.ReportError(1, err), device.ErrDeviceLost)
		}, `"lost": [`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			for range 2 { // the first read of a view fills the cache, the second uses it
				st, body := h.SnapshotAndBody()
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetIndent("", "  ")
				require.NoError(t, enc.Encode(st))
				require.Equal(t, want.String(), string(body))
				assert.Contains(t, string(body), tc.says)
				for _, d := range st.Devices {
					require.NotNil(t, d.Health, "every device's health is spliced in")
				}
			}
		})
	}
}

// TestStatusBeforeInitIsTheEncodersBytes: a status with no devices, before
// Init, has nothing to splice and is served as the encoder writes it.
func TestStatusBeforeInitIsTheEncodersBytes(t *testing.T) {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	h := health.New(rt, quiet)
	defer h.Close()
	st, body := h.SnapshotAndBody() // before Init: no devices
	want, err := json.MarshalIndent(st, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", string(body))
}

// TestStatusIsWholeWhileTheHealthChanges: handlers serving at once, while
// each device's health moves on view by view, each serve a valid status with
// every device's health and no placeholder left in it.
func TestStatusIsWholeWhileTheHealthChanges(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	handler := h.Status()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
				var st health.Status
				if !assert.NoError(t, json.Unmarshal(rec.Body.Bytes(), &st), rec.Body.String()) {
					return
				}
				assert.NotContains(t, rec.Body.String(), "gpuinit placeholder")
				for _, d := range st.Devices {
					assert.NotNil(t, d.Health)
				}
			}
		})
	}
	injectEverySignal(s) // a view per event, while the handlers serve
	wg.Wait()
}
