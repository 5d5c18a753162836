package device

// CallMonitorScanning reports whether r's call monitor scans (some call it
// has not yet reported hung may be in flight) rather than sleeps, for tests
// of the monitor's CPU use.
func CallMonitorScanning(r *Runtime) bool {
	w := r.calls.Load()
	return w != nil && w.Scanning()
}
