package drivercodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHIPNotFoundHintFitsROCMPath(t *testing.T) {
	assert.Contains(t, HIPNotFoundHint(""), "or set ROCM_PATH")
	h := HIPNotFoundHint("/opt/rocm-6.2.0")
	assert.Contains(t, h, "ROCM_PATH=/opt/rocm-6.2.0 has no lib/libamdhip64.so*")
	assert.NotContains(t, h, "or set ROCM_PATH")
}
