package childtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Children lists the live child processes of pid, from /proc: the tests'
// way to prove that no child is left behind. Zombies are left out, since
// they have exited; Zombies lists those.
func Children(pid int) []int { return children(pid, false) }

// Zombies lists the children of pid that have exited and were never waited
// for: a process that reaps its children has none for long.
func Zombies(pid int) []int { return children(pid, true) }

func children(pid int, zombies bool) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so parse after ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && (fields[0] == "Z") == zombies {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			kids = append(kids, child)
		}
	}
	return kids
}

// Alive reports whether process pid exists and has not exited (a zombie
// has).
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(string(rest)), "Z")
}
