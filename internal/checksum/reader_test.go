package checksum

import (
	"bytes"
	"crypto/md5"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/atelier-dev/atelier/internal/errs"
)

func TestReader(t *testing.T) {
	body := bytes.Repeat([]byte("atelier "), 10000)
	for _, a := range Algorithms() {
		want := reference(a, body)
		// One byte at a time, and with data and EOF together.
		for _, r := range []io.Reader{iotest.OneByteReader(bytes.NewReader(body)), iotest.DataErrReader(bytes.NewReader(body))} {
			got, err := io.ReadAll(NewReader(r, a, want))
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%s: %d bytes, %v", a, len(got), err)
			}
		}
		wrong := reference(a, body[1:])
		rd := NewReader(bytes.NewReader(body), a, wrong)
		got, err := io.ReadAll(rd)
		wantErr(t, string(a)+" mismatch", err, CodeMismatch, S3BadDigest)
		if len(got) != len(body) {
			t.Errorf("%s: read %d bytes before the mismatch", a, len(got))
		}
		msg := errs.UserMessage(err)
		for _, part := range []string{string(a), want, wrong, a.Header()} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s: message %q lacks %q", a, msg, part)
			}
		}
		if _, again := rd.Read(make([]byte, 1)); again != err {
			t.Errorf("%s: the error is not sticky: %v", a, again)
		}
	}
}

func TestReaderPassesErrorsThrough(t *testing.T) {
	boom := errors.New("boom")
	_, err := io.ReadAll(NewReader(iotest.ErrReader(boom), CRC32, "AAAAAA=="))
	if err != boom {
		t.Fatalf("got %v", err)
	}
}

func TestReaderBadArguments(t *testing.T) {
	_, err := io.ReadAll(NewReader(strings.NewReader("x"), "MD5", "AAAAAA=="))
	wantErr(t, "MD5", err, CodeUnknownAlgorithm, S3InvalidRequest)
	_, err = io.ReadAll(NewReader(strings.NewReader("x"), CRC32, "AAAA"))
	wantErr(t, "bad value", err, CodeBadValue, S3InvalidRequest)
}

func TestHasher(t *testing.T) {
	body := []byte(strings.Repeat("0123456789", 1000))
	wantMD5 := md5.Sum(body)
	for _, a := range append(Algorithms(), "") {
		h, err := NewHasher(a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(h, iotest.HalfReader(bytes.NewReader(body))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(h.MD5(), wantMD5[:]) || h.Len() != int64(len(body)) || h.Algorithm() != a {
			t.Fatalf("%q: md5 %x len %d", a, h.MD5(), h.Len())
		}
		if a == "" {
			if h.Checksum() != "" {
				t.Fatalf("no algorithm, checksum %q", h.Checksum())
			}
			wantErr(t, "Check without algorithm", h.Check("AAAAAA=="), CodeUnknownAlgorithm, S3InvalidRequest)
			continue
		}
		want := reference(a, body)
		if h.Checksum() != want || h.Check(want) != nil {
			t.Fatalf("%s: %s, want %s", a, h.Checksum(), want)
		}
		wantErr(t, string(a)+" Check", h.Check(reference(a, nil)), CodeMismatch, S3BadDigest)
	}
	_, err := NewHasher("crc16")
	wantErr(t, "NewHasher(crc16)", err, CodeUnknownAlgorithm, S3InvalidRequest)
}
