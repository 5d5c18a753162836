package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/legacy"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
)

// legacyRuntime is a device runtime over the pre-fix discipline: callbacks run
// under one plain mutex, as torch.cuda's _lazy_call did before PR #182948. It
// exists so that -discipline legacy reproduces the hang with the very same rng
// calls the fixed scenarios make.
type legacyRuntime struct {
	reg     driver.Registration
	backend driver.Backend
	init    *legacy.Initializer
	devices atomic.Int64 // -1 until the driver's init succeeded
}

var _ rng.Runtime = (*legacyRuntime)(nil)

func newLegacyRuntime(reg driver.Registration, b driver.Backend) *legacyRuntime {
	l := &legacyRuntime{reg: reg, backend: b}
	l.devices.Store(-1)
	l.init = legacy.New(func(ctx context.Context) error {
		if err := b.Init(ctx); err != nil {
			return err
		}
		n, err := b.Count()
		if err != nil {
			return err
		}
		l.devices.Store(int64(n))
		return nil
	})
	return l
}

func (l *legacyRuntime) Name() string                      { return l.backend.Name() }
func (l *legacyRuntime) Backend() driver.Backend           { return l.backend }
func (l *legacyRuntime) Registration() driver.Registration { return l.reg }
func (l *legacyRuntime) Init(ctx context.Context) error    { return l.init.Init(ctx) }

func (l *legacyRuntime) LazyCallDepth(ctx context.Context, _ int, fn lazy.Func) error {
	return l.init.Call(ctx, fn)
}

func (l *legacyRuntime) DeviceCount(ctx context.Context) (int, error) {
	if err := l.init.Init(ctx); err != nil {
		return 0, err
	}
	return int(l.devices.Load()), nil
}

// CheckDevice is CheckOrdinal: the legacy runtime keeps no losses.
func (l *legacyRuntime) CheckDevice(ordinal int) error { return l.CheckOrdinal(ordinal) }

// NewGenerator creates the backend's generator directly, unwatched, as the
// pre-fix code did.
func (l *legacyRuntime) NewGenerator(ctx context.Context, ordinal int) (driver.Generator, error) {
	if err := l.Init(ctx); err != nil {
		return nil, err
	}
	gb, ok := driver.Capability[driver.GeneratorBackend](l.backend)
	if !ok {
		return nil, fmt.Errorf("device: backend %s has no device generators: %w", l.Name(), device.ErrNotSupported)
	}
	return gb.NewGenerator(ordinal)
}

func (l *legacyRuntime) CheckOrdinal(ordinal int) error {
	if n := l.devices.Load(); ordinal < 0 || ordinal >= int(n) {
		return fmt.Errorf("device: ordinal %d of %d devices: %w", ordinal, n, device.ErrInvalidDevice)
	}
	return nil
}
