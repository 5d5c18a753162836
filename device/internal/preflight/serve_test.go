package preflight

import (
	"os"
	"testing"
)

// envSaid is a variable a child of these tests reports, as it sees it.
const envSaid = "PREFLIGHT_TEST_SAID"

// TestMain makes this test binary, started as a preflight child, serve the
// preflight: its check reports its folder and envSaid as its devices.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(EnvChild); ok {
		Serve(func(backend string) Report {
			rep := NewReport(backend)
			wd, _ := os.Getwd()
			rep.Devices = []string{wd, os.Getenv(envSaid)}
			return rep
		})
	}
	os.Exit(m.Run())
}
