// Package s3 is the S3 protocol front end of OBS, Atelier's object store:
// the wire format of the S3 REST API, with no storage of its own.
//
// This part of the package is the protocol layer the handlers build on:
//
//   - route.go: Route maps a request to a Target (operation, bucket, key),
//     path-style ("/bucket/key") or virtual-host-style
//     ("<bucket>.<s3_domain>"). Keys are unescaped exactly once from the path
//     as the client escaped it, so every key comes back byte for byte. S3
//     sub-resources Atelier does not offer (?object-lock, ?website, …)
//     are answered NotImplemented, naming them (docs/obs.md lists every
//     S3 operation; TestDocumentedOperations keeps the two in step). ParseCopySource, ParseRange
//     and ParsePartNumber parse the x-amz-copy-source and Range headers and
//     the partNumber parameter; Op.Action names the policy action of an
//     operation.
//   - xml.go: the XML documents of the API, with element names and order as
//     S3 sends them (responses in the namespace
//     http://s3.amazonaws.com/doc/2006-03-01/, times as
//     2006-01-02T15:04:05.000Z, ETags quoted), ParseXML (size-limited, no
//     DTDs or entities, MalformedXML errors that say what is wrong),
//     WriteXML, a Validate function per request document, and EncodeKey for
//     encoding-type=url.
//   - listxml.go: AppendXML of ListBucketResult and ListBucketResultV2, the
//     listings written by hand (the bytes xml.Marshal writes, without its
//     reflection) into a pooled buffer.
//   - errors.go: the S3 error table (ErrorCode → HTTP status and default
//     message), Error, constructors whose messages name the bucket, key,
//     principal and action involved, ToError (mapping SigV4 failures and
//     *errs.Error kinds to S3 codes) and WriteError.
//   - versioning.go: VersioningConfiguration, ListVersionsResult (its
//     <Version> and <DeleteMarker> entries in the listing's order), the
//     versionId parameter and the x-amz-version-id and
//     x-amz-delete-marker headers (also on the 404 and 405 of a delete
//     marker).
//   - post.go, postpolicy.go: browser-form uploads (POST Object):
//     ReadPostForm reads a multipart form up to its file with the fields
//     bounded (MaxPostPreData), ParsePostPolicy and PostPolicy.Check parse and
//     apply a POST policy (expiration, eq/starts-with conditions, every field
//     covered), and postObject stores the file through obs PutObject as the
//     policy's signer (sigv4.VerifyPost), the content-length-range enforced
//     while it streams.
//   - acl.go: ?acl (AccessControlPolicy with xsi:type grantees; x-amz-acl
//     and x-amz-grant-* headers read by requestACL for every write that
//     takes an ACL), ?ownershipControls, ?publicAccessBlock and
//     ?policyStatus; the rules are obs's.
//   - CORS (handlers_bucket.go, server.go): a preflight (OPTIONS) is
//     answered from the bucket's CORS rules and never authenticated, so a
//     presigned URL's query it carries grants nothing; an actual request
//     with an Origin gets the matching rule's headers before it is
//     authenticated, so that its errors carry them too.
//   - objectlock.go: ?object-lock (ObjectLockConfiguration with its
//     default retention), ?retention and ?legal-hold of a version, the
//     x-amz-object-lock-* headers of writes (requestLock) and of GET and
//     HEAD answers, x-amz-bypass-governance-retention of deletes and
//     retention changes, x-amz-bucket-object-lock-enabled of CreateBucket;
//     the rules are obs's (obs.CheckDelete, obs.CheckRetention).
//   - bucketname.go: ValidateBucketName (the rules of internal/bucketname as
//     an InvalidBucketName error that names the rule broken, with a hint
//     that suggests a corrected name).
//
// Protocol errors are *Error values; functions return them as error. A
// handler returns whatever error it gets and lets WriteError map it; it
// returns an *Error of its own (ErrNoSuchBucket, ErrAccessDenied, …) where it
// knows more than an error's kind says.
package s3
