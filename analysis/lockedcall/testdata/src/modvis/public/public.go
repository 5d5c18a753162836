// Package public exports a hook that anyone can set.
package public

var Hook = func() {}
