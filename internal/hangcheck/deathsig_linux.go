package hangcheck

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the child when the thread that
// started it exits, which Run arranges to be when the parent dies.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
