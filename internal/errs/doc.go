// Package errs defines Atelier's error values.
//
// Every error that can reach a user is built with E(op, args...), upspin
// style: the arguments are sorted by type into the operation, a Kind (what
// went wrong, which decides the HTTP status), a stable Code such as
// "ATL.IAM.0002", a human message, a Hint (what to do about it) and the
// underlying error. Kinds travel through wrapping: Is(err, NotFound) looks at
// the outermost *Error that has a kind.
//
// The tables that map a Kind to an HTTP status live here so every front end
// answers the same way.
package errs
