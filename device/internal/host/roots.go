package host

import (
	"os"
	"path/filepath"
	"strings"
)

// The variables that move each tree.
const (
	EnvSysfsRoot = "GPUINIT_SYSFS_ROOT"
	EnvDevRoot   = "GPUINIT_DEV_ROOT"
	EnvProcRoot  = "GPUINIT_PROC_ROOT"
)

// Sys returns the sysfs root: GPUINIT_SYSFS_ROOT, else /sys.
func Sys() string { return root(EnvSysfsRoot, "/sys") }

// Dev returns the device-node root: GPUINIT_DEV_ROOT, else /dev.
func Dev() string { return root(EnvDevRoot, "/dev") }

// Proc returns the procfs root: GPUINIT_PROC_ROOT, else /proc.
func Proc() string { return root(EnvProcRoot, "/proc") }

func root(env, def string) string {
	if r := strings.TrimSpace(os.Getenv(env)); r != "" {
		return filepath.Clean(r)
	}
	return def
}
