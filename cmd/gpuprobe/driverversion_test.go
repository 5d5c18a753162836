//go:build linux && cgo

package main

import (
	"testing"

	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheHostsDriverVersionIsKept: on a host whose libcuda loads (version
// 12040) but shows no device, every report keeps that version where it
// belongs, and none calls sim's 12020 the host's.
func TestTheHostsDriverVersionIsKept(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	skipIfLinked(t)
	bin := buildProbe(t)
	env := append(fakedriver.NoGPUHost(t), "GPUINIT_CUDA_LIBRARY="+fakedriver.BuildInto(t, t.TempDir(), fakedriver.CUDA),
		"GPUINIT_FAKE_CUDA_DEVICES=0")

	t.Run("-require-gpu: no fallback, the reasons passed over with cuda's version", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, env, "-json", "-require-gpu")
		require.Equal(t, exitUnavailable, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Nil(t, rep.Fallback)
		assert.Equal(t, "auto", rep.Backend)
		require.Len(t, rep.PassedOver, 2)
		assert.Equal(t, "cuda", rep.PassedOver[0].Backend)
		assert.Equal(t, 12040, rep.PassedOver[0].DriverVersion)
		assert.Zero(t, rep.DriverVersion, "auto chose no driver")
		text := probeRun(t, bin, env, "-require-gpu")
		assert.Contains(t, text.stdout, "passed over\n  cuda  (driver 12040) ")
		assert.NotContains(t, text.stdout, "fallback")
	})
	t.Run("-backend cuda -require-gpu: the version its preflight child read", func(t *testing.T) {
		t.Parallel()
		rep := decode(t, probeRun(t, bin, env, "-json", "-require-gpu", "-backend", "cuda"))
		assert.Equal(t, exitUnavailable, rep.ExitCode)
		assert.Equal(t, 12040, rep.DriverVersion)
	})
	t.Run("a fallback: cuda's version in its entry, none at the top", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, env, "-json", "-scenario", "queued")
		require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Equal(t, "sim", rep.Backend)
		require.NotNil(t, rep.Fallback)
		require.Len(t, rep.Fallback.Backends, 2)
		assert.Equal(t, 12040, rep.Fallback.Backends[0].DriverVersion)
		assert.Zero(t, rep.DriverVersion, "not sim's 12020")
		text := probeRun(t, bin, env, "-scenario", "queued")
		assert.Contains(t, text.stdout, "  cuda  (driver 12040) ")
		assert.NotContains(t, text.stdout, "driver      12020")
	})
}
