package kubetest

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills cmd when the test binary dies before Stop.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
