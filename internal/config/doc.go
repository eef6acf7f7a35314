// Package config holds Atelier's typed configuration: the server's (YAML file
// plus command-line flags, validated before anything starts) and the
// client's (the file `atelier configure` writes, with environment overrides).
//
// Decoding is strict: an unknown key is an error that names the key, so a
// typo never silently falls back to a default. Default() gives every key its
// documented default; Validate() reports the first problem with the key's
// name and a hint.
//
// The machine is detected once (LocalMachine, DetectGPUs) and may be
// declared otherwise with the `capacity` key: ApplyDefaults stores the
// result as Server.Machine, from which the default flavors and the
// capacity ledger derive (the one machine-detection hook). `requests` (what
// a service instance or a notebook books of its flavor) and `overcommit`
// (how far bookings may exceed the machine) are the booking rules
// internal/capacity applies.
package config
