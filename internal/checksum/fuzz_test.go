package checksum

import (
	"hash"
	"net/http"
	"testing"

	"github.com/atelier-dev/atelier/internal/s3code"
)

func FuzzFromHeaders(f *testing.F) {
	f.Add("X-Amz-Checksum-Crc32", "AAAAAA==", "", "")
	f.Add("x-amz-checksum-sha256", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "X-Amz-Checksum-Algorithm", "SHA256")
	f.Add("X-Amz-Checksum-Crc64nvme", "AAAAAAAAAAA=", "X-Amz-Checksum-Crc32c", "AAAAAA==")
	f.Add("X-Amz-Checksum-", "=", "x-amz-checksum-crc32", "AAAAAB==")
	f.Add("X-Amz-Checksum-Md5", "1B2M2Y8AsgTpgAmY7PhCfg==", "Content-Md5", "1B2M2Y8AsgTpgAmY7PhCfg==")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		h := http.Header{}
		h[n1] = append(h[n1], v1)
		if n2 != "" {
			h[n2] = append(h[n2], v2)
		}
		a, v, err := FromHeaders(h)
		if err != nil {
			if s3code.Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if a == "" {
			if v != "" {
				t.Fatalf("value %q without algorithm", v)
			}
			return
		}
		d, err := a.Decode(v)
		if err != nil || Encode(d) != v {
			t.Fatalf("accepted %s value %q that does not round-trip: %v", a, v, err)
		}
		if got, err := Parse(string(a)); err != nil || got != a {
			t.Fatalf("algorithm %q does not parse", a)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"crc32", "CRC32C", "crc64nvme", "sha1", "sha256", "SHA512", "md5", "", "x-amz-checksum-crc32"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := Parse(s); err == nil && (!a.Valid() || a.New() == nil) {
			t.Fatalf("Parse(%q) = invalid %q", s, a)
		}
		if a, err := ParseHeader(s); err == nil {
			if back, err := ParseHeader(a.Header()); err != nil || back != a {
				t.Fatalf("ParseHeader(%q) = %q does not round-trip", s, a)
			}
		}
	})
}

func FuzzCRC64NVME(f *testing.F) {
	f.Add([]byte("123456789"), uint8(3))
	f.Add(make([]byte, 100), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, split uint8) {
		k := min(int(split), len(b))
		h := CRC64NVME.New().(hash.Hash64)
		h.Write(b[:k])
		h.Write(b[k:])
		if got, want := Encode(h.Sum(nil)), reference(CRC64NVME, b); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}
