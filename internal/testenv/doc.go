// Package testenv tells tests about the machine they run on. In CI
// (CI=true) every dependency .ci/run installs is there, so a test that
// lacks one fails instead of skipping: a skip would let a missing
// dependency pass as a tested feature.
package testenv
