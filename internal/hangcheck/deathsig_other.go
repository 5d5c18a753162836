//go:build !linux

package hangcheck

import "os/exec"

// dieWithParent has no portable equivalent outside Linux: a child is killed on
// every way out of Run, but not if the parent itself is killed.
func dieWithParent(*exec.Cmd) {}
