package s3

import (
	"fmt"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// TestOBSCodesKnown checks that every S3 error code the obs service can
// answer is in the front end's table, with the same status.
func TestOBSCodesKnown(t *testing.T) {
	seen := 0
	for n := 1; n <= 99; n++ {
		code := errs.Code(fmt.Sprintf("ATL.OBS.%04d", n))
		s3code, status, ok := obs.S3Error(errs.E("test", code, "x"))
		if !ok {
			continue
		}
		seen++
		if !ErrorCode(s3code).Known() {
			t.Errorf("%s maps to %s, which the S3 error table lacks", code, s3code)
		} else if ErrorCode(s3code).Status() != status {
			t.Errorf("%s: obs says %d, the S3 table %d for %s", code, status, ErrorCode(s3code).Status(), s3code)
		}
	}
	if seen < 40 {
		t.Fatalf("only %d ATL.OBS codes map to S3 errors; is the scan broken?", seen)
	}
}
