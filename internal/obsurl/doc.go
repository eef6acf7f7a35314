// Package obsurl owns how an OBS location is written: obs://BUCKET/KEY,
// or s3://BUCKET/KEY for the same place (schemes in any case), and, in
// the REST API, ModelArts' /BUCKET/KEY. Parse reads one (the bucket
// checked by internal/bucketname, the key kept as written), Format writes
// the canonical obs:// form, and HasScheme tells a location from a local
// path. Training jobs, the model registry and the CLI's transfers use it.
package obsurl
