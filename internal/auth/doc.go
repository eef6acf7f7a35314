// Package auth is Atelier's identity and access management: users, access
// keys, API tokens, temporary credentials, policies, and the authorization
// decision every front end (REST, S3, gateway) asks before it acts.
//
// Secrets never leave the package in clear except in the response that
// created them: secret keys are sealed with AES-256-GCM under the master key
// in <data-dir>/master.key, tokens and session tokens are stored as SHA-256
// hashes.
//
// The decision itself is the pure function Decide: an explicit Deny in any
// attached policy wins; a session policy (temporary credentials) must also
// allow the request; then the admin and the owner of a resource are allowed;
// otherwise an Allow from an attached policy is needed. List is the one
// authorization of every list of platform resources: it refuses a list an
// explicit Deny or a session policy refuses, and keeps only the records a
// get would be allowed, so a new resource's list cannot forget it; it takes
// the page the API asked for (api.ListOptions) and pages the store with it.
//
// The IAM operations the REST API serves (users, access keys, tokens,
// policies, whoami) take and answer the wire types of package api; the
// records of the metadata store are turned into them in this package
// (wire.go), so the REST layer never sees a record. Sub-packages: policy
// (documents, parsing, evaluation) and sigv4 (AWS Signature V4).
package auth
