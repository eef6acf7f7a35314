package obsclient_test

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in      string
		want    obsclient.Location
		dir     bool
		str     string
		wantErr string
	}{
		{in: "obs://b1k/key.txt", want: obsclient.Location{Bucket: "b1k", Key: "key.txt"}, str: "obs://b1k/key.txt"},
		{in: "s3://b1k/key.txt", want: obsclient.Location{Bucket: "b1k", Key: "key.txt"}, str: "obs://b1k/key.txt"},
		{in: "OBS://b1k/a/b/", want: obsclient.Location{Bucket: "b1k", Key: "a/b/"}, dir: true, str: "obs://b1k/a/b/"},
		{in: "obs://b1k", want: obsclient.Location{Bucket: "b1k"}, dir: true, str: "obs://b1k/"},
		{in: "obs://b1k/", want: obsclient.Location{Bucket: "b1k"}, dir: true, str: "obs://b1k/"},
		{in: "obs://b1k/ds", want: obsclient.Location{Bucket: "b1k", Key: "ds"}, str: "obs://b1k/ds"},
		{in: "obs://b1k/中文 目录/x", want: obsclient.Location{Bucket: "b1k", Key: "中文 目录/x"}, str: "obs://b1k/中文 目录/x"},
		{in: "obs://b1k/a//b", want: obsclient.Location{Bucket: "b1k", Key: "a//b"}, str: "obs://b1k/a//b"},
		{in: "data/train", want: obsclient.Location{Path: "data/train"}, str: "data/train"},
		{in: "data/train/", want: obsclient.Location{Path: "data/train/"}, dir: true, str: "data/train/"},
		{in: ".", want: obsclient.Location{Path: "."}, dir: true, str: "."},
		{in: "../x/..", want: obsclient.Location{Path: "../x/.."}, dir: true, str: "../x/.."},
		{in: "/abs/file", want: obsclient.Location{Path: "/abs/file"}, str: "/abs/file"},
		{in: "dir/with://colon", want: obsclient.Location{Path: "dir/with://colon"}, str: "dir/with://colon"},
		{in: "", wantErr: "empty path"},
		{in: "obs://", wantErr: "names no bucket"},
		{in: "obs:///key", wantErr: "names no bucket"},
		{in: "obs:/b1k/key", wantErr: "malformed OBS URL"},
		{in: "s3:b1k", wantErr: "malformed OBS URL"},
		{in: "gs://b1k/key", wantErr: `unsupported URL scheme "gs"`},
		{in: "obs://My_Bucket/k", wantErr: "upper-case letter"},
		{in: "obs://my_bucket/k", wantErr: "'_'"},
		{in: "obs://ab/k", wantErr: "at least 3"},
		{in: "obs://-abc/k", wantErr: "starts with '-'"},
		{in: "obs://a..b/k", wantErr: "two adjacent periods"},
		{in: "obs://192.168.1.1/k", wantErr: "IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := obsclient.ParseLocation(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(errs.UserMessage(err), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if !errs.Is(err, errs.Invalid) {
					t.Errorf("kind %v, want invalid", errs.KindOf(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.DirSyntax() != tt.dir {
				t.Errorf("DirSyntax %v, want %v", got.DirSyntax(), tt.dir)
			}
			if got.String() != tt.str {
				t.Errorf("String %q, want %q", got.String(), tt.str)
			}
		})
	}
}

func TestLocationJoin(t *testing.T) {
	tests := []struct {
		loc  obsclient.Location
		rel  string
		want string
	}{
		{obsclient.Location{Bucket: "bkt"}, "a/b", "obs://bkt/a/b"},
		{obsclient.Location{Bucket: "bkt", Key: "ds"}, "cat/1.jpg", "obs://bkt/ds/cat/1.jpg"},
		{obsclient.Location{Bucket: "bkt", Key: "ds/"}, "cat/1.jpg", "obs://bkt/ds/cat/1.jpg"},
		{obsclient.Location{Path: "out"}, "cat/1.jpg", "out/cat/1.jpg"},
		{obsclient.Location{Path: "out/"}, "x", "out/x"},
	}
	for _, tt := range tests {
		if got := tt.loc.Join(tt.rel).String(); got != tt.want {
			t.Errorf("%v.Join(%q) = %q, want %q", tt.loc, tt.rel, got, tt.want)
		}
	}
}
