// Package cli implements the atelier command line: a tree of cobra commands
// built afresh by every Run (no global command variables), talking to the
// server through package client.
//
// Contract (ARCHITECTURE.md §5): every command that shows a resource takes
// -o table|json|yaml (JSON and YAML print the API object; list commands
// print the API list object {"total","count","items"}); the exit code is 0
// on success, 1 on failure and 2 on a usage error (unknown command or flag,
// wrong number of arguments, bad flag value); an error is one line on stderr,
// "atelier: <message> (<code>); hint: <hint>", and a usage error adds the
// line "Run 'atelier <cmd> --help' for usage.".
//
// The client config is found as config.ClientConfigPath says
// ($ATELIER_CONFIG or ~/.atelier/config.yaml) and overridden by the
// ATELIER_* environment variables.
//
// `job wait` and `service wait` follow the capacity ledger between polls
// (queueWatch: GET /api/v1/capacity?watch=VERSION, a long poll) and print
// each change of the workload's waiting reason and queue position on
// stderr; a workload that can never fit ends the wait with exit 1.
//
// Main is what cmd/atelier calls; Run is its testable core, taking the
// arguments, standard streams and environment as parameters.
package cli
