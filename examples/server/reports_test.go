package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFailedInitIsNotCountedUnderAClientsOrdinal: on a host whose init
// failed, and on one of two devices, draws on ordinals a client chose (-5,
// 7, 123456789, and 0 where init failed) are not counted as errors of those
// devices: the status has no error counts, so that clients cannot grow the
// map, and a host that initialized stays ready.
func TestAFailedInitIsNotCountedUnderAClientsOrdinal(t *testing.T) {
	for _, f := range []sim.Failure{sim.NoFailure, sim.Unknown, sim.DriverMismatch, sim.NoDevice} {
		t.Run(map[bool]string{true: "init succeeds", false: string(f)}[f == sim.NoFailure], func(t *testing.T) {
			rt := device.New(sim.New(sim.WithFailure(f)))
			srv, err := newServer(rt, 42, quietLogger())
			require.NoError(t, err)
			defer shutDown(srv)
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			get := func(path string) (int, []byte) {
				resp, err := http.Get(ts.URL + path)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				return resp.StatusCode, b
			}
			ordinals := []string{"-5", "7", "123456789", "0"}
			if f == sim.NoFailure {
				ordinals = ordinals[:3]
			}
			for _, ordinal := range ordinals {
				for range 3 {
					code, body := get("/v1/draw?n=4&device=" + ordinal)
					assert.NotContains(t, string(body), `"source":"device"`, "device=%s drew on a GPU (%d)", ordinal, code)
				}
			}
			if f == sim.NoFailure {
				require.NoError(t, rt.Init(t.Context()))
				ready, _ := get(health.ReadyPath)
				assert.Equal(t, http.StatusOK, ready, "the draws turned readiness off")
			} else {
				require.Error(t, rt.Init(t.Context()), "the init failed")
			}
			assert.Empty(t, rt.Stats().ErrorCounts)
			assert.Empty(t, rt.Stats().Lost)
			code, body := get(health.StatusPath)
			require.Equal(t, http.StatusOK, code)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(body, &raw), string(body))
			assert.NotContains(t, raw, "errors_reported", "the status counts errors: %s", body)
			assert.NotContains(t, raw, "lost")
			var st health.Status
			require.NoError(t, json.Unmarshal(body, &st))
			assert.Empty(t, st.ErrorsReported)
			assert.Empty(t, st.Lost)
		})
	}
}
