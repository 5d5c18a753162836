//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheCommandLine: -h is an answer (exit 0, the flags on stdout); a bad
// flag is an error (exit 1, on stderr).
func TestTheCommandLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		args           []string
		exit           int
		stdout, stderr string // what each holds; "" where it must be empty
	}{
		{"-h: the flags, on stdout", []string{"-h"}, 0, "-shutdown-grace duration", ""},
		{"-h: the preflight's retries wait 1 s first, as device.Preflight's do", []string{"-h"}, 0, "up to 30s (default 1s)", ""},
		{"a bad flag: the error and the flags, on stderr", []string{"-adr=:0"}, 1, "", "flag provided but not defined: -adr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(childtest.Program(t), tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			exit := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				exit = exitErr.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.exit, exit, "stderr: %s", &stderr)
			for _, out := range []struct{ got, want string }{{stdout.String(), tc.stdout}, {stderr.String(), tc.stderr}} {
				if out.want == "" {
					assert.Empty(t, out.got)
				} else {
					assert.Contains(t, out.got, out.want)
				}
			}
		})
	}
}

// initLine is a line of GODEBUG=inittrace=1's report on a package of the
// module: "init github.com/gpuinit/gpuinit/device @9.6 ms, 0.058 ms clock,
// 1408 bytes, 11 allocs".
var initLine = regexp.MustCompile(`(?m)^init (github\.com/gpuinit/gpuinit/\S+) @.* (\d+) bytes, (\d+) allocs$`)

// testOnly are the module's packages whose init this test binary runs and
// the server's build does not: those only its tests import, and this
// package itself, which the build names main (and which the trace does not
// count there) and which here holds the tests' own variables too.
var testOnly = map[string]bool{
	"github.com/gpuinit/gpuinit/device/devicetest":   true,
	"github.com/gpuinit/gpuinit/examples/server":     true,
	"github.com/gpuinit/gpuinit/internal/childtest":  true,
	"github.com/gpuinit/gpuinit/internal/docnames":   true,
	"github.com/gpuinit/gpuinit/internal/fakedriver": true,
}

// TestStartingAProcessCostsGpuinitLittle: every process that links gpuinit,
// each preflight child among them, runs its packages' initialization first.
// None compiles a pattern or encodes JSON there (the host's and the
// preflight's patterns, the status' placeholder took 20 to 31 KiB each, and
// about 1.1 ms of a start): each package allocates at most 16 KiB, all
// together at most 32 KiB. The Go runtime counts the bytes exactly. The
// program is this test binary (childtest.Program): the module's packages
// that only the tests import are left out of the count.
func TestStartingAProcessCostsGpuinitLittle(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(childtest.Program(t), "-h")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	lines := initLine.FindAllStringSubmatch(stderr.String(), -1)
	require.GreaterOrEqual(t, len(lines), 5, "inittrace reported the module's packages:\n%s", &stderr)
	total := 0
	for _, l := range lines {
		if testOnly[l[1]] {
			continue
		}
		n, err := strconv.Atoi(l[2])
		require.NoError(t, err)
		total += n
		assert.LessOrEqual(t, n, 16<<10, "%s allocates %s bytes in %s allocations as the process starts", l[1], l[2], l[3])
	}
	assert.LessOrEqual(t, total, 32<<10, "the module's packages allocate %d bytes as the process starts", total)
}
