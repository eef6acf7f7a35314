package notebook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/pypkg"
	"github.com/atelier-dev/atelier/internal/text"
)

// What a snapshot freezes: the packages installed into the notebook's
// venv (--system-site-packages over the engine, so exactly what %pip
// installed; the engine's own packages are the job's too), read from
// their metadata on the volume — nothing of the volume is ever run.
// Like `pip freeze`, pip, setuptools, wheel and distribute are left out.

// dist is one package installed in the venv.
type dist struct {
	name, version string
	where         string // its metadata dir or file, relative to site-packages
	// direct says why it cannot be reinstalled from a package index
	// ("" when it can).
	direct string
}

// pipFreezeSkips are the packages `pip freeze` leaves out.
var pipFreezeSkips = map[string]bool{"pip": true, "setuptools": true, "wheel": true, "distribute": true}

// parseMetadata reads Name and Version from the headers of a METADATA
// or PKG-INFO file (RFC 822 style, up to the first blank line).
func parseMetadata(b []byte) (name, version string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			break // the body (the long description) follows
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation of a header
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			if name == "" {
				name = v
			}
		case "version":
			if version == "" {
				version = v
			}
		}
	}
	return name, version
}

// directURL is the part of a PEP 610 direct_url.json a snapshot reads.
type directURL struct {
	URL     string `json:"url"`
	DirInfo *struct {
		Editable bool `json:"editable"`
	} `json:"dir_info"`
	VCSInfo *struct {
		VCS string `json:"vcs"`
	} `json:"vcs_info"`
	ArchiveInfo *struct{} `json:"archive_info"`
}

// directReason says why a package with this direct_url.json cannot be
// reinstalled from a package index. pip writes the file only for a
// package installed from a direct reference (a local dir or file, a VCS
// repository, a URL), never for one from an index, so there is always
// a reason.
func directReason(b []byte) string {
	var d directURL
	if err := json.Unmarshal(b, &d); err != nil {
		return "installed from a direct reference (its direct_url.json cannot be read)"
	}
	where := show(d.URL)
	if u, err := url.Parse(d.URL); err == nil && u.Scheme == "file" {
		where = show(u.Path)
	}
	switch {
	case d.DirInfo != nil && d.DirInfo.Editable:
		return "an editable install (pip install -e) of " + where
	case d.DirInfo != nil:
		return "installed from the local directory " + where
	case d.VCSInfo != nil:
		return fmt.Sprintf("installed from the %s repository %s", show(d.VCSInfo.VCS), where)
	case strings.HasPrefix(d.URL, "file:"):
		return "installed from the local file " + where
	default:
		return "installed from the URL " + where
	}
}

// show is s as it goes into a message: clipped, and quoted when it holds
// anything but printable characters and no quotes or spaces.
func show(s string) string {
	s = text.Clip(s, 200)
	for _, r := range s {
		if r == utf8.RuneError || r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// freeze makes the requirement lines (name==version, sorted by
// normalised name) of the venv's packages and lists those that cannot
// be reinstalled from an index, each with why.
func freeze(ds []dist) (lines, refused []string) {
	seen := map[string]bool{}
	slices.SortFunc(ds, func(a, b dist) int { return strings.Compare(pypkg.Norm(a.name), pypkg.Norm(b.name)) })
	for _, d := range ds {
		n := pypkg.Norm(d.name)
		switch {
		case d.direct != "":
			refused = append(refused, fmt.Sprintf("%s %s: %s", show(d.name), show(d.version), d.direct))
			continue
		case !pypkg.ValidName(d.name) || !pypkg.ValidVersion(d.version):
			refused = append(refused, fmt.Sprintf("%s: its metadata has no valid name and version (name %s, version %s)",
				show(d.where), show(d.name), show(d.version)))
			continue
		case pipFreezeSkips[n] || seen[n]:
			continue
		}
		seen[n] = true
		lines = append(lines, d.name+"=="+d.version)
	}
	return lines, refused
}

// requirementNames are the normalised names of the packages a
// requirements.txt names: lines that are not comments, options (-r, -e,
// --index-url …) or blank.
func requirementNames(b []byte) map[string]bool {
	names := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "-") {
			continue
		}
		if m := pypkg.LeadingName(line); m != "" {
			names[pypkg.Norm(m)] = true
		}
	}
	return names
}

// mergeRequirements is the snapshot's requirements.txt: the work dir's
// own (kept as written) followed by the frozen lines for the packages it
// does not name, under a comment; added are those lines. A work dir
// without requirements.txt (have false) gets the frozen lines alone;
// nothing to write gives nil.
func mergeRequirements(own []byte, have bool, frozen []string, header string) (out []byte, added []string) {
	named := map[string]bool{}
	if have {
		named = requirementNames(own)
	}
	for _, l := range frozen {
		name, _, _ := strings.Cut(l, "==")
		if !named[pypkg.Norm(name)] {
			added = append(added, l)
		}
	}
	if len(added) == 0 {
		if have {
			return own, nil
		}
		return nil, nil
	}
	var b bytes.Buffer
	if have && len(own) > 0 {
		b.Write(own)
		if own[len(own)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	b.WriteString("# " + header + "\n")
	for _, l := range added {
		b.WriteString(l + "\n")
	}
	return b.Bytes(), added
}
