// Package watch keeps the watches a Runtime holds over its devices: the
// deadline on calls into a driver, and the backend's health watch.
//
// A CallWatch holds calls into a device's driver to a deadline. Each call
// takes a slot while it runs: two atomic operations and no clock read on its
// path. A monitor goroutine, which runs only while some call is in flight,
// looks at the slots every interval. It reports each call that has held its
// slot past the deadline, once, through the function NewCallWatch was given.
//
// A HealthWatch runs a backend's health watch (driver.HealthWatcher) and
// keeps what it knows of each device: whether it is watched, the events
// counted against it, its counters, and the devices lost for the rest of the
// process. A device is lost by the watch or by whoever else saw it (the
// engine, a call past its deadline, the canary).
//
// The package is package device's, which loses the device. It never calls
// into the Runtime or anything else: it calls the functions it is given after
// each change, with no lock held. CallWatch.Close waits for its monitor.
// HealthWatch.Stop waits for the backend's watch until its ctx ends, then
// abandons one stuck in the driver and drops what it reports later.
package watch
