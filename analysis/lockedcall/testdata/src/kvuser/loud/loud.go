// want package:"calls setters example.com/kv.Config.KeyToHash}$"

// Package loud imports a package of its module that fills KeyToHash with its
// caller's code: a cache's hash may be anyone's, and the call under the lock
// is reported.
package loud

import (
	"sync"

	"example.com/kv"
	_ "kvuser/filler"
)

var mu sync.Mutex

// Shared is given its cache, whose hash may be anyone's.
func Shared(c *kv.Cache, key string) int { // want Shared:"locks mu: Shared → mu.Lock" Shared:"calls param 0 field keyToHash \\(Get → c.keyToHash\\) unless set by example.com/kv.Config.KeyToHash$"
	mu.Lock()
	defer mu.Unlock()
	return c.Get(key) // want `call of c.Get \(it calls c.keyToHash, a field: Get → c.keyToHash\) while mu is held`
}
