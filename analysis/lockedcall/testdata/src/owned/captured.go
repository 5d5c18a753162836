package owned

import "sync"

// buffer runs its callers' check under its lock; its only callers pass
// closures that range over slices they build by appending, in closures too.
type buffer struct {
	mu sync.Mutex
	n  int
}

func (b *buffer) executeAndPut(f func() bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f() {
		b.n++
	}
}

func forEach(settings []int, f func(int)) {
	for _, s := range settings {
		f(s)
	}
}

// Settings builds its updates in a callback and runs them under b.mu: the
// package's own closures.
func (b *buffer) Settings(settings []int) {
	var updates []func()
	forEach(settings, func(s int) {
		updates = append(updates, func() { b.n += s })
	})
	b.executeAndPut(func() bool {
		for _, u := range updates {
			u()
		}
		return true
	})
}

// Extra appends a caller's function too.
func (b *buffer) Extra(settings []int, extra func()) {
	var updates []func()
	forEach(settings, func(s int) {
		updates = append(updates, extra)
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range updates {
		u() // want `call of u \(a parameter\) while b.mu is held`
	}
}
