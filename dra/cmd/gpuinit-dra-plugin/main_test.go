package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTheCommandLine: -h is an answer (exit 0, the usage on stdout); a
// mistake is an error (exit 2, on stderr); flags that are right go on.
func TestTheCommandLine(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	for _, tc := range []struct {
		name           string
		args           []string
		exit           int
		done           bool
		stdout, stderr string // what each holds; "" where it must be empty
	}{
		{"-h: the usage, on stdout", []string{"-h"}, 0, true, "-node-name string", ""},
		{"-help too", []string{"-node-name=n", "-help"}, 0, true, "-health-timeout duration", ""},
		{"a bad flag: the error and the usage, on stderr", []string{"-nod-name=n"}, 2, true, "", "flag provided but not defined: -nod-name"},
		{"no node name", nil, 2, true, "", "-node-name is empty and NODE_NAME is unset"},
		{"an argument that is no flag", []string{"-node-name=n", "extra"}, 2, true, "", `unexpected arguments ["extra"]`},
		{"right: it goes on", []string{"-node-name=n"}, 0, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cfg, exit, done := parseFlags(tc.args, &stdout, &stderr)
			assert.Equal(t, tc.exit, exit)
			assert.Equal(t, tc.done, done)
			for _, out := range []struct {
				got  string
				want string
			}{{stdout.String(), tc.stdout}, {stderr.String(), tc.stderr}} {
				if out.want == "" {
					assert.Empty(t, out.got)
				} else {
					assert.Contains(t, out.got, out.want)
				}
			}
			if !done {
				assert.Equal(t, "n", cfg.nodeName)
				assert.Equal(t, "/var/lib/kubelet/plugins/gpu.gpuinit.io", cfg.pluginDir)
			}
		})
	}
}
