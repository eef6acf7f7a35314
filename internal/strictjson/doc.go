// Package strictjson decodes a JSON document into a Go type strictly, and
// says exactly what is wrong: every key the type has no field for (with
// its path, the fields that mapping has and the one it probably means), a
// value of the wrong type (its field, what it must be and what it is),
// malformed JSON, data after the document, an empty document. It reads the
// document's tree and the type's fields — never the text of
// encoding/json's errors. The server config, the REST API and the job
// specs of the CLI decode through it, each turning an *Error into its own
// message and code.
package strictjson
