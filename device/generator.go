package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// NewGenerator initializes on first use and creates device ordinal's Philox
// generator. It goes through the backend's [driver.GeneratorBackend]; rng's
// Generators use it. A backend without generators gets an error wrapping
// [ErrNotSupported].
//
// Every call on the generator runs under the call deadline, as Do's
// function does. Past it, the device is lost as hung. On a lost device the
// calls are refused with its [LostDevice], Close included. Close then leaves
// the generator to the process's end rather than call a driver that may not
// return. Like the backend's, the generator is not safe for concurrent use.
// A nil ctx panics, naming NewGenerator.
func (r *Runtime) NewGenerator(ctx context.Context, ordinal int) (driver.Generator, error) {
	nilContext(ctx, "NewGenerator")
	if err := r.Init(ctx); err != nil {
		return nil, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return nil, err
	}
	gb, ok := driver.Capability[driver.GeneratorBackend](r.Backend())
	if !ok {
		return nil, fmt.Errorf("%w: backend %s has no device generators", ErrNotSupported, r.Name())
	}
	var g driver.Generator
	err := r.watched(ordinal, &opNewGen, func() (err error) {
		g, err = gb.NewGenerator(ordinal)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &watchedGenerator{r: r, ordinal: ordinal, g: g}, nil
}

// watchedGenerator is a backend's generator whose calls the Runtime watches.
type watchedGenerator struct {
	r       *Runtime
	ordinal int
	g       driver.Generator
}

func (w *watchedGenerator) SetSeed(seed uint64) error {
	return w.r.watched(w.ordinal, &opSetSeed, func() error { return w.g.SetSeed(seed) })
}

func (w *watchedGenerator) SetOffset(offset uint64) error {
	return w.r.watched(w.ordinal, &opSetOffset, func() error { return w.g.SetOffset(offset) })
}

func (w *watchedGenerator) Generate(dst []uint32) error {
	return w.r.watched(w.ordinal, &opGenerate, func() error { return w.g.Generate(dst) })
}

func (w *watchedGenerator) Close() error {
	return w.r.watched(w.ordinal, &opCloseGen, w.g.Close)
}
