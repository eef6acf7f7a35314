//go:build !race

package format

// raceEnabled: the race detector slows everything down.
const raceEnabled = false
