package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAChildsErrorIsRebuiltWithItsSentinel: what crosses the pipe comes
// back as the error it was: a *driver.DriverError with its fields, or a
// message matching the same sentinel.
func TestAChildsErrorIsRebuiltWithItsSentinel(t *testing.T) {
	for _, err := range []error{
		&driver.DriverError{Backend: "cuda", Op: "cuInit", Code: 802, Name: "CUDA_ERROR_SYSTEM_NOT_READY", Hint: "start it", Sentinel: driver.ErrNotReady},
		fmt.Errorf("%w: sim: none", driver.ErrNoDevice),
		errors.New("plain"),
	} {
		rep := NewReport("cuda")
		rep.Error = ErrorOf(err)
		var buf bytes.Buffer
		require.NoError(t, json.NewEncoder(&buf).Encode(rep))
		got, rerr := readReport(&buf, maxReport)
		require.NoError(t, rerr)
		back := got.Error.Rebuild()
		assert.Equal(t, err.Error(), back.Error())
		for _, s := range []error{driver.ErrNotReady, driver.ErrNoDevice} {
			assert.Equal(t, errors.Is(err, s), errors.Is(back, s), "%v and %v", err, s)
		}
		var de *driver.DriverError
		assert.Equal(t, errors.As(err, &de), errors.As(back, &de))
	}
}

func TestAReportOfAnotherSchemaIsRefused(t *testing.T) {
	_, err := readReport(bytes.NewBufferString(`{"schema":"gpuinit-preflight/v0"}`), maxReport)
	assert.ErrorContains(t, err, `this build reads "gpuinit-preflight/v1"`)
}
