package s3

import (
	"fmt"

	"github.com/atelier-dev/atelier/internal/bucketname"
)

// ValidateBucketName checks a bucket name by S3's DNS rules
// (internal/bucketname). The InvalidBucketName error names the rule broken
// and its hint suggests a valid name when one can be made.
func ValidateBucketName(name string) error {
	problem := bucketname.Problem(name)
	if problem == "" {
		return nil
	}
	return &Error{
		Code:    InvalidBucketName,
		Bucket:  name,
		Message: fmt.Sprintf("the bucket name %q is not valid: %s", name, problem),
		Hint:    bucketname.Hint(name),
	}
}
