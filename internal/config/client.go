package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/errs"
)

// ClientConfig is what the CLI and the Go client need to reach a server: the
// REST and S3 endpoints and an access key pair. It is stored as YAML (by
// default in ~/.atelier/config.yaml); the server writes one for its admin
// user as <data-dir>/admin.yaml.
type ClientConfig struct {
	Endpoint   string `json:"endpoint"`
	S3Endpoint string `json:"s3_endpoint"`
	AccessKey  string `json:"access_key"`
	SecretKey  string `json:"secret_key"`
}

// Environment variables read by ClientConfigPath and LoadClientConfig.
const (
	ClientEnvConfig     = "ATELIER_CONFIG"
	ClientEnvEndpoint   = "ATELIER_ENDPOINT"
	ClientEnvS3Endpoint = "ATELIER_S3_ENDPOINT"
	ClientEnvAccessKey  = "ATELIER_ACCESS_KEY"
	ClientEnvSecretKey  = "ATELIER_SECRET_KEY"
)

// Error codes of client configuration problems.
const (
	ClientCodeMissing errs.Code = "ATL.CFG.0101" // file absent and required values unset
	ClientCodeSyntax  errs.Code = "ATL.CFG.0102" // not YAML, unknown key, wrong type
	ClientCodeInvalid errs.Code = "ATL.CFG.0103" // a value is malformed or a required one is empty
	ClientCodeIO      errs.Code = "ATL.CFG.0104" // the file cannot be read or written
)

// clientHint is the advice attached to every client configuration error.
const clientHint errs.Hint = "run `atelier configure` or set ATELIER_CONFIG " +
	"(or ATELIER_ENDPOINT, ATELIER_ACCESS_KEY and ATELIER_SECRET_KEY)"

// clientKeys are the keys a client config file may hold, in file order.
func clientKeys() []string {
	return []string{"endpoint", "s3_endpoint", "access_key", "secret_key"}
}

// ClientConfigPath is where the client config lives: $ATELIER_CONFIG when set,
// else ~/.atelier/config.yaml under home.
func ClientConfigPath(env func(string) string, home string) string {
	if p := env(ClientEnvConfig); p != "" {
		return p
	}
	return filepath.Join(home, ".atelier", "config.yaml")
}

// LoadClientConfig reads the client config at path, applies the ATELIER_*
// environment overrides and validates the result. A missing file is not an
// error when the environment supplies the endpoint and the key pair.
func LoadClientConfig(path string, env func(string) string) (*ClientConfig, error) {
	const op errs.Op = "config.LoadClientConfig"
	c, err := ReadClientConfigFile(path)
	missing := errs.Is(err, errs.NotFound)
	switch {
	case missing:
		c = &ClientConfig{}
	case err != nil:
		return nil, err
	}
	c.applyEnv(env)
	if missing && !c.complete() {
		return nil, errs.E(op, errs.NotFound, ClientCodeMissing, clientHint,
			fmt.Sprintf("no client config: %s does not exist", path))
	}
	if err := c.Validate(); err != nil {
		source := "client config " + path
		if missing {
			source = "client config from the environment"
		}
		return nil, errs.E(op, source, err)
	}
	return c, nil
}

// ReadClientConfigFile parses the client config file at path strictly
// (unknown keys and duplicate keys are errors) without applying the
// environment and without validating the values. A missing file is an error
// of kind errs.NotFound.
func ReadClientConfigFile(path string) (*ClientConfig, error) {
	const op errs.Op = "config.ReadClientConfigFile"
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.E(op, errs.NotFound, ClientCodeMissing, clientHint,
			fmt.Sprintf("client config %s does not exist", path))
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, ClientCodeIO,
			fmt.Sprintf("cannot read client config: %v", err))
	}
	c, err := ParseClientConfig(b)
	if err != nil {
		return nil, errs.E(op, fmt.Sprintf("client config %s", path), err)
	}
	return c, nil
}

// ParseClientConfig decodes a client config document (YAML or JSON). Unknown
// keys are rejected by name; every value must be a string.
func ParseClientConfig(b []byte) (*ClientConfig, error) {
	const op errs.Op = "config.ParseClientConfig"
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, ClientCodeSyntax, clientHint,
			fmt.Sprintf("not valid YAML: %v", err))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(j, &fields); err != nil {
		return nil, errs.E(op, errs.Invalid, ClientCodeSyntax, clientHint,
			"must be a mapping of "+strings.Join(clientKeys(), ", "))
	}
	if unknown := clientUnknownKeys(fields); len(unknown) > 0 {
		return nil, errs.E(op, errs.Invalid, ClientCodeSyntax, clientHint,
			fmt.Sprintf("unknown key%s %s (known keys: %s)", clientPlural(len(unknown)),
				strings.Join(unknown, ", "), strings.Join(clientKeys(), ", ")))
	}
	c := &ClientConfig{}
	for key, dst := range c.fields() {
		raw, ok := fields[key]
		if !ok || bytes.Equal(raw, []byte("null")) {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return nil, errs.E(op, errs.Invalid, ClientCodeSyntax, clientHint,
				fmt.Sprintf("key %q must be a string", key))
		}
	}
	return c, nil
}

// clientUnknownKeys lists, sorted and quoted, the keys of fields that are not
// client config keys.
func clientUnknownKeys(fields map[string]json.RawMessage) []string {
	var out []string
	for k := range fields {
		if !slices.Contains(clientKeys(), k) {
			out = append(out, fmt.Sprintf("%q", k))
		}
	}
	sort.Strings(out)
	return out
}

// clientPlural is "s" unless n is 1.
func clientPlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fields maps each file key to the field it fills.
func (c *ClientConfig) fields() map[string]*string {
	return map[string]*string{
		"endpoint":    &c.Endpoint,
		"s3_endpoint": &c.S3Endpoint,
		"access_key":  &c.AccessKey,
		"secret_key":  &c.SecretKey,
	}
}

// applyEnv overrides fields with the non-empty ATELIER_* variables.
func (c *ClientConfig) applyEnv(env func(string) string) {
	for name, dst := range map[string]*string{
		ClientEnvEndpoint:   &c.Endpoint,
		ClientEnvS3Endpoint: &c.S3Endpoint,
		ClientEnvAccessKey:  &c.AccessKey,
		ClientEnvSecretKey:  &c.SecretKey,
	} {
		if v := strings.TrimSpace(env(name)); v != "" {
			*dst = v
		}
	}
}

// complete reports whether every required value is set.
func (c *ClientConfig) complete() bool {
	return c.Endpoint != "" && c.AccessKey != "" && c.SecretKey != ""
}

// Missing lists the file keys of the required values that are empty.
func (c *ClientConfig) Missing() []string {
	var out []string
	for _, kv := range []struct{ key, val string }{
		{"endpoint", c.Endpoint}, {"access_key", c.AccessKey}, {"secret_key", c.SecretKey},
	} {
		if strings.TrimSpace(kv.val) == "" {
			out = append(out, kv.key)
		}
	}
	return out
}

// Validate checks that the endpoint (and the S3 endpoint, when set) is an
// http(s) URL and that the key pair is present.
func (c *ClientConfig) Validate() error {
	const op errs.Op = "config.ClientConfig.Validate"
	if m := c.Missing(); len(m) > 0 {
		return errs.E(op, errs.Invalid, ClientCodeInvalid, clientHint,
			"missing "+strings.Join(m, ", "))
	}
	if err := ClientValidateURL("endpoint", c.Endpoint); err != nil {
		return errs.E(op, err)
	}
	if c.S3Endpoint != "" {
		if err := ClientValidateURL("s3_endpoint", c.S3Endpoint); err != nil {
			return errs.E(op, err)
		}
	}
	return nil
}

// ClientValidateURL checks that v is an absolute http or https URL with a
// host; key names the value in the error.
func ClientValidateURL(key, v string) error {
	const op errs.Op = "config.ClientValidateURL"
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errs.E(op, errs.Invalid, ClientCodeInvalid,
			errs.Hint("write it as http://HOST:PORT, e.g. http://127.0.0.1:8080"),
			fmt.Sprintf("%s %q is not an http(s) URL", key, v))
	}
	return nil
}

// WriteClientConfig writes c as YAML to path, atomically (a temporary file in
// the same directory, then a rename) and with mode 0600. A missing directory
// is created with mode 0700.
func WriteClientConfig(path string, c *ClientConfig) error {
	const op errs.Op = "config.WriteClientConfig"
	b, err := yaml.Marshal(c)
	if err != nil {
		return errs.E(op, errs.Internal, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.E(op, errs.IO, ClientCodeIO, fmt.Sprintf("cannot create %s: %v", dir, err))
	}
	if err := clientWriteFileAtomic(path, b, 0o600); err != nil {
		return errs.E(op, errs.IO, ClientCodeIO, fmt.Sprintf("cannot write %s: %v", path, err))
	}
	return nil
}

// clientWriteFileAtomic writes b to a temporary file next to path, syncs it, sets
// perm and renames it over path.
func clientWriteFileAtomic(path string, b []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		_ = f.Close()
		return err
	}
	if _, err = f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
