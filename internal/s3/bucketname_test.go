package s3

import (
	"strings"
	"testing"
)

// TestValidateBucketName: the S3 error of an invalid name (the rules are
// internal/bucketname's).
func TestValidateBucketName(t *testing.T) {
	if err := ValidateBucketName("my-bucket"); err != nil {
		t.Fatalf("valid name: %v", err)
	}
	err := ValidateBucketName("My_Bucket")
	e, ok := err.(*Error)
	if !ok || e.Code != InvalidBucketName || e.Status() != 400 || e.Bucket != "My_Bucket" ||
		!strings.Contains(e.Message, "upper-case letter 'M'") || !strings.Contains(e.Hint, `try "my-bucket"`) {
		t.Fatalf("ValidateBucketName = %#v", err)
	}
}
