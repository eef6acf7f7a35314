// Package app wires the server: it turns a validated config.Server into
// running components (metadata store, IAM, REST API, S3 listener), writes
// <data-dir>/admin.yaml before the first request is served, and shuts
// everything down gracefully when its context ends. It holds no logic of its
// own beyond the order of start-up and shutdown, and the translation of the
// config into the capacity ledger's machine and booking rules
// (machineCapacity).
package app
