// Package bucketname owns the rule of bucket names, the one every front
// end applies: S3's DNS rules (Problem says which one a name breaks) and a
// valid name to suggest in hints (Suggest). The S3 API, the OBS service and
// the client wrap Problem in their own errors.
package bucketname
