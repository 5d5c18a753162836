package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUsage proves that the usage asked for (-h, -help) is printed on
// stdout with exit status 0, and that a bad flag's error and the usage go
// to stderr with exit status 1, before anything runs.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout bool // the usage is on stdout, stderr empty
		wantError  string
	}{
		{"-h asks for the usage", []string{"-h"}, exitClean, true, ""},
		{"-help asks for the usage", []string{"-help"}, exitClean, true, ""},
		{"a bad flag is an error with the usage", []string{"-bogus", "./..."}, exitFailed, false, "flag provided but not defined: -bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := standalone(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, &stdout, &stderr)
			}
			out, other := &stdout, &stderr
			if !tc.wantStdout {
				out, other = &stderr, &stdout
			}
			for _, want := range []string{"usage: lockedcall", "-interfaces", "-json", "-tags", tc.wantError} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("missing %q in\n%s", want, out)
				}
			}
			if other.Len() != 0 {
				t.Errorf("the other stream is not empty:\n%s", other)
			}
			if i, j := strings.Index(out.String(), tc.wantError), strings.Index(out.String(), "usage:"); tc.wantError != "" && i > j {
				t.Errorf("the error comes after the usage:\n%s", out)
			}
		})
	}
}
