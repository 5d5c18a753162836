package device_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
)

// TestEachMessageHasOnePrefix: the errors a server logs say one package's
// prefix, at the outermost wrap only ("lazy:" and "device:" inside a
// backend's message once made them read "lazy: initialization failed:
// device: no usable GPU backend (auto tried cuda: preflight child 1: ...").
func TestEachMessageHasOnePrefix(t *testing.T) {
	var g device.Registry
	registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDriver))
	registerGPU(&g, "hip", 20, sim.WithFailure(sim.NoDevice))
	g.Register(simRegistration(newSim))
	ctx := context.Background()
	fresh := openIn(t, &g, "sim")
	_, unknown := g.Open("bogus")
	msgs := map[string]error{
		"ReportError before init":   fresh.ReportError(3, errors.New("cuLaunchKernel failed")),
		"an unknown backend":        unknown,
		"auto with no usable GPU":   openIn(t, &g, "auto").Init(ctx),
		"a named backend's failure": openIn(t, &g, "hip").Init(ctx),
	}
	for what, err := range msgs {
		if !assert.Error(t, err, what) {
			continue
		}
		msg := err.Error()
		for _, prefix := range []string{"lazy: ", "device: ", "rng: "} {
			assert.LessOrEqual(t, strings.Count(msg, prefix), 1, "%s: %q", what, msg)
		}
		assert.Less(t, len(msg), 300, "%s: a message a person reads once: %q", what, msg)
	}
	assert.ErrorIs(t, msgs["ReportError before init"], device.ErrInvalidDevice)
	assert.ErrorIs(t, msgs["ReportError before init"], driver.ErrNotInitialized)
	var nb *device.NoBackendError
	if assert.ErrorAs(t, msgs["auto with no usable GPU"], &nb) {
		assert.Len(t, nb.Tried, 2, "each backend's reason is structured, not concatenated")
		assert.Contains(t, msgs["auto with no usable GPU"].Error(), "auto tried cuda too")
	}
}
