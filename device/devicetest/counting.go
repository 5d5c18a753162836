package devicetest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Counting wraps a Backend and counts every call made into it, so that a test
// can prove what touched the driver and how often. It implements
// driver.GeneratorBackend whatever it wraps: over a backend without
// generators, NewGenerator returns an error wrapping driver.ErrNotSupported.
// Its Unwrap lets a Runtime reach the wrapped backend's other optional
// interfaces (MemoryInfo, Do, error classification), which it does not
// count. It is safe for concurrent use.
type Counting struct {
	driver.Backend
	initCalls, versionCalls, countCalls, deviceCalls, generatorCalls atomic.Int64
}

// Calls is how many times each method of a Counting was called.
type Calls struct {
	Init, DriverVersion, Count, Device, NewGenerator int64
}

// Total is the sum of all calls.
func (c Calls) Total() int64 {
	return c.Init + c.DriverVersion + c.Count + c.Device + c.NewGenerator
}

// Calls reports the calls made so far.
func (c *Counting) Calls() Calls {
	return Calls{Init: c.initCalls.Load(), DriverVersion: c.versionCalls.Load(), Count: c.countCalls.Load(),
		Device: c.deviceCalls.Load(), NewGenerator: c.generatorCalls.Load()}
}

// Unwrap returns the wrapped Backend.
func (c *Counting) Unwrap() driver.Backend { return c.Backend }

// Init counts, then calls the wrapped Init.
func (c *Counting) Init(ctx context.Context) error {
	c.initCalls.Add(1)
	return c.Backend.Init(ctx)
}

// DriverVersion counts, then calls the wrapped DriverVersion.
func (c *Counting) DriverVersion() (int, error) {
	c.versionCalls.Add(1)
	return c.Backend.DriverVersion()
}

// Count counts, then calls the wrapped Count.
func (c *Counting) Count() (int, error) {
	c.countCalls.Add(1)
	return c.Backend.Count()
}

// Device counts, then calls the wrapped Device.
func (c *Counting) Device(ordinal int) (driver.Info, error) {
	c.deviceCalls.Add(1)
	return c.Backend.Device(ordinal)
}

// NewGenerator counts, then calls the wrapped NewGenerator if there is one.
func (c *Counting) NewGenerator(ordinal int) (driver.Generator, error) {
	c.generatorCalls.Add(1)
	gb, ok := driver.Capability[driver.GeneratorBackend](c.Backend)
	if !ok {
		return nil, fmt.Errorf("devicetest: backend %s has no device generators: %w", c.Name(), driver.ErrNotSupported)
	}
	return gb.NewGenerator(ordinal)
}
