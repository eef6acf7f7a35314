package checksum

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// reference computes a checksum value with the standard library only, as
// a second implementation to compare with.
func reference(a Algorithm, b []byte) string {
	var d []byte
	switch a {
	case CRC32:
		d = binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))
	case CRC32C:
		d = binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	case CRC64NVME:
		d = binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64.MakeTable(0x9a6c9329ac4bc9b5)))
	case SHA1:
		s := sha1.Sum(b)
		d = s[:]
	case SHA256:
		s := sha256.Sum256(b)
		d = s[:]
	case SHA512:
		s := sha512.Sum512(b)
		d = s[:]
	}
	return base64.StdEncoding.EncodeToString(d)
}

func b64u64(v uint64) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, v))
}
func b64u32(v uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, v))
}

func TestKnownVectors(t *testing.T) {
	check := []byte("123456789")
	tests := []struct {
		a    Algorithm
		in   []byte
		want string
	}{
		// Check values of the CRC catalogue.
		{CRC32, check, b64u32(0xcbf43926)},
		{CRC32C, check, b64u32(0xe3069283)},
		{CRC64NVME, check, b64u64(0xae8b14860a799888)},
		{SHA1, check, "98O8HYCOBHMq32eZZczDTKeuNEE="},
		{SHA256, check, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="},
		// Empty input: the CRCs are 0.
		{CRC32, nil, "AAAAAA=="},
		{CRC32C, nil, "AAAAAA=="},
		{CRC64NVME, nil, "AAAAAAAAAAA="},
		{SHA256, nil, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
		// aws-sdk-go-v2's aws-chunked example.
		{SHA256, []byte("Hello world"), "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw="},
		// The AWS documentation's trailing-checksum example: 66560 bytes 'a'.
		{CRC32C, bytes.Repeat([]byte("a"), 66560), "sOO8/Q=="},
	}
	for _, tt := range tests {
		if got := tt.a.Sum(tt.in); got != tt.want {
			t.Errorf("%s(%.20q): got %s, want %s", tt.a, tt.in, got, tt.want)
		}
		if got := reference(tt.a, tt.in); got != tt.want {
			t.Errorf("reference %s(%.20q): got %s, want %s", tt.a, tt.in, got, tt.want)
		}
	}
}

func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range Algorithms() {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 2047, 2048, 4099, 1 << 16, 1<<16 + 13} {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			want := reference(a, b)
			// In one write and in random pieces.
			if got := a.Sum(b); got != want {
				t.Fatalf("%s of %d bytes: got %s, want %s", a, n, got, want)
			}
			h := a.New()
			for rest := b; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(100))
				h.Write(rest[:k])
				rest = rest[k:]
			}
			if got := Encode(h.Sum(nil)); got != want {
				t.Fatalf("%s of %d bytes in pieces: got %s, want %s", a, n, got, want)
			}
			if h.Size() != a.Size() || len(h.Sum(nil)) != a.Size() {
				t.Fatalf("%s: Size %d, hash size %d, digest %d", a, a.Size(), h.Size(), len(h.Sum(nil)))
			}
			h.Reset()
			h.Write(b)
			if got := Encode(h.Sum(nil)); got != want {
				t.Fatalf("%s after Reset: got %s, want %s", a, got, want)
			}
		}
	}
}

func TestCRC64NVMEHash64(t *testing.T) {
	h := CRC64NVME.New().(hash.Hash64)
	h.Write([]byte("123456789"))
	if h.Sum64() != 0xae8b14860a799888 {
		t.Fatalf("Sum64 = %#x", h.Sum64())
	}
	if got := h.Sum([]byte("x")); !bytes.Equal(got, append([]byte("x"), 0xae, 0x8b, 0x14, 0x86, 0x0a, 0x79, 0x98, 0x88)) {
		t.Fatalf("Sum appends %x", got)
	}
	if h.BlockSize() != 1 {
		t.Fatal("BlockSize")
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Algorithm
	}{
		{"CRC32", CRC32}, {"crc32", CRC32}, {"crc32c", CRC32C}, {"Crc32C", CRC32C},
		{"CRC64NVME", CRC64NVME}, {"crc64nvme", CRC64NVME}, {"sha1", SHA1}, {"SHA256", SHA256},
		{" sha512 ", SHA512},
	} {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "MD5", "crc", "CRC64", "SHA-256", "crc32 c", "XXHASH64", "x-amz-checksum-crc32"} {
		_, err := Parse(bad)
		wantErr(t, "Parse("+bad+")", err, CodeUnknownAlgorithm, S3InvalidRequest)
	}
}

func TestParseHeader(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Algorithm
	}{
		{"x-amz-checksum-crc32", CRC32}, {"X-Amz-Checksum-Crc32c", CRC32C},
		{"x-amz-checksum-crc64nvme", CRC64NVME}, {"X-AMZ-CHECKSUM-SHA256", SHA256},
	} {
		got, err := ParseHeader(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseHeader(%q) = %q, %v", tt.in, got, err)
		}
		if !strings.EqualFold(got.Header(), tt.in) || got.Header() != strings.ToLower(tt.in) {
			t.Errorf("%s.Header() = %q", got, got.Header())
		}
	}
	for _, bad := range []string{"", "x-amz-checksum-", "x-amz-checksum-md5", "crc32", "x-amz-crc32", "x-amz-checksum"} {
		_, err := ParseHeader(bad)
		wantErr(t, "ParseHeader("+bad+")", err, CodeUnknownAlgorithm, S3InvalidRequest)
	}
}

func TestAlgorithmMethods(t *testing.T) {
	sizes := map[Algorithm]int{CRC32: 4, CRC32C: 4, CRC64NVME: 8, SHA1: 20, SHA256: 32, SHA512: 64}
	for _, a := range Algorithms() {
		if a.Size() != sizes[a] || !a.Valid() || a.New() == nil || a.String() != string(a) {
			t.Errorf("%s: size %d valid %v", a, a.Size(), a.Valid())
		}
		back, err := ParseHeader(a.Header())
		if err != nil || back != a {
			t.Errorf("%s: header %q parses as %q, %v", a, a.Header(), back, err)
		}
	}
	bad := Algorithm("MD5")
	if bad.Valid() || bad.New() != nil || bad.Size() != 0 || bad.Sum([]byte("x")) != "" {
		t.Error("MD5 looks supported")
	}
}

func TestDecode(t *testing.T) {
	if d, err := CRC32.Decode("AAAAAA=="); err != nil || len(d) != 4 {
		t.Fatalf("Decode: %x, %v", d, err)
	}
	for _, tt := range []struct {
		a     Algorithm
		value string
		code  errs.Code
	}{
		{CRC32, "", CodeBadValue},
		{CRC32, "AAAAAA", CodeBadValue},        // no padding
		{CRC32, "AAAAAAAA", CodeBadValue},      // 6 bytes
		{CRC32, "AAAAAB==", CodeBadValue},      // non-zero padding bits
		{CRC32, "AAAA AA==", CodeBadValue},     // space
		{CRC64NVME, "AAAAAA==", CodeBadValue},  // 4 bytes
		{SHA256, "AAAAAAAAAAA=", CodeBadValue}, // 8 bytes
		{CRC32C, "_-_-_w==", CodeBadValue},     // URL alphabet
		{"MD5", "1B2M2Y8AsgTpgAmY7PhCfg==", CodeUnknownAlgorithm},
	} {
		_, err := tt.a.Decode(tt.value)
		wantErr(t, string(tt.a)+" "+tt.value, err, tt.code, S3InvalidRequest)
	}
}

func TestFromHeaders(t *testing.T) {
	h := func(kv ...string) http.Header {
		hd := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			hd.Add(kv[i], kv[i+1])
		}
		return hd
	}
	crc := CRC32C.Sum([]byte("x"))
	sha := SHA256.Sum([]byte("x"))
	good := []struct {
		name string
		h    http.Header
		a    Algorithm
		v    string
	}{
		{"none", h("Content-Type", "text/plain"), "", ""},
		{"nil", nil, "", ""},
		{"crc32c", h("X-Amz-Checksum-Crc32c", crc), CRC32C, crc},
		{"sha256 with the algorithm headers", h("x-amz-checksum-sha256", sha, "X-Amz-Checksum-Algorithm", "SHA256",
			"X-Amz-Sdk-Checksum-Algorithm", "SHA256", "X-Amz-Checksum-Type", "FULL_OBJECT", "X-Amz-Checksum-Mode", "ENABLED"), SHA256, sha},
		{"raw lower-case map key", http.Header{"x-amz-checksum-crc64nvme": {"AAAAAAAAAAA="}}, CRC64NVME, "AAAAAAAAAAA="},
	}
	for _, tt := range good {
		a, v, err := FromHeaders(tt.h)
		if err != nil || a != tt.a || v != tt.v {
			t.Errorf("%s: %q %q %v", tt.name, a, v, err)
		}
	}
	bad := []struct {
		name string
		h    http.Header
		code errs.Code
		has  string
	}{
		{"two algorithms", h("X-Amz-Checksum-Crc32c", crc, "X-Amz-Checksum-Sha256", sha), CodeManyHeaders, "x-amz-checksum-crc32c, x-amz-checksum-sha256"},
		{"one header twice", h("X-Amz-Checksum-Crc32c", crc, "X-Amz-Checksum-Crc32c", crc), CodeManyHeaders, "single"},
		{"unsupported algorithm", h("X-Amz-Checksum-Xxhash64", "AAAAAAAAAAA="), CodeUnknownAlgorithm, "x-amz-checksum-xxhash64"},
		{"malformed value", h("X-Amz-Checksum-Crc32", "not base64"), CodeBadValue, "x-amz-checksum-crc32"},
		{"value of the wrong size", h("X-Amz-Checksum-Sha1", crc), CodeBadValue, "20-byte"},
		{"empty value", h("X-Amz-Checksum-Crc32", ""), CodeBadValue, "invalid"},
	}
	for _, tt := range bad {
		_, _, err := FromHeaders(tt.h)
		wantErr(t, tt.name, err, tt.code, S3InvalidRequest)
		if err != nil && !strings.Contains(errs.UserMessage(err), tt.has) {
			t.Errorf("%s: message %q lacks %q", tt.name, errs.UserMessage(err), tt.has)
		}
	}
}

// wantErr checks an error's kind, Atelier code and S3 code.
func wantErr(t *testing.T, what string, err error, code errs.Code, s3 string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
	case errs.KindOf(err) != errs.Invalid || errs.CodeOf(err) != code || s3code.Code(err) != s3:
		t.Errorf("%s: %v (kind %v, code %s, s3 %q); want %s, %s", what, err, errs.KindOf(err), errs.CodeOf(err), s3code.Code(err), code, s3)
	case errs.HintOf(err) == "":
		t.Errorf("%s: no hint", what)
	}
}

func BenchmarkCRC64NVME(b *testing.B) {
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	b.Run("minio/crc64nvme", func(b *testing.B) {
		h := CRC64NVME.New().(hash.Hash64)
		for b.Loop() {
			h.Write(buf)
		}
	})
	b.Run("hash/crc64", func(b *testing.B) {
		h := crc64.New(crc64.MakeTable(0x9a6c9329ac4bc9b5))
		for b.Loop() {
			h.Write(buf)
		}
	})
}
