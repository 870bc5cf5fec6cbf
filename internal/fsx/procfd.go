package fsx

import (
	"os"
	"strconv"
)

// EachOpenFD calls visit with the pid and the /proc path of every file
// descriptor a process this user can see holds open (Linux: each is a link
// to its file or socket), until visit returns false. Processes that exit
// meanwhile, or belong to another user, are skipped; without /proc nothing
// is visited.
func EachOpenFD(visit func(pid int, fdPath string) bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if !visit(pid, dir+fd.Name()) {
				return
			}
		}
	}
}
