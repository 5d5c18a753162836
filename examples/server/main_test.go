//go:build linux

package main

import (
	"bytes"
	"errors"
	"os/exec"
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
			cmd := exec.Command(childtest.Binary(t), tc.args...)
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
