package obsclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// checkpointVersion is the format of checkpoint files.
const checkpointVersion = 1

// checkpointEvery is how often, at most, a checkpoint is rewritten while
// parts complete; it is also written when an upload starts and when it
// fails.
const checkpointEvery = time.Second

// checkpoint is the resumable state of one multipart upload, kept as JSON
// in a file named by the hash of the source's absolute path and the
// destination URL. With no directory it is kept in memory only.
type checkpoint struct {
	file  string // "" when resuming is disabled
	mu    sync.Mutex
	saved time.Time
	warn  func(string)
	data  checkpointData
}

// checkpointData is what a checkpoint file holds.
type checkpointData struct {
	Version  int              `json:"version"`
	Source   string           `json:"source"`   // absolute local path
	Dest     string           `json:"dest"`     // obs://bucket/key
	Size     int64            `json:"size"`     // of the source when the upload started
	MtimeNs  int64            `json:"mtime_ns"` // of the source when the upload started
	PartSize int64            `json:"part_size"`
	UploadID string           `json:"upload_id"`
	Parts    []checkpointPart `json:"parts"` // known to be uploaded
	Created  int64            `json:"create_time"`
}

// checkpointPart is an uploaded part.
type checkpointPart struct {
	Number int    `json:"number"`
	ETag   string `json:"etag"`
	MD5    string `json:"md5"` // hex MD5 of the local bytes; "" when unknown
	Size   int64  `json:"size"`
}

// checkpointFile is where the checkpoint of uploading source to dest lives
// in dir.
func checkpointFile(dir, source, dest string) string {
	h := sha256.Sum256([]byte(source + "\x00" + dest))
	return filepath.Join(dir, hex.EncodeToString(h[:16])+".json")
}

// loadCheckpoint reads the checkpoint of uploading source to dest from dir;
// found is false when there is none (or it cannot be read, which is
// reported through warn and treated the same).
func loadCheckpoint(dir, source, dest string, warn func(string)) (cp *checkpoint, found bool) {
	cp = &checkpoint{warn: warn}
	if dir == "" {
		return cp, false
	}
	cp.file = checkpointFile(dir, source, dest)
	b, err := os.ReadFile(cp.file)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, false
	}
	if err != nil {
		warn(fmt.Sprintf("ignoring checkpoint %s: %s", cp.file, errText(err)))
		return cp, false
	}
	var d checkpointData
	if err := json.Unmarshal(b, &d); err != nil || d.Version != checkpointVersion || d.Source != source || d.Dest != dest || d.UploadID == "" {
		warn(fmt.Sprintf("ignoring checkpoint %s: not a checkpoint of this upload", cp.file))
		return cp, false
	}
	cp.data = d
	return cp, true
}

// matches reports whether the checkpoint is of the file as it is now.
func (cp *checkpoint) matches(size int64, mtime time.Time) bool {
	return cp.data.Size == size && cp.data.MtimeNs == mtime.UnixNano()
}

// start records a new upload and writes the checkpoint.
func (cp *checkpoint) start(d checkpointData) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	d.Version = checkpointVersion
	d.Created = time.Now().UnixMilli()
	cp.data = d
	cp.saveLocked()
}

// keep sets the parts known to be uploaded.
func (cp *checkpoint) keep(parts []checkpointPart) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.data.Parts = parts
}

// add records an uploaded part, rewriting the file at most every
// checkpointEvery.
func (cp *checkpoint) add(p checkpointPart) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.data.Parts = append(cp.data.Parts, p)
	if time.Since(cp.saved) >= checkpointEvery {
		cp.saveLocked()
	}
}

// parts are the recorded parts, by number.
func (cp *checkpoint) parts() []checkpointPart {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	ps := slices.Clone(cp.data.Parts)
	slices.SortFunc(ps, func(a, b checkpointPart) int { return a.Number - b.Number })
	return ps
}

// save writes the checkpoint now.
func (cp *checkpoint) save() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.saveLocked()
}

// saveLocked writes the file atomically (mode 0600 in a 0700 directory); a
// failure is reported once through warn and only costs the ability to
// resume.
func (cp *checkpoint) saveLocked() {
	cp.saved = time.Now()
	if cp.file == "" {
		return
	}
	err := writeCheckpoint(cp.file, cp.data)
	if err != nil {
		cp.warn(fmt.Sprintf("cannot save checkpoint %s (this upload will not resume if interrupted): %s", cp.file, errText(err)))
		cp.file = ""
	}
}

func writeCheckpoint(file string, d checkpointData) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".checkpoint-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// resumable reports whether the checkpoint is kept in a file, so a later
// run can resume its upload.
func (cp *checkpoint) resumable() bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.file != ""
}

// remove deletes the checkpoint file.
func (cp *checkpoint) remove() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.file != "" {
		if err := os.Remove(cp.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			cp.warn(fmt.Sprintf("cannot delete checkpoint %s: %s", cp.file, errText(err)))
		}
	}
}
