package notebook

import (
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/pypkg"
)

func TestParseMetadata(t *testing.T) {
	tests := []struct {
		in, name, version string
	}{
		{"Metadata-Version: 2.1\nName: requests\nVersion: 2.31.0\nSummary: x\n", "requests", "2.31.0"},
		{"Metadata-Version: 2.1\r\nName: Foo_Bar\r\nVersion: 1.0+cu118\r\n\r\nName: body\n", "Foo_Bar", "1.0+cu118"},
		{"name:   lower  \nversion:1\n", "lower", "1"},
		{"Name: a\nName: b\nVersion: 1\nVersion: 2\n", "a", "1"},
		{"Summary: x\n  continued: Name: no\nName: yes\nVersion: 3\n", "yes", "3"},
		{"\nName: after-blank\nVersion: 1\n", "", ""},
		{"Description: long\nName: x\n", "x", ""},
		{"", "", ""},
		{"garbage without colon\nName: g\nVersion: 0.1\n", "g", "0.1"},
	}
	for _, tt := range tests {
		n, v := parseMetadata([]byte(tt.in))
		if n != tt.name || v != tt.version {
			t.Errorf("%q: %q %q, want %q %q", tt.in, n, v, tt.name, tt.version)
		}
	}
}

func TestDirectReason(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"url": "file:///home/ma-user/work/mypkg", "dir_info": {"editable": true}}`, "an editable install (pip install -e) of /home/ma-user/work/mypkg"},
		{`{"url": "file:///tmp/src", "dir_info": {}}`, "installed from the local directory /tmp/src"},
		{`{"url": "file:///tmp/x-1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=00"}}`, "installed from the local file /tmp/x-1.0-py3-none-any.whl"},
		{`{"url": "https://github.com/a/b.git", "vcs_info": {"vcs": "git", "commit_id": "abc"}}`, "installed from the git repository https://github.com/a/b.git"},
		{`{"url": "https://example.com/x.tar.gz", "archive_info": {}}`, "installed from the URL https://example.com/x.tar.gz"},
		{`{"url": "file:///a b\n--index-url x", "dir_info": {}}`, `installed from the local directory "file:///a b\n--index-url x"`},
		{`not json`, "installed from a direct reference (its direct_url.json cannot be read)"},
	}
	for _, tt := range tests {
		if got := directReason([]byte(tt.in)); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestFreeze(t *testing.T) {
	lines, refused := freeze([]dist{
		{name: "Requests", version: "2.31.0"},
		{name: "pip", version: "24.0"},
		{name: "setuptools", version: "69"},
		{name: "numpy", version: "1.26.4"},
		{name: "numpy", version: "1.26.4", where: "dup"},
		{name: "zz_top", version: "1.0+local.1"},
		{name: "mypkg", version: "0.1", direct: "an editable install (pip install -e) of /w/mypkg"},
		{name: "evil\n--index-url http://x", version: "1", where: "evil.dist-info"},
		{name: "ok", version: "1 ; rm -rf", where: "ok.dist-info"},
		{name: "", version: "", where: "empty.dist-info"},
	})
	if want := []string{"numpy==1.26.4", "Requests==2.31.0", "zz_top==1.0+local.1"}; !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if len(refused) != 4 || !strings.Contains(refused[2], "mypkg 0.1: an editable install") {
		t.Errorf("refused %q", refused)
	}
	for _, r := range refused {
		if strings.Contains(r, "\n") {
			t.Errorf("a refusal with a line break: %q", r)
		}
	}
}

func TestNormName(t *testing.T) {
	for in, want := range map[string]string{"Foo_Bar": "foo-bar", "foo.bar": "foo-bar", "FOO--__bar": "foo-bar", "x": "x", "a_": "a"} {
		if got := pypkg.Norm(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestMergeRequirements(t *testing.T) {
	frozen := []string{"numpy==1.26.4", "Requests==2.31.0", "scikit_learn==1.4.0", "torch==2.2.0"}
	own := "# mine\nnumpy>=1.20  # pinned loosely\n-r base.txt\n--index-url https://x/simple\nscikit-learn\n-e ./localpkg\n\nTorch @ https://x/torch.whl"
	out, added := mergeRequirements([]byte(own), true, frozen, "frozen by Atelier")
	if !slices.Equal(added, []string{"Requests==2.31.0"}) {
		t.Errorf("added %q", added)
	}
	if want := own + "\n# frozen by Atelier\nRequests==2.31.0\n"; string(out) != want {
		t.Errorf("out %q, want %q", out, want)
	}
	out, added = mergeRequirements(nil, false, frozen, "h")
	if string(out) != "# h\nnumpy==1.26.4\nRequests==2.31.0\nscikit_learn==1.4.0\ntorch==2.2.0\n" || len(added) != 4 {
		t.Errorf("no own file: %q %q", out, added)
	}
	if out, added = mergeRequirements([]byte("x\n"), true, nil, "h"); string(out) != "x\n" || added != nil {
		t.Errorf("nothing frozen: %q %q", out, added)
	}
	if out, _ = mergeRequirements(nil, false, nil, "h"); out != nil {
		t.Errorf("nothing at all: %q", out)
	}
	if out, _ = mergeRequirements([]byte{}, true, []string{"a==1"}, "h"); string(out) != "# h\na==1\n" {
		t.Errorf("empty own file: %q", out)
	}
}

func TestVenvPythonDir(t *testing.T) {
	for in, want := range map[string]string{
		"home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.11.2\n": "python3.11",
		"version_info = 3.12.1.final.0\n":                                          "python3.12",
		"home = /usr/bin\n":                                                        "",
		"version = 3\n":                                                            "",
	} {
		if got := venvPythonDir(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
