// Package config holds Atelier's typed configuration: the server's (YAML file
// plus command-line flags, validated before anything starts) and the
// client's (the file `atelier configure` writes, with environment overrides).
//
// Decoding is strict: an unknown key is an error that names the key, so a
// typo never silently falls back to a default. Default() gives every key its
// documented default; Validate() reports the first problem with the key's
// name and a hint.
package config
