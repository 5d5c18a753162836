// want package:"calls setters example.com/kv.Config.KeyToHash}$"

// Package filler lets its caller's hash into the dependency's config.
package filler

import "example.com/kv"

// Config returns a config with the caller's hash.
func Config(hash func(string) uint64) *kv.Config {
	return &kv.Config{KeyToHash: hash}
}
