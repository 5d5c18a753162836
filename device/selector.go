package device

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// selector is the backend of the process's GPU runtime: one or more candidate
// GPU backends, of which the first Init picks the first whose driver loads
// and reports a device.
type selector struct {
	mu         sync.Mutex // protects following fields
	candidates []string   // in AutoOrder; narrowed by pin until started
	started    bool       // choose has begun; candidates are fixed
	chosen     Backend    // set once choose succeeds
	chosenName string     // chosen's name, read under mu without calling it
	passedOver []BackendFailure
}

// pin narrows the candidates to name and reports true, if choosing has not
// begun and name is a candidate, or if name was the choice; else it reports
// false and changes nothing.
func (s *selector) pin(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return s.chosenName == name
	}
	if !slices.Contains(s.candidates, name) {
		return false
	}
	s.candidates = []string{name}
	return true
}

// choose tries each candidate in order: open it, Init it, count its devices.
// The first with at least one device is the choice. With one candidate its
// own error is returned; with several, a *NoBackendError lists each one's.
func (s *selector) choose(ctx context.Context) (Backend, int, error) {
	s.mu.Lock()
	s.started = true
	candidates := s.candidates
	s.mu.Unlock()
	var failures []BackendFailure
	for _, name := range candidates {
		b, n, err := tryBackend(ctx, name)
		if err == nil {
			s.mu.Lock()
			s.chosen, s.chosenName = b, name
			s.mu.Unlock()
			return b, n, nil
		}
		failures = append(failures, BackendFailure{Backend: name, Err: err})
		s.mu.Lock()
		s.passedOver = slices.Clone(failures)
		s.mu.Unlock()
	}
	if len(failures) == 1 {
		return nil, 0, failures[0].Err
	}
	return nil, 0, &NoBackendError{Tried: failures}
}

func tryBackend(ctx context.Context, name string) (Backend, int, error) {
	b, err := openBackend(name)
	if err != nil {
		return nil, 0, err
	}
	if err := b.Init(ctx); err != nil {
		return nil, 0, err
	}
	if err := checkDriverFloor(ctx, b); err != nil {
		return nil, 0, err
	}
	n, err := b.Count()
	if err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%w: %s: the driver initialized but reports 0 devices", ErrNoDevice, name)
	}
	return b, n, nil
}

// Name is the choice's name, the only candidate's, or "auto".
func (s *selector) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.chosen != nil:
		return s.chosenName
	case len(s.candidates) == 1:
		return s.candidates[0]
	}
	return "auto"
}

// Init chooses; Runtime calls choose itself, to learn the device count too.
func (s *selector) Init(ctx context.Context) error {
	_, _, err := s.choose(ctx)
	return err
}

// DriverVersion asks the choice, or the only candidate (whose opener makes no
// driver call); before a choice among several there is no one driver to ask.
func (s *selector) DriverVersion() (int, error) {
	b, err := s.single()
	if err != nil {
		return 0, err
	}
	return b.DriverVersion()
}

// RuntimeVersion is DriverVersion's twin for RuntimeVersioner.
func (s *selector) RuntimeVersion() (int, error) {
	b, err := s.single()
	if err != nil {
		return 0, err
	}
	rv, ok := Capability[RuntimeVersioner](b)
	if !ok {
		return 0, fmt.Errorf("%w: backend %s reports no runtime version", ErrNotSupported, b.Name())
	}
	return rv.RuntimeVersion()
}

func (s *selector) single() (Backend, error) {
	s.mu.Lock()
	chosen, candidates := s.chosen, s.candidates
	s.mu.Unlock()
	switch {
	case chosen != nil:
		return chosen, nil
	case len(candidates) == 1:
		return openBackend(candidates[0])
	}
	return nil, fmt.Errorf("%w: auto has not chosen among %v yet", ErrNotInitialized, candidates)
}

func (s *selector) Count() (int, error) {
	b, err := s.chosenBackend()
	if err != nil {
		return 0, err
	}
	return b.Count()
}

func (s *selector) Device(ordinal int) (Info, error) {
	b, err := s.chosenBackend()
	if err != nil {
		return Info{}, err
	}
	return b.Device(ordinal)
}

func (s *selector) chosenBackend() (Backend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chosen == nil {
		return nil, fmt.Errorf("%w: no backend chosen yet", ErrNotInitialized)
	}
	return s.chosen, nil
}

// passed returns the candidates choose tried and passed over, in order.
func (s *selector) passed() []BackendFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.passedOver)
}
