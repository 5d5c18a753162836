package healthwatch_test

import (
	"encoding/json"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAVerdictIsItsNameInJSONAndNothingElseDecodes(t *testing.T) {
	for _, v := range []healthwatch.Verdict{healthwatch.VerdictUnknown, healthwatch.VerdictHealthy, healthwatch.VerdictDegraded, healthwatch.VerdictUnhealthy} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, `"`+v.String()+`"`, string(b))
		var back healthwatch.Verdict
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, v, back)
	}
	var zero healthwatch.Verdict
	assert.Equal(t, "unknown", zero.String(), "the zero value is never healthy")
	var v healthwatch.Verdict
	assert.ErrorContains(t, json.Unmarshal([]byte(`"fine"`), &v), `"fine" is not a verdict`)
}
