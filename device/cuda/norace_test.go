//go:build !race && linux && cgo && !nocuda

package cuda

const raceEnabled = false
