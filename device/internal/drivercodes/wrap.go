package drivercodes

import "strings"

// Unusable is a backend's error for a feature it cannot offer (context) because
// of cause, a driver's or a library's error, which it also wraps with sentinel
// (driver.ErrNotSupported, say). Its message says the backend's prefix once,
// then the context, cause and sentinel:
//
//	cuda: device generators need cuRAND (libcurand.so.10): dlopen failed: ...: not supported by this backend
//
// cause's own message starts with the backend's prefix where it is a
// *driver.DriverError of the backend's: that prefix is not said twice.
// errors.Is and errors.As see cause and sentinel.
func Unusable(backend, context string, cause, sentinel error) error {
	prefix := backend + ": "
	return &unusable{msg: prefix + context + ": " + strings.TrimPrefix(cause.Error(), prefix) + ": " + sentinel.Error(),
		errs: []error{cause, sentinel}}
}

type unusable struct {
	msg  string
	errs []error
}

func (u *unusable) Error() string   { return u.msg }
func (u *unusable) Unwrap() []error { return u.errs }
