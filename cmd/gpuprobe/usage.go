package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
)

// checkBackend says what is wrong with the backend cfg asks for, or "" when
// nothing is: a name that is not a backend, said as the user gave it (the
// flag, or GPUINIT_BACKEND when the flag was not given) with the name meant
// where the case or an alias was wrong; -require-gpu with sim, which can
// never satisfy it; or GPUINIT_SIM_* values sim cannot use where sim may run
// (-backend sim, or auto without -require-gpu). All are usage errors: found
// before anything is probed, they exit 2, never 3 (no GPU).
func checkBackend(fs *flag.FlagSet, cfg config, known []string) string {
	given := fmt.Sprintf("-backend %q", cfg.backend)
	if !isSet(fs, "backend") && strings.TrimSpace(os.Getenv("GPUINIT_BACKEND")) != "" {
		given = fmt.Sprintf("%s=%q (the default of -backend)", "GPUINIT_BACKEND", cfg.backend)
	}
	if !slices.Contains(known, cfg.backend) {
		want := "want " + strings.Join(known, ", ")
		if meant := suggestBackend(cfg.backend, known); meant != "" {
			return fmt.Sprintf("unknown %s: did you mean %q? (%s)", given, meant, want)
		}
		return fmt.Sprintf("unknown %s: %s", given, want)
	}
	if cfg.requireGPU && cfg.backend == "sim" {
		return fmt.Sprintf("-require-gpu asks for a GPU, but %s is the simulated one: use -backend auto, cuda or hip, or drop -require-gpu", given)
	}
	if cfg.backend == "sim" || (cfg.backend == "auto" && !cfg.requireGPU) {
		if _, err := sim.OptionsFromEnv(); err != nil {
			return err.Error()
		}
	}
	// Open checks every GPUINIT_* variable the backends read, and touches no
	// driver: a bad value is a usage error, never "no GPU".
	if _, err := device.Open(cfg.backend); errors.Is(err, device.ErrBadSetting) {
		return err.Error()
	}
	return ""
}

// isSet reports whether the command line gave flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// suggestBackend is the known backend name meant by name, given in another
// case or as an alias (the library's suggestion, among the names this
// binary knows), or "".
func suggestBackend(name string, known []string) string {
	if meant := device.DefaultRegistry.Suggest(name); slices.Contains(known, meant) {
		return meant
	}
	return ""
}
