// Package api declares an interface that the module's internal packages
// implement and that anyone can call.
package api

type Notifier interface {
	Notify(cb func())
}
